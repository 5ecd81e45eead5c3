"""Issue 18 item 11: the whole pull-request flow as a team adopting gate lives it, through the shipped composite
action (action.yml, the one `uses:` step of ci/github/dataset-gate-action.yml) and the real ci/scripts it runs, in a
scratch git repository, against a fake GitHub API on 127.0.0.1 that keeps the pull requests' comments:

base commit → a PR adding faulty rows (fails, comment created) → a fix-up push (passes, the same comment PATCHed) →
a fork PR (its read-only token gets 403 on the comment: a warning, the verdict still right) → a contract-only PR
(every dataset under the contract checked)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import CONTRACTS, ROOT, triage_row, write_jsonl
from tests.fake_github import FakeGitHub

pytestmark = pytest.mark.slow

REPO = "acme/datasets"
MARKER = "<!-- gate-report -->"
ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
WORKFLOW = yaml.safe_load((ROOT / "ci" / "github" / "dataset-gate-action.yml").read_text())
# the two checks the planted faults trip, without a database: fast enough for five pull-request runs
ARGS = "--checks contract,exact_duplicate --no-db"
_EXPR = re.compile(r"\$\{\{\s*(.+?)\s*\}\}")


def _git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.invalid", "GIT_CONFIG_GLOBAL": "/dev/null"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def _rows(n: int, start: int = 0) -> list[dict[str, Any]]:
    return [triage_row(i, f"ticket {i} about a broken widget number {i}") for i in range(start, start + n)]


def _value(expr: str, ctx: dict[str, Any]) -> Any:
    """One operand of an Actions expression: a context path, a quoted string, or always()."""
    expr = expr.strip()
    if expr == "always()":
        return True
    if expr.startswith("'") and expr.endswith("'"):
        return expr[1:-1]
    assert expr in ctx, f"action.yml uses {expr!r}, which this test does not model"
    return ctx[expr]


def _evaluate(expr: str, ctx: dict[str, Any]) -> Any:
    """The subset of GitHub's expression language action.yml uses: `a && b`, `x == 'y'`, `x != ''`, truthiness."""
    result: Any = True
    for part in expr.split("&&"):
        if m := re.fullmatch(r"\s*(.+?)\s*(==|!=)\s*(.+?)\s*", part):
            left, right = _value(m.group(1), ctx), _value(m.group(3), ctx)
            value: Any = (str(left) == str(right)) == (m.group(2) == "==")
        else:
            value = _value(part, ctx)
        result = result and value
    return result


def _expand(text: str, ctx: dict[str, Any]) -> str:
    return _EXPR.sub(lambda m: str(_evaluate(m.group(1), ctx) or ""), str(text))


