#!/usr/bin/env bash
# bubblewrap for `rexrank generate --sandbox` (the default on a private test set: the model's code runs under bwrap,
# docs/threat_model.md) and for tests/test_generate_sandbox.py. Debian's bubblewrap package.
set -euo pipefail
source "$(dirname "$0")/steps.sh"
if ! command -v bwrap >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    step "installing bubblewrap (Debian bubblewrap) for rexrank generate --sandbox" \
      bash -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null'
  else
    echo "bubblewrap is missing: install it (Debian/Ubuntu: apt-get install bubblewrap); rexrank generate --sandbox and its tests need it" >&2
  fi
fi
