#!/usr/bin/env bash
# The README's main job (see README.md "Main job").
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/python scripts/demo.py "$@"
