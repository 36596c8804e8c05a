#!/usr/bin/env bash
# The reference virtualenv (.venv-ref): the upstream packages that parity tests compare against, on the old
# stack they need (bert-score 0.3.13 and radgraph 0.1.18 break on transformers 5; RaTEScore's medspacy needs numpy 1).
# requirements.txt: installed with their dependencies (f1chexbert 0.0.2 for SembScore/CheXbert, ...);
# requirements-nodeps.txt: installed with --no-deps (radeval 2.2.1 declares transformers>=5, but its GREEN module,
# the only part used, runs on 4.57 with what requirements.txt provides). tests/README.md lists which test uses what.
# Installs go through tests/reference/constraints.txt (written by scripts/lock.sh) unless REXRANK_UNLOCKED=1.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/steps.sh
PY=${PYTHON:-python3}
lock=(-c tests/reference/constraints.txt)
[ "${REXRANK_UNLOCKED:-0}" = "1" ] && lock=()
req=tests/reference/requirements.txt
if [ ! -x .venv-ref/bin/python ]; then
  step "creating the reference virtualenv .venv-ref" "$PY" -m venv .venv-ref
fi
stamp=.venv-ref/.rexrank-setup
nodeps=tests/reference/requirements-nodeps.txt
want=$( (cat "$req" "$nodeps" scripts/setup_ref.sh tests/reference/constraints.txt; echo "unlocked=${REXRANK_UNLOCKED:-0}") \
  | sha256sum | cut -c1-16)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  pip=(.venv-ref/bin/pip install -q --disable-pip-version-check "${lock[@]}")
  step "installing torch 2.13.0 into .venv-ref" "${pip[@]}" "torch==2.13.0"
  step "installing the reference packages (bert-score, radgraph, f1chexbert, transformers 4.x, ...) into .venv-ref" \
    "${pip[@]}" -r "$req"
  step "installing radeval 2.2.1 and pycocoevalcap 1.2 without their dependencies into .venv-ref" \
    "${pip[@]}" --no-deps -r "$nodeps"
  # crimson-score 0.2.2, the reference for the board's CRIMSON (tests/reference/crimson_score_ref.py): it requires
  # Python >= 3.12 and transformers >= 5, but its prompt, reader and formula, all the parity test calls, are pure
  # Python; the version comes from tests/reference/constraints.txt.
  step "installing crimson-score 0.2.2 (no dependencies, any Python) into .venv-ref" \
    "${pip[@]}" --no-deps --ignore-requires-python "crimson-score==0.2.2"
  .venv-ref/bin/python -c "
import nltk; nltk.download = lambda *a, **k: True  # radeval.utils fetches punkt_tab at import (unused by GREEN)
import bert_score, radgraph, transformers, numpy, f1chexbert, radeval.metrics.green_score.green, CRIMSON.utils
import pycocoevalcap.bleu.bleu, pycocoevalcap.cider.cider, pycocoevalcap.rouge.rouge, pycocoevalcap.meteor.meteor
assert transformers.__version__.startswith('4.') and numpy.__version__.startswith('1.')"
  echo "$want" > "$stamp"
fi
# RaTEScore 0.5.0 and 0.6.0 side by side, each in its own --target folder: one site-packages cannot hold two
# versions, and tests/reference/ratescore_ref.py selects one via sys.path. --no-deps: the package declares no
# usable dependencies; what it imports (torch, transformers<5, medspacy, pandas) comes from requirements.txt.
for rv in 0.5.0 0.6.0; do
  if [ ! -f ".venv-ref/ratescore-$rv/RaTEScore/scorer.py" ]; then
    step "installing RaTEScore $rv into .venv-ref/ratescore-$rv" \
      .venv-ref/bin/pip install -q --disable-pip-version-check --no-deps --target ".venv-ref/ratescore-$rv" "RaTEScore==$rv"
    test -f ".venv-ref/ratescore-$rv/RaTEScore/scorer.py"
  fi
done
