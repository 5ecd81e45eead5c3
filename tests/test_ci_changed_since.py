"""`gate check --changed-since REF` on a throwaway repository: which datasets a change touches, one report over
several, a change with no data, uncommitted files, and a bad ref as one line with exit 1."""

import json
import os
import subprocess

import pytest

from tests.conftest import CONTRACTS, gate_inprocess, run_gate, triage_row, write_jsonl

CHECKS = ("--checks", "exact_duplicate", "--no-db")


def _git(cwd, *args):
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.invalid", "GIT_CONFIG_GLOBAL": "/dev/null"}
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def _rows(n, start=0):
    return [triage_row(i, f"ticket {i} about a broken widget number {i}") for i in range(start, start + n)]


@pytest.fixture
def repo(tmp_path):
    _git(tmp_path, "init", "-q", "-b", "main")
    for name in ("emails", "chats", "calls"):
        write_jsonl(tmp_path / "data" / name / "train.jsonl", _rows(10))
    (tmp_path / "notes.md").write_text("x\n")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-q", "-m", "base")
    return tmp_path


def _check(repo, *extra, ref="main"):
    return run_gate("check", "data", "-c", str(CONTRACTS / "triage.yaml"), "-o", "rep", "--changed-since", ref,
                    *CHECKS, *extra, cwd=repo)


def test_only_changed_datasets_are_checked_and_reported_together(repo):
    _git(repo, "checkout", "-q", "-b", "pr")
    rows = _rows(10)
    write_jsonl(repo / "data" / "emails" / "train.jsonl", [*rows, {**rows[1], "id": "tri-000901"}])
    write_jsonl(repo / "data" / "chats" / "val.jsonl", _rows(3, 50))  # a new split file, still clean
    (repo / "notes.md").write_text("y\n")  # not data
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "pr")
    res = _check(repo)
    assert res.returncode == 100, res.stderr
    report = json.loads((repo / "rep" / "report.json").read_text())
    assert report["verdict"] == "fail"
    assert {(u["dataset"], u["exit_code"]) for u in report["checked"]} == {("chats", 0), ("emails", 100)}
    md = (repo / "rep" / "report.md").read_text()
    assert md.startswith("## gate check: ❌ FAIL (2 datasets changed since `main`)")
    assert "### `chats`" in md and "### `emails`" in md and "calls" not in md
    assert (repo / "rep" / "emails" / "report.md").is_file()
    import xml.etree.ElementTree as ET

    suites = ET.parse(repo / "rep" / "junit.xml").getroot()
    assert suites.tag == "testsuites" and len(suites.findall(".//failure")) >= 1


def test_no_data_change_passes_with_a_clear_message_and_uncommitted_files_count(repo):
    (repo / "notes.md").write_text("changed\n")
    res = _check(repo)
    assert res.returncode == 0, res.stderr
    assert "no dataset files under data changed since main; nothing to check" in res.stdout
    assert json.loads((repo / "rep" / "report.json").read_text())["checked"] == []
    # an untracked split file is part of the change a user is about to push
    rows = _rows(4, 70)
    write_jsonl(repo / "data" / "calls" / "test.jsonl", [*rows, {**rows[0], "id": "tri-000902"}])
    res = _check(repo)
    assert res.returncode == 100, res.stderr
    assert (repo / "rep" / "report.md").read_text().startswith("## gate check: ❌ FAIL")


def test_bad_ref_and_no_repository_are_one_line_exit_1(repo, tmp_path_factory):
    res = _check(repo, ref="origin/nope")
    assert res.returncode == 1
    assert "unknown git ref 'origin/nope'" in res.stderr and "fetch-depth 0" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and not (repo / "rep").exists()
    bare = tmp_path_factory.mktemp("nogit")
    write_jsonl(bare / "data" / "train.jsonl", _rows(2))
    res = run_gate("check", "data", "-c", str(CONTRACTS / "triage.yaml"), "--changed-since", "main", *CHECKS,
                   cwd=bare, env={"GIT_CEILING_DIRECTORIES": str(bare.parent)})
    assert res.returncode == 1 and "not inside a git work tree" in res.stderr


# ---- issue 15 items 5 and 6: a contract-only change is checked; every finding is new or existing ----------------

LONG = "my phone screen stays black after the latest update and restarting the handset does not bring the app back"