def run_pr(work: Path, tmp: Path, gh: FakeGitHub, *, pr: int, token: str) -> dict[str, Any]:
    """One `pull_request` event: the workflow's `uses:` step run as the runner runs a composite action (each `run:`
    step in its own bash with the env Actions sets, `if:` evaluated, `uses:` steps and the pip install left to the
    runner: gate here is this checkout's). Returns the job's exit code, each step's output and the step summary."""
    [_, step] = WORKFLOW["jobs"]["gate"]["steps"]
    inputs = {name: str(spec.get("default", "")) for name, spec in ACTION["inputs"].items()}
    inputs.update({k: str(v) for k, v in step["with"].items()})
    inputs["args"] = ARGS
    runner_temp = tmp / f"runner-temp-{pr}-{token}"
    shutil.rmtree(runner_temp, ignore_errors=True)
    runner_temp.mkdir(parents=True)
    shutil.rmtree(work / inputs["report-dir"], ignore_errors=True)
    summary, output = runner_temp / "summary.md", runner_temp / "output"
    ctx: dict[str, Any] = {f"inputs.{k}": v for k, v in inputs.items()}
    ctx.update({"runner.temp": str(runner_temp), "github.token": token, "github.event.pull_request": True,
                "github.event.pull_request.number": str(pr)})
    ctx.update({f"inputs.{k}": _expand(v, ctx) for k, v in inputs.items()})  # defaults such as ${{ github.token }}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "GATE_", "CI_", "RUNNER_"))}
    env.update({"CI": "true", "GITHUB_ACTIONS": "true", "GITHUB_WORKSPACE": str(work), "GITHUB_REPOSITORY": REPO,
                "GITHUB_API_URL": gh.url, "GITHUB_EVENT_NAME": "pull_request", "GITHUB_BASE_REF": "main",
                "GITHUB_STEP_SUMMARY": str(summary), "GITHUB_ACTION_PATH": str(ROOT), "RUNNER_TEMP": str(runner_temp),
                "GIT_CONFIG_GLOBAL": "/dev/null", "GATE_BIN": f"{sys.executable} -m gate"})
    outputs: dict[str, str] = {}
    job = {"rc": 0, "steps": {}}
    for s in ACTION["runs"]["steps"]:
        if not _evaluate(s.get("if", "success()").replace("success()", "always()"), ctx) or "uses" in s:
            continue
        if s.get("name") == "Install gate":
            assert "$GATE_PIP_SPEC" in s["run"] and inputs["pip-spec"].startswith("finetune-gate")
            continue
        if job["rc"] != 0 and "always()" not in s.get("if", ""):
            continue  # a failed step skips the steps that do not run always()
        output.write_text("")
        step_env = {**env, "GITHUB_OUTPUT": str(output), **{k: _expand(v, ctx) for k, v in s.get("env", {}).items()}}
        res = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", s["run"]], cwd=work,
                             env=step_env, capture_output=True, text=True, timeout=300)
        job["steps"][s.get("name", s.get("id"))] = res
        if res.returncode != 0:
            job["rc"] = res.returncode
        if s.get("id"):
            for line in output.read_text().splitlines():
                key, _, val = line.partition("=")
                outputs[f"steps.{s['id']}.outputs.{key}"] = val
            ctx.update(outputs)
    job["outputs"] = {k: _expand(v["value"], ctx) for k, v in ACTION["outputs"].items()}
    job["summary"] = summary.read_text() if summary.exists() else ""
    job["report"] = (work / inputs["report-dir"] / "report.md").read_text()
    job["check_out"] = job["steps"]["Check the changed datasets"].stdout
    job["comment_out"] = job["steps"].get("Comment the report on the pull request")
    return job


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    """A bare origin with main (a dataset, its contract with its own held-out set, a README); a clone to work in."""
    base = tmp_path_factory.mktemp("pr-flow")
    origin, work = base / "origin.git", base / "work"
    _git(base, "init", "-q", "--bare", "-b", "main", str(origin))
    _git(base, "clone", "-q", str(origin), str(work))
    _git(work, "checkout", "-q", "-b", "main")
    write_jsonl(work / "data" / "triage" / "train.jsonl", _rows(20))
    write_jsonl(work / "data" / "triage" / "val.jsonl", _rows(5, 100))
    write_jsonl(work / "evals" / "heldout.jsonl", [{"id": "h1", "prompt": "where is my parcel number 77"}])
    (work / "contracts").mkdir()
    (work / "contracts" / "triage.yaml").write_text(
        (CONTRACTS / "triage.yaml").read_text().replace("../scorecards/suites/triage-heldout.jsonl",
                                                        "../evals/heldout.jsonl"))
    (work / "README.md").write_text("our support-ticket datasets\n")
    _git(work, "add", "-A")
    _git(work, "commit", "-q", "-m", "base: the datasets and their contract")
    _git(work, "push", "-q", "origin", "main")
    return base, work


