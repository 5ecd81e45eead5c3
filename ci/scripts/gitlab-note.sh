#!/usr/bin/env bash
# Posts a report as a merge-request note through the GitLab REST API.
#   $1 the Markdown file (default gate-report/report.md)
#   GATE_GITLAB_TOKEN: a project access token with `api` scope (a masked CI/CD variable)
#   CI_API_V4_URL, CI_PROJECT_ID, CI_MERGE_REQUEST_IID: set by GitLab in merge request pipelines
set -euo pipefail
body_file="${1:-gate-report/report.md}"
if [ -z "${GATE_GITLAB_TOKEN:-}" ]; then
  echo "gitlab-note: GATE_GITLAB_TOKEN is not set; not commenting (the report is in the job artifacts)" >&2
  exit 0
fi
: "${CI_API_V4_URL:?}" "${CI_PROJECT_ID:?}" "${CI_MERGE_REQUEST_IID:?this job runs in merge request pipelines}"
if [ ! -f "$body_file" ]; then
  echo "gitlab-note: $body_file not found" >&2
  exit 1
fi
curl --fail-with-body -sS -X POST \
  -H "PRIVATE-TOKEN: $GATE_GITLAB_TOKEN" \
  --data-urlencode "body@$body_file" \
  "$CI_API_V4_URL/projects/$CI_PROJECT_ID/merge_requests/$CI_MERGE_REQUEST_IID/notes" > /dev/null
echo "noted on !$CI_MERGE_REQUEST_IID"