@pytest.fixture
def own_contract_repo(tmp_path):
    """A repository with its own contract and evaluation set beside the data (as a team keeps them)."""
    text = (CONTRACTS / "triage.yaml").read_text().replace("../scorecards/suites/triage-heldout.jsonl",
                                                              "../evals/heldout.jsonl")
    (tmp_path / "contracts").mkdir()
    (tmp_path / "contracts" / "triage.yaml").write_text(text)
    write_jsonl(tmp_path / "evals" / "heldout.jsonl", [{"id": "h1", "prompt": "where is my parcel number 77"}])
    rows = _rows(10)
    rows[4] = triage_row(4, LONG)
    write_jsonl(tmp_path / "data" / "train.jsonl", rows)
    _git(tmp_path, "init", "-q", "-b", "main")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-q", "-m", "base")
    _git(tmp_path, "checkout", "-q", "-b", "pr")
    return tmp_path


def _own(repo, *checks, extra=()):
    return gate_inprocess("check", str(repo / "data"), "-c", str(repo / "contracts" / "triage.yaml"), "-o",
                          str(repo / "rep"), "--changed-since", "main", "--checks", ",".join(checks), "--no-db",
                          *extra)


def test_a_contract_only_change_checks_every_dataset_it_governs(own_contract_repo):
    repo = own_contract_repo
    contract = repo / "contracts" / "triage.yaml"
    contract.write_text(contract.read_text().replace("sources: [email, chat, web_form, phone]", "sources: [chat]"))
    _git(repo, "commit", "-q", "-am", "tighten sources")
    code, out = _own(repo, "contract")
    assert code == 100, out
    report = json.loads((repo / "rep" / "report.json").read_text())
    found = [f for f in report["findings"] if f["check"] == "contract"]
    assert len(found) == 10 and {f["novelty"] for f in found} == {"new"}  # the old contract allowed them
    md = (repo / "rep" / "report.md").read_text()
    assert "Checked because `contracts/triage.yaml` changed since `main`." in md
    assert "**10 new** finding(s), 0 existing" in md


def test_a_changed_evaluation_set_checks_the_datasets_compared_with_it(own_contract_repo):
    repo = own_contract_repo
    write_jsonl(repo / "evals" / "heldout.jsonl", [{"id": "h1", "prompt": "where is my parcel number 77"},
                                                    {"id": "h2", "prompt": LONG}])
    _git(repo, "commit", "-q", "-am", "a held-out item that train already holds")
    code, out = _own(repo, "contamination")
    assert code == 100, out
    report = json.loads((repo / "rep" / "report.json").read_text())
    hits = [f for f in report["findings"] if f["check"] == "contamination"]
    assert [(f["row"], f["novelty"]) for f in hits] == [(5, "new")]
    assert "`evals/heldout.jsonl` changed since `main`" in (repo / "rep" / "report.md").read_text()


def _old_duplicate_on_main(repo):
    """The target branch already holds a duplicate (row 12 copies row 2): the rows and that copy."""
    rows = [json.loads(line) for line in (repo / "data" / "train.jsonl").read_text().splitlines()]
    old_dup = {**rows[1], "id": "tri-000500"}
    write_jsonl(repo / "data" / "train.jsonl", [*rows, old_dup])
    _git(repo, "commit", "-q", "-am", "a duplicate, on the target branch already")
    _git(repo, "branch", "-f", "main")
    return rows, old_dup


def test_existing_findings_are_marked_listed_after_new_ones_and_fail_only_when_asked(own_contract_repo):
    repo = own_contract_repo
    rows, old_dup = _old_duplicate_on_main(repo)
    # the pull request: a clean row inserted at the top (every line moves), nothing else
    write_jsonl(repo / "data" / "train.jsonl", [triage_row(70, "a fresh ticket about a dead keyboard"), *rows,
                                                 old_dup])
    _git(repo, "commit", "-q", "-am", "one new clean row")
    code, out = _own(repo, "exact_duplicate")
    assert code == 0, out  # the old duplicate does not fail an unrelated change ...
    report = json.loads((repo / "rep" / "report.json").read_text())
    assert [(f["row"], f["novelty"]) for f in report["findings"]] == [(12, "existing")]
    check = next(c for c in report["checks"] if c["name"] == "exact_duplicate")
    assert check["status"] == "warn" and check["counts"]["existing_findings"] == 1
    assert "failed on `main` already" in check["summary"]
    md = (repo / "rep" / "report.md").read_text()
    assert "**0 new** finding(s), 1 existing" in md and "| existing | train | 12 |" in md
    code, out = _own(repo, "exact_duplicate", extra=("--fail-on-existing",))
    assert code == 100, out  # ... unless asked
    # a new duplicate: it fails the change, and is listed before the old one
    more = {**rows[6], "id": "tri-000600"}
    write_jsonl(repo / "data" / "train.jsonl", [triage_row(70, "a fresh ticket about a dead keyboard"), *rows,
                                                 old_dup, more])
    _git(repo, "commit", "-q", "-am", "and a new duplicate")
    code, out = _own(repo, "exact_duplicate")
    assert code == 100, out
    report = json.loads((repo / "rep" / "report.json").read_text())
    assert [(f["row"], f["novelty"]) for f in report["findings"]] == [(13, "new"), (12, "existing")]
    md = (repo / "rep" / "report.md").read_text()
    assert md.index("| **new** | train | 13 |") < md.index("| existing | train | 12 |")


