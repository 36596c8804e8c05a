#!/usr/bin/env bash
# Java for METEOR 1.5 (rexrank.metrics.meteor runs meteor-1.5.jar) and for the parity tests that run pycocoevalcap's
# Java PTB tokenizer and METEOR (tests/test_ptb_tokenizer.py, test_nlg.py, test_meteor.py). Debian's headless JRE.
set -euo pipefail
source "$(dirname "$0")/steps.sh"
if ! command -v java >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    step "installing Java (Debian default-jre-headless) for METEOR and pycocoevalcap's tokenizer" \
      bash -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq default-jre-headless >/dev/null'
  else
    echo "Java is missing: install a JRE 8+ (Debian: default-jre-headless); METEOR and its parity tests need it" >&2
  fi
fi
