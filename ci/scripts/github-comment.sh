#!/usr/bin/env bash
# Posts a report as ONE pull-request comment through the GitHub REST API, updated in place on every push: the
# comment carries a hidden marker (<!-- gate-report -->, or <!-- gate-report:KEY --> with GATE_COMMENT_KEY when
# several gate jobs comment on one pull request); the PR's comments are read (every page) and the one holding the
# marker is PATCHed, otherwise a new one is POSTed.
#   $1 the Markdown file (default gate-report/report.md)
#   GITHUB_TOKEN, GITHUB_REPOSITORY, GATE_PR_NUMBER; GITHUB_API_URL is set by Actions (api.github.com by default)
# Commenting is best effort: without a token, or when the API refuses (a pull request from a fork gets a read-only
# token: 403), it prints a ::warning:: and exits 0, so the verdict step decides the job alone; the step summary and
# the artifact still carry the report. Only a missing report file (a broken workflow) exits 1.
set -euo pipefail
body_file="${1:-gate-report/report.md}"
if [ -z "${GITHUB_TOKEN:-}" ]; then
  echo "::warning::no GITHUB_TOKEN with pull-requests: write; not commenting (the report is in the step summary)"
  exit 0
fi
: "${GITHUB_REPOSITORY:?}" "${GATE_PR_NUMBER:?set GATE_PR_NUMBER to the pull request number}"
if [ ! -f "$body_file" ]; then
  echo "github-comment: $body_file not found" >&2
  exit 1
fi
exec python3 - "$body_file" <<'PY'
import json
import os
import re
import sys
import urllib.error
import urllib.request

key = os.environ.get("GATE_COMMENT_KEY", "").strip()
marker = f"<!-- gate-report:{key} -->" if key else "<!-- gate-report -->"
api = os.environ.get("GITHUB_API_URL") or "https://api.github.com"
repo, pr = os.environ["GITHUB_REPOSITORY"], os.environ["GATE_PR_NUMBER"]
with open(sys.argv[1], encoding="utf-8") as fh:
    body = f"{marker}\n{fh.read()}"
headers = {"Authorization": f"Bearer {os.environ['GITHUB_TOKEN']}", "Accept": "application/vnd.github+json",
           "X-GitHub-Api-Version": "2022-11-28", "Content-Type": "application/json"}


def call(method, url, payload=None):
    data = None if payload is None else json.dumps(payload).encode()
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.load(resp), resp.headers.get("Link", "")


def warn(what, exc):
    if isinstance(exc, urllib.error.HTTPError):
        why = f"HTTP {exc.code}" + (" (a pull request from a fork gets a read-only token)" if exc.code == 403 else "")
    else:
        why = str(getattr(exc, "reason", exc))
    print(f"::warning::could not {what} the gate report comment on #{pr}: {why}; the report is in the step summary")
    sys.exit(0)


found = None
url = f"{api}/repos/{repo}/issues/{pr}/comments?per_page=100"
try:
    for _ in range(50):  # 5,000 comments: the newest marker wins, a runaway Link chain does not loop
        page, link = call("GET", url)
        found = next((c for c in reversed(page) if marker in (c.get("body") or "")), found)
        nxt = re.search(r'<([^>]+)>;\s*rel="next"', link)
        if not nxt:
            break
        url = nxt.group(1)
except (urllib.error.URLError, OSError, ValueError) as exc:
    warn("read", exc)
try:
    if found is not None:
        call("PATCH", f"{api}/repos/{repo}/issues/comments/{found['id']}", {"body": body})
        print(f"updated the gate report comment on #{pr}")
    else:
        call("POST", f"{api}/repos/{repo}/issues/{pr}/comments", {"body": body})
        print(f"commented on #{pr}")
except (urllib.error.URLError, OSError, ValueError) as exc:
    warn("update" if found is not None else "post", exc)
PY
