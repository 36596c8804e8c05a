#!/usr/bin/env bash
# Debian Chromium for the browser tests (Playwright drives /usr/bin/chromium; never `playwright install`), and
# axe-core (npm, one exact version) for the board pages' accessibility test, in the gitignored .browser/.
set -euo pipefail
if [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "Chromium is missing: install Debian's chromium package (browser tests will fail)" >&2
  fi
fi
# tests/test_board_pages_browser.py reads AXE_VERSION from this line and the script from .browser/node_modules (a
# missing or other version fails its tests in CI, as a missing Chromium does).
AXE_VERSION=4.14.1
cd "$(dirname "$0")/.."
if [ "$(node -p "require('./.browser/node_modules/axe-core/package.json').version" 2>/dev/null)" != "$AXE_VERSION" ]; then
  if command -v npm >/dev/null; then
    npm install --prefix .browser --no-save --no-package-lock --no-audit --no-fund --ignore-scripts \
      "axe-core@$AXE_VERSION" >/dev/null
  else
    echo "npm is missing: install Node.js to get axe-core (the board pages' accessibility test will fail)" >&2
  fi
fi
