#!/usr/bin/env bash
# Posts a report as a pull-request comment through the GitHub REST API.
#   $1 the Markdown file (default gate-report/report.md)
#   GITHUB_TOKEN, GITHUB_REPOSITORY, GATE_PR_NUMBER; GITHUB_API_URL is set by Actions (api.github.com by default)
# Without a token (pull requests from forks get none with write access) it warns and skips: the step summary and
# the artifact still carry the report.
set -euo pipefail
body_file="${1:-gate-report/report.md}"
if [ -z "${GITHUB_TOKEN:-}" ]; then
  echo "::warning::no GITHUB_TOKEN with pull-requests: write; not commenting"
  exit 0
fi
: "${GITHUB_REPOSITORY:?}" "${GATE_PR_NUMBER:?set GATE_PR_NUMBER to the pull request number}"
if [ ! -f "$body_file" ]; then
  echo "github-comment: $body_file not found" >&2
  exit 1
fi
api="${GITHUB_API_URL:-https://api.github.com}"
python3 -c 'import json, sys; sys.stdout.write(json.dumps({"body": open(sys.argv[1], encoding="utf-8").read()}))' \
  "$body_file" |
  curl --fail-with-body -sS -X POST \
    -H "Authorization: Bearer $GITHUB_TOKEN" \
    -H "Accept: application/vnd.github+json" \
    -H "X-GitHub-Api-Version: 2022-11-28" \
    -H "Content-Type: application/json" \
    --data-binary @- \
    "$api/repos/$GITHUB_REPOSITORY/issues/$GATE_PR_NUMBER/comments" > /dev/null
echo "commented on #$GATE_PR_NUMBER"
