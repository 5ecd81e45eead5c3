"""The CI gate as users adopt it: the workflow files parse, and their own shell steps, run in order against a
throwaway git repository (a bare origin and a clone with a clean and a faulty pull-request branch), pass the clean
change, fail the faulty one with exit 100, and post exactly report.md as the comment to a local stand-in API."""

import json
import os
import re
import shutil
import subprocess
import sys
import urllib.parse

import pytest
import yaml

from tests.conftest import CONTRACTS, ROOT, gate_inprocess, triage_row, write_jsonl
from tests.fake_github import FakeGitHub

GITHUB = ROOT / "ci" / "github" / "dataset-gate.yml"
GITLAB = ROOT / "ci" / "gitlab" / "dataset-gate.yml"
CHECK_ARGS = "--checks exact_duplicate --no-db"  # the fastest check that a planted duplicate fails


MARKER = "<!-- gate-report -->"


@pytest.fixture
def api():
    """A fresh fake API per test: each one starts with no comments on the pull request."""
    with FakeGitHub() as gh:
        yield gh.url, gh.calls


def _writes(calls):
    """The requests that post or edit a comment (the comment script reads the PR's comments first)."""
    return [c for c in calls if c["method"] != "GET"]


def _git(cwd, *args):
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.invalid", "GIT_CONFIG_GLOBAL": "/dev/null"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def _rows(n, start=0):
    return [triage_row(i, f"ticket {i} about a broken widget number {i}") for i in range(start, start + n)]


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    """origin.git with main; a clone with branches pr-clean (new unique rows), pr-faulty (a duplicated row) and
    pr-docs (no data touched)."""
    base = tmp_path_factory.mktemp("ci-repo")
    origin, work = base / "origin.git", base / "work"
    _git(base, "init", "-q", "--bare", "-b", "main", str(origin))
    _git(base, "clone", "-q", str(origin), str(work))
    _git(work, "checkout", "-q", "-b", "main")
    data = work / "data" / "triage"
    write_jsonl(data / "train.jsonl", _rows(20))
    write_jsonl(data / "val.jsonl", _rows(5, 100))
    write_jsonl(data / "test.jsonl", _rows(5, 200))
    (work / "contracts").mkdir()
    shutil.copy(CONTRACTS / "triage.yaml", work / "contracts" / "triage.yaml")
    shutil.copytree(ROOT / "ci", work / "ci")
    (work / "README.md").write_text("datasets\n")
    _git(work, "add", "-A")
    _git(work, "commit", "-q", "-m", "datasets")
    _git(work, "push", "-q", "origin", "main")

    _git(work, "checkout", "-q", "-b", "pr-clean", "main")
    write_jsonl(data / "train.jsonl", _rows(25))
    _git(work, "commit", "-q", "-am", "five more tickets")

    _git(work, "checkout", "-q", "-b", "pr-faulty", "main")
    rows = _rows(20)
    rows.append({**rows[3], "id": "tri-000999"})  # the same ticket again under a new id
    write_jsonl(data / "train.jsonl", rows)
    _git(work, "commit", "-q", "-am", "one more ticket")

    _git(work, "checkout", "-q", "-b", "pr-docs", "main")
    (work / "README.md").write_text("datasets, documented\n")
    _git(work, "commit", "-q", "-am", "docs")
    return work


_EXPR = re.compile(r"\$\{\{\s*([^}]+?)\s*\}\}")


def _expand(value, context):
    """GitHub's ${{ }} expressions, from the values a pull_request event would give; an unknown one fails the test."""
    def sub(m):
        assert m.group(1) in context, f"the workflow uses ${{{{ {m.group(1)} }}}}, which this test does not model"
        return context[m.group(1)]
    return _EXPR.sub(sub, str(value))


def _base_env(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "GATE_", "CI_"))}
    env.update({"GATE_BIN": f"{sys.executable} -m gate", "GATE_ARGS": CHECK_ARGS, "CI": "true",
                "GIT_CONFIG_GLOBAL": "/dev/null"})
    return env


