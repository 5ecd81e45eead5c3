"""Issue 27 item 4: changes the gate did not see. A committed symlink in the dataset pointing to a file outside it
(the pull request appends a bad row to the target: "No dataset files changed", exit 0) and a git submodule under
the dataset root (PASS, "nothing to check"). Both now fail closed with one line naming them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import gate_inprocess, triage_row, write_jsonl
from tests.security.conftest import AWS_KEY, append_rows, commit_all, git, rows


def _check(repo: Path, flag: str) -> tuple[int, str]:
    cwd = os.getcwd()
    os.chdir(repo)
    try:
        return gate_inprocess("check", "data/triage", "-c", "contracts/triage.yaml", flag, "main", "--checks",
                              "secret", "--no-db", "-o", "rep", "-q")
    finally:
        os.chdir(cwd)


@pytest.mark.parametrize("flag", ["--changed-since", "--base"])
def test_a_symlink_out_of_the_dataset_fails_closed(project: Path, flag: str) -> None:
    git(project, "checkout", "-q", "main")
    write_jsonl(project / "shared" / "extra.jsonl", rows(3, 20))
    (project / "data" / "triage" / "extra.jsonl").symlink_to(Path("..") / ".." / "shared" / "extra.jsonl")
    commit_all(project, "main: a split that is a link")
    git(project, "checkout", "-q", "-B", "pr")
    append_rows(project / "shared" / "extra.jsonl", [triage_row(70, f"my key is {AWS_KEY} rotate it please")])
    commit_all(project, "pr: a row through the link")
    code, out = _check(project, flag)
    assert code == 1, out
    assert out.strip().count("\n") == 0 and "data/triage/extra.jsonl -> ../../shared/extra.jsonl" in out


def test_a_submodule_under_the_dataset_fails_closed(project: Path, tmp_path: Path) -> None:
    sub = project / "data" / "triage" / "vendor"
    sub.mkdir()
    git(sub, "init", "-q", "-b", "main")
    write_jsonl(sub / "train.jsonl", [triage_row(80, f"my key is {AWS_KEY} rotate it please")])
    commit_all(sub, "bad rows")
    git(project, "add", "data/triage/vendor")  # recorded as a gitlink: the commit, never the files
    git(project, "commit", "-q", "-m", "pr: a submodule")
    assert "160000" in git(project, "ls-files", "-s", "data/triage/vendor")
    code, out = _check(project, "--changed-since")
    assert code == 1, out
    assert out.strip().count("\n") == 0 and "data/triage/vendor" in out