# ---- issue 33 item 6: --changed-since with --base runs the incremental path, and says which path ran ------------

def test_changed_since_with_base_checks_only_the_changed_rows_incrementally(own_contract_repo):
    """The action's default: one pass over the change (its rows against the dataset's index), not two whole checks;
    `--base` beside `--changed-since` was silently ignored before."""
    repo = own_contract_repo
    rows, old_dup = _old_duplicate_on_main(repo)
    write_jsonl(repo / "data" / "train.jsonl", [*rows, old_dup, {**rows[6], "id": "tri-000600"}])
    _git(repo, "commit", "-q", "-am", "a new duplicate")
    code, out = _own(repo, "exact_duplicate", extra=("--base", "main", "-j", "1", "--index", str(repo / ".idx")))
    assert code == 100, out
    report = json.loads((repo / "rep" / "report.json").read_text())
    assert [f["row"] for f in report["findings"]] == [12]  # the new copy only, not the old one
    md = (repo / "rep" / "report.md").read_text()
    assert "Incremental against" in md and "1 new row(s) checked" in md and "Full check" not in md
    assert (repo / ".idx" / "manifest.json").is_file()  # built on first use, outside the dataset
    # without --base: the full path, said so
    code, out = _own(repo, "exact_duplicate")
    assert code == 100, out
    md = (repo / "rep" / "report.md").read_text()
    assert "Incremental against" not in md and "Full check: every row here and at the base." in md


def test_changed_since_with_base_checks_whole_where_incremental_cannot_answer(own_contract_repo):
    """A changed contract judges the old rows too, and --fail-on-existing needs their findings: the full path, and
    the report and the verdict line say why it was not incremental."""
    repo = own_contract_repo
    contract = repo / "contracts" / "triage.yaml"
    contract.write_text(contract.read_text().replace("sources: [email, chat, web_form, phone]", "sources: [chat]"))
    _git(repo, "commit", "-q", "-am", "tighten sources")
    code, out = _own(repo, "contract", extra=("--base", "main", "-j", "1", "--index", str(repo / ".idx")))
    assert code == 100, out
    report = json.loads((repo / "rep" / "report.json").read_text())
    assert len([f for f in report["findings"] if f["check"] == "contract"]) == 10  # every old row, judged anew
    md = (repo / "rep" / "report.md").read_text()
    assert "Incremental against" not in md
    assert "(not incremental: the contract's inputs changed: `contracts/triage.yaml` changed since `main`)." in md
    assert "full check, not incremental: the contract's inputs changed" in out
    _git(repo, "checkout", "-q", "main", "--", "contracts/triage.yaml")
    _git(repo, "commit", "-q", "-am", "untighten")
    (repo / "data" / "train.jsonl").write_text((repo / "data" / "train.jsonl").read_text() + json.dumps(
        triage_row(80, "a fresh ticket about a dead keyboard")) + "\n")
    code, out = _own(repo, "exact_duplicate", extra=("--base", "main", "--fail-on-existing", "-j", "1",
                                                       "--index", str(repo / ".idx")))
    assert code == 0, out
    assert "(not incremental: --fail-on-existing needs the findings of every row)." in \
        (repo / "rep" / "report.md").read_text()


def test_the_ci_script_passes_base_unless_told_not_to(tmp_path):
    from tests.security.test_workflow_from_base import gate_check_argv

    for value, expect in (("", True), ("true", True), ("false", False)):
        argv = gate_check_argv(tmp_path, **({"GATE_INCREMENTAL": value} if value else {}))
        assert argv[argv.index("--changed-since") + 1] == "origin/main"
        assert (("--base" in argv) and argv[argv.index("--base") + 1] == "origin/main") is expect, value
