# Sourced by the setup scripts: `step "what" cmd ...` says what it starts, prints a line every
# REXRANK_PROGRESS_INTERVAL_S seconds (default 10, as rexrank.progress.DEFAULT_INTERVAL_S: bash cannot read it) while the command runs, and how long it took, so a long install
# in a log file or CI shows signs of life. pip's own "Location ... is ignored" warnings are dropped.
step() {
  local what=$1
  shift
  local every=${REXRANK_PROGRESS_INTERVAL_S:-10}
  local start=$SECONDS
  echo "setup: $what ..."
  # sleep's output goes nowhere: an orphaned sleep must not hold the caller's pipe open after the ticker is killed.
  ( while sleep "$every" >/dev/null 2>&1; do echo "setup:   still $what ($((SECONDS - start)) s)"; done ) &
  local ticker=$!
  local rc=0
  "$@" 2>&1 | grep -v "^WARNING: Location" || rc=${PIPESTATUS[0]}
  kill "$ticker" 2>/dev/null || true
  wait "$ticker" 2>/dev/null || true
  if [ "$rc" != 0 ]; then
    echo "setup: FAILED: $what (exit $rc)" >&2
    return "$rc"
  fi
  echo "setup: done: $what ($((SECONDS - start)) s)"
}
