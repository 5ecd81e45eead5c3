#!/usr/bin/env bash
# Runs `gate check --changed-since` on the datasets a pull/merge request changes.
# Always exits 0 so that the comment and artifact steps still run; the gate's exit code is kept in
# $GATE_EXIT_FILE (and in $GITHUB_OUTPUT as exit_code) for gate-verdict.sh, the last step, to fail the job with.
#   GATE_DATASET   dataset directory (or file) to guard, e.g. data/triage
#   GATE_CONTRACT  its data contract, e.g. contracts/triage.yaml
#   GATE_BASE_REF  the target branch as fetched, e.g. origin/main
#   GATE_REPORT_DIR (gate-report) · GATE_EXIT_FILE (gate-exit-code) · GATE_ARGS (extra options) · GATE_BIN (gate)
#   GATE_ALLOW_CONTRACT_CHANGE  "true" only on a maintainer's approval: passes --allow-contract-change
#   GATE_INCREMENTAL  "false" checks every row of a changed dataset here and at the base; otherwise (the default)
#     `--base` too: only the added or edited rows, duplicates and leakage against the dataset's index (built on
#     first use), one pass over the change; gate falls back to the full check where that cannot answer (a changed
#     contract, --fail-on-existing, Parquet splits) and the report says which path ran and why
# Run this script as it is on the target branch, never the pull request's copy (`git show BASE:ci/scripts/...`,
# see ci/github/dataset-gate.yml and docs/security.md): a pull request must not edit the gate that judges it.
set -uo pipefail
: "${GATE_DATASET:?set GATE_DATASET to the dataset directory to guard}"
: "${GATE_CONTRACT:?set GATE_CONTRACT to its data contract}"
: "${GATE_BASE_REF:?set GATE_BASE_REF to the target branch, e.g. origin/main}"
report_dir="${GATE_REPORT_DIR:-gate-report}"
exit_file="${GATE_EXIT_FILE:-gate-exit-code}"
err_file="$(mktemp)"
# shellcheck disable=SC2086  # GATE_BIN and GATE_ARGS are word lists on purpose
allow=()
if [ "${GATE_ALLOW_CONTRACT_CHANGE:-false}" = "true" ]; then allow=(--allow-contract-change); fi
incremental=(--base "$GATE_BASE_REF")
if [ "${GATE_INCREMENTAL:-true}" = "false" ]; then incremental=(); fi
${GATE_BIN:-gate} check "$GATE_DATASET" --contract "$GATE_CONTRACT" --changed-since "$GATE_BASE_REF" \
  ${incremental[@]+"${incremental[@]}"} --report-dir "$report_dir" ${GATE_ARGS:-} ${allow[@]+"${allow[@]}"} \
  2> >(tee "$err_file" >&2)
rc=$?
wait
if [ "$rc" -ne 0 ] && [ "$rc" -ne 100 ]; then
  # the gate could not run: the comment says so instead of showing an older report
  mkdir -p "$report_dir"
  {
    echo "## gate check: ⚠️ could not run (exit $rc)"
    echo
    echo '```'
    tail -n 5 "$err_file"
    echo '```'
  } > "$report_dir/report.md"
  if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then cat "$report_dir/report.md" >> "$GITHUB_STEP_SUMMARY"; fi
fi
rm -f "$err_file"
echo "$rc" > "$exit_file"
if [ -n "${GITHUB_OUTPUT:-}" ]; then echo "exit_code=$rc" >> "$GITHUB_OUTPUT"; fi
echo "gate exit code: $rc"
exit 0
