#!/usr/bin/env bash
# The reference virtualenv (.venv-ref): the upstream packages that parity tests compare against, on the old
# stack they need (bert-score 0.3.13 and radgraph 0.1.18 break on transformers 5; RaTEScore's medspacy needs numpy 1).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
req=tests/reference/requirements.txt
if [ ! -x .venv-ref/bin/python ]; then
  "$PY" -m venv .venv-ref
fi
stamp=.venv-ref/.rexrank-setup
want=$(cat "$req" scripts/setup_ref.sh | sha256sum | cut -c1-16)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  .venv-ref/bin/pip install -q --disable-pip-version-check "torch==2.13.0" 2>&1 | grep -v "^WARNING: Location" || true
  .venv-ref/bin/pip install -q --disable-pip-version-check -r "$req" 2>&1 | grep -v "^WARNING: Location" || true
  if [ -f tests/reference/requirements-nodeps.txt ]; then
    .venv-ref/bin/pip install -q --disable-pip-version-check --no-deps -r tests/reference/requirements-nodeps.txt 2>&1 | grep -v "^WARNING: Location" || true
  fi
  .venv-ref/bin/python -c "import bert_score, radgraph, transformers; assert transformers.__version__.startswith('4.')"
  echo "$want" > "$stamp"
fi
# RaTEScore 0.5.0 and 0.6.0 side by side, each in its own --target folder: one site-packages cannot hold two
# versions, and tests/reference/ratescore_ref.py selects one via sys.path. --no-deps: the package declares no
# usable dependencies; what it imports (torch, transformers<5, medspacy, pandas) comes from requirements.txt.
for rv in 0.5.0 0.6.0; do
  if [ ! -f ".venv-ref/ratescore-$rv/RaTEScore/scorer.py" ]; then
    .venv-ref/bin/pip install -q --disable-pip-version-check --no-deps --target ".venv-ref/ratescore-$rv" "RaTEScore==$rv" 2>&1 | grep -v "^WARNING: Location" || true
    test -f ".venv-ref/ratescore-$rv/RaTEScore/scorer.py"
  fi
done
