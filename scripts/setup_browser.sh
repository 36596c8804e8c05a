#!/usr/bin/env bash
# Debian Chromium for the browser tests (Playwright drives /usr/bin/chromium; never `playwright install`).
set -euo pipefail
if [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "Chromium is missing: install Debian's chromium package (browser tests will fail)" >&2
  fi
fi