def test_the_pull_request_flow_through_the_action(scratch):
    base, work = scratch
    with FakeGitHub() as gh:
        # 1. a PR adding faulty rows: a duplicated ticket and one in a language the contract does not allow
        _git(work, "checkout", "-q", "-b", "more-tickets", "origin/main")
        rows = _rows(20)
        faulty = [*rows, *_rows(3, 20), {**rows[3], "id": "tri-000999"}, {**triage_row(23), "language": "fr"}]
        write_jsonl(work / "data" / "triage" / "train.jsonl", faulty)
        _git(work, "commit", "-q", "-am", "more tickets")
        job = run_pr(work, base, gh, pr=1, token="ghs-write")
        assert job["rc"] == 100 and job["outputs"]["exit-code"] == "100"
        assert job["report"].startswith("## gate check: ❌ FAIL") and "exact_duplicate" in job["report"]
        [comment] = gh.comments(REPO, 1)
        assert comment["body"] == f"{MARKER}\n{job['report']}"
        assert [c["method"] for c in gh.calls] == ["GET", "POST"]
        assert job["report"] in job["summary"]
        # annotations point into the diff: paths relative to the repository root, the line of the faulty row
        assert "::error file=data/triage/train.jsonl,line=25,title=gate contract::" in job["check_out"]
        assert str(work) not in "".join(ln for ln in job["check_out"].splitlines() if ln.startswith("::"))

        # 2. the fix-up push on the same PR: passes, and the one comment is edited in place
        write_jsonl(work / "data" / "triage" / "train.jsonl", [*rows, *_rows(3, 20)])
        _git(work, "commit", "-q", "-am", "drop the duplicate and the French ticket")
        gh.calls.clear()
        job = run_pr(work, base, gh, pr=1, token="ghs-write")
        assert job["rc"] == 0 and job["outputs"]["exit-code"] == "0"
        assert job["report"].startswith("## gate check: ✅ PASS")
        [updated] = gh.comments(REPO, 1)
        assert updated["id"] == comment["id"] and updated["body"] == f"{MARKER}\n{job['report']}"
        assert [(c["method"], c["path"]) for c in gh.calls] == [
            ("GET", f"/repos/{REPO}/issues/1/comments?per_page=100"),
            ("PATCH", f"/repos/{REPO}/issues/comments/{comment['id']}")]

        # 3. a fork PR with a duplicate: its read-only token gets 403; a warning, the verdict is still FAIL
        gh.read_only.add("ghs-fork-read-only")
        _git(work, "checkout", "-q", "-b", "fork-pr", "origin/main")
        write_jsonl(work / "data" / "triage" / "val.jsonl", [*_rows(5, 100), {**_rows(1, 101)[0], "id": "tri-000998"}])
        _git(work, "commit", "-q", "-am", "a fork's contribution")
        job = run_pr(work, base, gh, pr=2, token="ghs-fork-read-only")
        assert job["rc"] == 100 and job["outputs"]["exit-code"] == "100"
        assert job["steps"]["Fail on the gate's verdict"].returncode == 100
        commenting = job["comment_out"]
        assert commenting.returncode == 0
        assert commenting.stdout.startswith("::warning::could not post the gate report comment on #2: HTTP 403")
        assert gh.comments(REPO, 2) == [] and job["report"].startswith("## gate check: ❌ FAIL")
        assert job["report"] in job["summary"]  # the report is still on the run's page

        # 4. a contract-only PR: no data file changed, every dataset under the contract is checked
        _git(work, "checkout", "-q", "-b", "tighten-sources", "origin/main")
        contract = work / "contracts" / "triage.yaml"
        contract.write_text(contract.read_text().replace("sources: [email, chat, web_form, phone]",
                                                         "sources: [chat]"))
        _git(work, "commit", "-q", "-am", "only chat tickets from now on")
        job = run_pr(work, base, gh, pr=3, token="ghs-write")
        assert job["rc"] == 100, job["report"]
        assert "Checked because `contracts/triage.yaml` changed since `origin/main`." in job["report"]
        report = json.loads((work / "gate-report" / "report.json").read_text())
        assert {f["check"] for f in report["findings"]} == {"contract"}
        [contract_comment] = gh.comments(REPO, 3)
        assert contract_comment["body"].startswith(MARKER) and len(gh.comments(REPO, 1)) == 1
