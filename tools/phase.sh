#!/usr/bin/env bash
# Runs one phase of `make test` and prints its wall time, so the CI log shows where the budget goes
# (docs/testing.md). Usage: tools/phase.sh NAME COMMAND [ARG...]; exits with the command's exit code.
name="$1"; shift
start=$(date +%s)
"$@"
rc=$?
echo "phase ${name}: $(( $(date +%s) - start )) s wall (exit ${rc})"
exit "$rc"