def run_github_workflow(repo, branch, api_url, tmp_path):
    """Runs every `run:` step of the job in order (checkout, setup-python, install and artifact upload are the
    runner's business), each in its own bash as Actions does; returns the last step's exit code."""
    wf = yaml.safe_load(GITHUB.read_text())
    _git(repo, "checkout", "-q", branch)
    for leftover in ("gate-report", "gate-exit-code"):
        shutil.rmtree(repo / leftover, ignore_errors=True) if leftover == "gate-report" \
            else (repo / leftover).unlink(missing_ok=True)
    context = {"github.base_ref": "main", "secrets.GITHUB_TOKEN": "ghs-test-token",
               "github.event.pull_request.number": "7",
               "github.event.action == 'labeled' && github.event.label.name == 'gate-contract-change-approved'":
               "false"}
    summary, output = tmp_path / f"summary-{branch}.md", tmp_path / f"output-{branch}"
    env = _base_env(tmp_path)
    env.update({"GITHUB_ACTIONS": "true", "GITHUB_REPOSITORY": "acme/datasets", "GITHUB_API_URL": api_url,
                "GITHUB_STEP_SUMMARY": str(summary), "GITHUB_OUTPUT": str(output), "GITHUB_BASE_REF": "main"})
    env.update({k: _expand(v, context) for k, v in wf["env"].items()})
    env["GATE_CONTRACT"] = "contracts/triage.yaml"
    rc = None
    for step in wf["jobs"]["gate"]["steps"]:
        if "uses" in step or step.get("name") == "Install gate":
            continue
        step_env = {**env, **{k: _expand(v, context) for k, v in (step.get("env") or {}).items()}}
        res = subprocess.run(["bash", "-e", "-c", _expand(step["run"], context)], cwd=repo, env=step_env,
                             capture_output=True, text=True, timeout=300)
        rc = res.returncode
        if rc != 0 and step.get("if") != "always()" and step is not wf["jobs"]["gate"]["steps"][-1]:
            raise AssertionError(f"step {step.get('name')} failed: {res.stderr}")
    return rc, summary, output


