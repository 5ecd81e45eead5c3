#!/usr/bin/env bash
# The last step: fails the job with the gate's own exit code (100: the data failed the gate; 1: it could not run).
set -euo pipefail
exit_file="${GATE_EXIT_FILE:-gate-exit-code}"
if [ ! -f "$exit_file" ]; then
  echo "gate-verdict: $exit_file not found (did gate-check.sh run?)" >&2
  exit 1
fi
rc="$(cat "$exit_file")"
case "$rc" in
  0) echo "gate: PASS" ;;
  100) echo "gate: FAIL (the changed datasets do not pass their contract; see the report)" >&2 ;;
  *) echo "gate: could not run (exit $rc)" >&2 ;;
esac
exit "$rc"
