"""`gate check --changed-since REF` on a throwaway repository: which datasets a change touches, one report over
several, a change with no data, uncommitted files, and a bad ref as one line with exit 1."""

import json
import os
import subprocess

import pytest

from tests.conftest import CONTRACTS, run_gate, triage_row, write_jsonl

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