def test_workflow_files_parse_with_the_expected_structure():
    gh = yaml.safe_load(GITHUB.read_text())
    # YAML 1.1 reads the key `on` as True
    assert "pull_request_target" in gh[True]  # the workflow as on the target branch, not the pull request's
    assert gh["permissions"]["pull-requests"] == "write"
    steps = gh["jobs"]["gate"]["steps"]
    checkout = steps[0]
    assert checkout["uses"].startswith("actions/checkout@") and checkout["with"]["fetch-depth"] == 0
    runs = [s.get("run", "") for s in steps]
    assert any("gate-check.sh" in r for r in runs)
    assert "--changed-since" in (ROOT / "ci/scripts/gate-check.sh").read_text()
    gate_step = next(s for s in steps if "gate-check.sh" in s.get("run", ""))
    assert gate_step["env"]["GATE_BASE_REF"] == "origin/${{ github.base_ref }}"
    upload = next(s for s in steps if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert upload["if"] == "always()" and upload["with"]["path"] == "gate-report/"
    comment = next(s for s in steps if "github-comment.sh" in s.get("run", ""))
    assert comment["if"] == "always()"
    assert "gate-verdict.sh" in steps[-1]["run"]

    gl = yaml.safe_load(GITLAB.read_text())
    job = gl["dataset-gate"]
    assert job["rules"] == [{"if": '$CI_PIPELINE_SOURCE == "merge_request_event"'}]
    assert job["variables"]["GIT_DEPTH"] == "0"
    assert job["artifacts"]["reports"]["junit"] == "gate-report/junit.xml" and job["artifacts"]["when"] == "always"
    assert [re.search(r"ci/scripts/(\S+\.sh)", s).group(1) for s in job["script"] if "ci/scripts" in s] == [
        "gate-check.sh", "gitlab-note.sh", "gate-verdict.sh"]


def test_github_clean_pr_passes_and_comments_the_report(repo, api, tmp_path):
    url, calls = api
    calls.clear()
    rc, summary, output = run_github_workflow(repo, "pr-clean", url, tmp_path)
    assert rc == 0
    report = (repo / "gate-report" / "report.md").read_text()
    assert report.startswith("## gate check: ✅ PASS")
    assert "exit_code=0" in output.read_text()
    assert report in summary.read_text()
    [call] = _writes(calls)
    assert (call["method"], call["path"]) == ("POST", "/repos/acme/datasets/issues/7/comments")
    assert call["headers"]["Authorization"] == "Bearer ghs-test-token"
    assert json.loads(call["body"]) == {"body": f"{MARKER}\n{report}"}
    import xml.etree.ElementTree as ET

    assert ET.parse(repo / "gate-report" / "junit.xml").getroot().tag in ("testsuites", "testsuite")


def test_github_faulty_pr_fails_with_100_and_the_comment_is_the_report(repo, api, tmp_path):
    url, calls = api
    calls.clear()
    rc, summary, output = run_github_workflow(repo, "pr-faulty", url, tmp_path)
    assert rc == 100
    report = (repo / "gate-report" / "report.md").read_text()
    assert report.startswith("## gate check: ❌ FAIL") and "exact_duplicate" in report
    assert "exit_code=100" in output.read_text()
    [call] = _writes(calls)
    assert json.loads(call["body"])["body"] == f"{MARKER}\n{report}"
    junit = (repo / "gate-report" / "junit.xml").read_text()
    assert "<failure" in junit


def test_github_pr_without_data_changes_passes_and_says_so(repo, api, tmp_path):
    url, calls = api
    calls.clear()
    rc, _, _ = run_github_workflow(repo, "pr-docs", url, tmp_path)
    assert rc == 0
    report = (repo / "gate-report" / "report.md").read_text()
    assert "No dataset files under `data/triage` changed since `origin/main`" in report
    assert json.loads(_writes(calls)[0]["body"])["body"] == f"{MARKER}\n{report}"


def test_gitlab_faulty_mr_fails_with_100_and_notes_the_report(repo, api, tmp_path):
    url, calls = api
    calls.clear()
    job = yaml.safe_load(GITLAB.read_text())["dataset-gate"]
    _git(repo, "checkout", "-q", "pr-faulty")
    shutil.rmtree(repo / "gate-report", ignore_errors=True)
    env = _base_env(tmp_path)
    env.update({k: str(v) for k, v in job["variables"].items()})
    env.update({"GITLAB_CI": "true", "CI_PIPELINE_SOURCE": "merge_request_event", "CI_API_V4_URL": f"{url}/api/v4",
                "CI_PROJECT_ID": "42", "CI_MERGE_REQUEST_IID": "3", "CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "main",
                "GATE_GITLAB_TOKEN": "glpat-test"})
    lines = [s for s in job["before_script"] if "pip install" not in s] + job["script"]
    res = subprocess.run(["bash", "-e", "-c", "\n".join(lines)], cwd=repo, env=env, capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 100, res.stderr
    report = (repo / "gate-report" / "report.md").read_text()
    assert report.startswith("## gate check: ❌ FAIL")
    [call] = _writes(calls)
    assert call["path"] == "/api/v4/projects/42/merge_requests/3/notes"
    assert call["headers"]["PRIVATE-TOKEN"] == "glpat-test"
    assert urllib.parse.parse_qs(call["body"].decode())["body"] == [report]


def test_gate_that_cannot_run_fails_the_job_and_says_why(repo, api, tmp_path):
    url, calls = api
    calls.clear()
    _git(repo, "checkout", "-q", "pr-clean")
    env = _base_env(tmp_path)
    env.update({"GATE_DATASET": "data/triage", "GATE_CONTRACT": "contracts/missing.yaml",
                "GATE_BASE_REF": "origin/main", "GATE_REPORT_DIR": str(tmp_path / "rep"),
                "GATE_EXIT_FILE": str(tmp_path / "rc")})
    res = subprocess.run(["bash", "ci/scripts/gate-check.sh"], cwd=repo, env=env, capture_output=True, text=True)
    assert res.returncode == 0  # the comment step still runs
    assert (tmp_path / "rc").read_text().strip() == "1"
    md = (tmp_path / "rep" / "report.md").read_text()
    assert md.startswith("## gate check: ⚠️ could not run (exit 1)") and "missing.yaml" in md
    res = subprocess.run(["bash", "ci/scripts/gate-verdict.sh"], cwd=repo, env=env, capture_output=True, text=True)
    assert res.returncode == 1


# ---- issue 18 items 6 and 7: one comment updated in place; commenting is best effort -------------------------

def _comment(tmp_path, url, *, token="ghs-test-token", pr="7"):
    body = tmp_path / "report.md"
    body.write_text("## gate check: ❌ FAIL\n\nrow 3 is a duplicate\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "GATE_"))}
    env.update({"GITHUB_API_URL": url, "GITHUB_REPOSITORY": "acme/datasets", "GATE_PR_NUMBER": pr,
                "GITHUB_TOKEN": token})
    res = subprocess.run(["bash", str(ROOT / "ci/scripts/github-comment.sh"), str(body)], env=env,
                         capture_output=True, text=True, timeout=60)
    return res, body.read_text()


def test_the_report_comment_is_found_by_its_marker_on_any_page_and_edited_in_place(tmp_path):
    with FakeGitHub() as gh:
        # 130 comments by people, the gate's own from an earlier push at 111 (page 2 of GitHub's 100 a page)
        bodies = [f"looks good {i}" for i in range(130)]
        bodies[110] = f"{MARKER}\n## gate check: ✅ PASS\n"
        ids = gh.seed("acme/datasets", 7, bodies)
        res, report = _comment(tmp_path, gh.url)
        assert res.returncode == 0, res.stderr
        assert "updated the gate report comment on #7" in res.stdout
        gets = [c for c in gh.calls if c["method"] == "GET"]
        assert len(gets) == 2 and "page=2" in gets[1]["path"]  # followed the Link header
        [patch] = _writes(gh.calls)
        assert (patch["method"], patch["path"]) == ("PATCH", f"/repos/acme/datasets/issues/comments/{ids[110]}")
        comments = gh.comments("acme/datasets", 7)
        assert len(comments) == 130 and comments[110]["body"] == f"{MARKER}\n{report}"
        assert comments[0]["body"] == "looks good 0"
        # a comment on another pull request is never touched: its first report is a new comment
        res, _ = _comment(tmp_path, gh.url, pr="8")
        assert res.returncode == 0 and "commented on #8" in res.stdout
        assert len(gh.comments("acme/datasets", 8)) == 1 and len(gh.comments("acme/datasets", 7)) == 130


def test_a_refused_or_unreachable_comment_is_a_warning_and_the_verdict_still_decides(tmp_path):
    with FakeGitHub() as gh:
        gh.read_only.add("ghs-test-token")  # a fork's read-only GITHUB_TOKEN
        res, _ = _comment(tmp_path, gh.url)
        assert res.returncode == 0, res.stderr
        assert res.stdout.startswith("::warning::could not post the gate report comment on #7: HTTP 403")
        assert "fork" in res.stdout and gh.comments("acme/datasets", 7) == []
        gh.seed("acme/datasets", 7, [f"{MARKER}\nold"])
        res, _ = _comment(tmp_path, gh.url)
        assert res.returncode == 0 and "could not update" in res.stdout and "HTTP 403" in res.stdout
    res, _ = _comment(tmp_path, gh.url)  # the server is gone: connection refused
    assert res.returncode == 0 and res.stdout.startswith("::warning::could not read the gate report comment")
    res, _ = _comment(tmp_path, gh.url, token="")
    assert res.returncode == 0 and "no GITHUB_TOKEN" in res.stdout
    (tmp_path / "rc").write_text("100\n")
    verdict = subprocess.run(["bash", str(ROOT / "ci/scripts/gate-verdict.sh")], capture_output=True, text=True,
                             env={**os.environ, "GATE_EXIT_FILE": str(tmp_path / "rc")})
    assert verdict.returncode == 100


def test_the_verdict_step_runs_whatever_the_comment_step_did():
    steps = yaml.safe_load(GITHUB.read_text())["jobs"]["gate"]["steps"]
    assert "gate-verdict.sh" in steps[-1]["run"] and steps[-1]["if"] == "always()"


# ---- issue 18 item 8: annotations name files relative to the repository root ---------------------------------

def test_annotations_use_paths_relative_to_the_repository_root(tmp_path, monkeypatch):
    clone = tmp_path / "runner" / "work" / "datasets"
    _git(tmp_path, "init", "-q", "-b", "main", str(clone))
    rows = _rows(4)
    rows[1]["language"] = "fr"
    write_jsonl(clone / "data" / "sql" / "train.jsonl", rows)
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.delenv("GITHUB_WORKSPACE", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.chdir(clone / "data")  # a job that cd's into a subfolder: still relative to the root
    args = ("-c", str(CONTRACTS / "triage.yaml"), "-o", str(tmp_path / "rep"), "--no-db", "--checks", "contract")
    code, out = gate_inprocess("check", str(clone / "data" / "sql"), *args)
    assert code == 100, out
    assert "::error file=data/sql/train.jsonl,line=2,title=gate contract::language: language.allowed" in out
    assert str(tmp_path) not in "".join(ln for ln in out.splitlines() if ln.startswith("::"))
    # on a runner: GITHUB_WORKSPACE is the root, whatever git says; a dataset outside it keeps its path
    monkeypatch.setenv("GITHUB_WORKSPACE", str(clone / "data"))
    code, out = gate_inprocess("check", "sql", *args)
    assert "::error file=sql/train.jsonl,line=2," in out
    outside = write_jsonl(tmp_path / "elsewhere" / "train.jsonl", rows)
    code, out = gate_inprocess("check", str(outside.parent), *args)
    assert f"::error file={outside},line=2," in out


def test_ndjson_annotations_carry_lines_and_the_comment_names_the_dataset_relative(tmp_path, monkeypatch):
    """Issue 33 item 7: 0 of 35 annotations on a .ndjson file had line=; the PR comment showed the runner's absolute
    dataset path."""
    clone = tmp_path / "runner" / "work" / "datasets"
    _git(tmp_path, "init", "-q", "-b", "main", str(clone))
    rows = _rows(4)
    rows[2]["language"] = "fr"
    write_jsonl(clone / "data" / "sql" / "train.ndjson", rows)
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.delenv("GITHUB_WORKSPACE", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    code, out = gate_inprocess("check", str(clone / "data" / "sql"), "-c", str(CONTRACTS / "triage.yaml"), "-o",
                               str(tmp_path / "rep"), "--no-db", "--checks", "contract")
    assert code == 100, out
    assert "::error file=data/sql/train.ndjson,line=3,title=gate contract::language: language.allowed" in out
    comment = (tmp_path / "rep" / "report.md").read_text()
    assert "`data/sql` against contract" in comment and str(tmp_path) not in comment


# ---- issue 18 item 5: the composite action and the one-step workflow ------------------------------------------

ACTION = ROOT / "action.yml"
ACTION_WORKFLOW = ROOT / "ci" / "github" / "dataset-gate-action.yml"


def test_action_yml_is_a_composite_action_whose_every_input_is_used():
    import gate

    action = yaml.safe_load(ACTION.read_text())
    assert {"name", "description", "inputs", "outputs", "runs"} <= set(action)
    assert action["runs"]["using"] == "composite"
    inputs = action["inputs"]
    assert {"dataset", "contract", "base", "fail-on", "pip-spec", "report-dir"} <= set(inputs)
    assert inputs["dataset"]["required"] is True and inputs["contract"]["required"] is True
    assert inputs["pip-spec"]["default"].startswith(gate.DISTRIBUTION)
    assert all(spec.get("description") for spec in inputs.values())
    steps = action["runs"]["steps"]
    used = set(re.findall(r"inputs\.([a-z][a-z0-9-]*)", yaml.safe_dump([action["runs"], action["outputs"]])))
    assert used == set(inputs), f"declared but unused: {set(inputs) - used}; used but undeclared: {used - set(inputs)}"
    for step in steps:
        assert ("run" in step) != ("uses" in step), step
        if "run" in step:
            assert step["shell"] == "bash"
            assert "${{" not in step["run"], "inputs reach a script through env:, never pasted into its text"
            for script in re.findall(r"\$GITHUB_ACTION_PATH/(\S+?\.sh)", step["run"]):
                assert (ROOT / script).is_file(), script
    scripts = [re.search(r"ci/scripts/(\S+?\.sh)", s.get("run", "")) for s in steps]
    assert [m.group(1) for m in scripts if m] == ["gate-check.sh", "github-comment.sh", "gate-verdict.sh"]
    assert steps[-1]["if"] == "always()" and "gate-verdict.sh" in steps[-1]["run"]
    comment = next(s for s in steps if "github-comment.sh" in s.get("run", ""))
    assert comment["if"].startswith("always()")
    check = next(s for s in steps if s.get("id") == "check")
    assert action["outputs"]["exit-code"]["value"] == "${{ steps.check.outputs.exit_code }}"
    assert check["env"]["GATE_EXIT_FILE"] == steps[-1]["env"]["GATE_EXIT_FILE"]

    wf = yaml.safe_load(ACTION_WORKFLOW.read_text())
    [checkout, gate_step] = wf["jobs"]["gate"]["steps"]
    assert checkout["with"]["fetch-depth"] == 0 and "@" in gate_step["uses"]
    assert set(gate_step["with"]) <= set(inputs) and {"dataset", "contract"} <= set(gate_step["with"])
    assert wf["permissions"]["pull-requests"] == "write"
