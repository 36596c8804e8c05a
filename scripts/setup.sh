#!/usr/bin/env bash
# Create/refresh .venv with rexrank and its dev/space extras. Idempotent: a second run is fast.
# Installs go through constraints.txt (the stack the suite passed on, written by scripts/lock.sh);
# REXRANK_UNLOCKED=1 installs the newest releases the pyproject bounds allow instead.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/steps.sh
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  step "creating the virtualenv .venv" "$PY" -m venv .venv
fi
lock=(-c constraints.txt)
[ "${REXRANK_UNLOCKED:-0}" = "1" ] && lock=()
stamp=.venv/.rexrank-setup
want=$( (cat pyproject.toml scripts/setup.sh constraints.txt; echo "unlocked=${REXRANK_UNLOCKED:-0}") | sha256sum | cut -c1-16)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  pip=(.venv/bin/pip install -q --disable-pip-version-check "${lock[@]}")
  # torch first and pinned: on this platform 2.13.0 is a local CPU wheel; an unpinned torch pulls a multi-GB CUDA build.
  step "installing torch 2.13.0 (CPU build where one is local)" "${pip[@]}" "torch==2.13.0"
  step "installing rexrank with its dev, space and RaTEScore extras (transformers, gradio, spaCy, ...; a few minutes on a fresh machine)" \
    "${pip[@]}" -e ".[dev,space,ratescore]"
  # See pyproject's ratescore extra: these two declare spacy<3.8 on Python < 3.12, so they go in without their pins.
  step "installing medspacy 1.3.1 and PyRuSH 1.0.13 (RaTEScore's sentence splitter)" \
    "${pip[@]}" --no-deps "medspacy==1.3.1" "PyRuSH==1.0.13"
  .venv/bin/python -c "import rexrank, torch, transformers, gradio, medspacy, PyRuSH, playwright"
  echo "$want" > "$stamp"
  echo "setup: .venv ready ($(.venv/bin/python -c 'import rexrank; print("rexrank", rexrank.__version__)'))"
fi
