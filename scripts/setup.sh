#!/usr/bin/env bash
# Create/refresh .venv with rexrank and its dev/space extras. Idempotent: a second run is fast.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.rexrank-setup
want=$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -c1-16)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  # torch first and pinned: on this platform 2.13.0 is a local CPU wheel; an unpinned torch pulls a multi-GB CUDA build.
  .venv/bin/pip install -q --disable-pip-version-check "torch==2.13.0" 2>&1 | grep -v "^WARNING: Location" || true
  .venv/bin/pip install -q --disable-pip-version-check -e ".[dev,space,ratescore]" 2>&1 | grep -v "^WARNING: Location" || true
  # See pyproject's ratescore extra: these two declare spacy<3.8 on Python < 3.12, so they go in without their pins.
  .venv/bin/pip install -q --disable-pip-version-check --no-deps "medspacy==1.3.1" "PyRuSH==1.0.13" 2>&1 | grep -v "^WARNING: Location" || true
  .venv/bin/python -c "import rexrank, torch, transformers, gradio, medspacy, PyRuSH, playwright" 
  echo "$want" > "$stamp"
fi
