"""Issue 27 item 3: under `--base` a training row copying an evaluation item passed (contamination was skipped as
a full-dataset check); `--changed-since` failed it. The dataset-level checks run now on the whole dataset, and a
finding the base already had does not fail the change; `group_split` (a row of a group living in the test split)
was skipped the same way."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.conftest import ROOT, gate_inprocess, triage_row
from tests.security.conftest import append_rows, commit_all


def _eval_prompt() -> str:
    first = (ROOT / "scorecards" / "suites" / "triage-heldout.jsonl").read_text().splitlines()[0]
    return next(m["content"] for m in json.loads(first)["messages"] if m["role"] == "user")


def _check(repo: Path, checks: str = "contamination") -> tuple[int, str, dict]:
    cwd = os.getcwd()
    os.chdir(repo)
    try:
        code, out = gate_inprocess("check", "data/triage", "-c", "contracts/triage.yaml", "--base", "main",
                                   "--checks", checks, "--no-db", "-o", "rep", "-q")
    finally:
        os.chdir(cwd)
    return code, out, json.loads((repo / "rep" / "report.json").read_text())


def test_a_row_copying_an_evaluation_item_fails_under_base(project: Path) -> None:
    append_rows(project / "data" / "triage" / "train.jsonl", [triage_row(60, _eval_prompt())])
    commit_all(project, "pr: a copied evaluation item")
    code, out, report = _check(project)
    assert code == 100, out
    res = next(r for r in report["checks"] if r["name"] == "contamination")
    assert res["status"] == "fail"
    found = [f for f in report["findings"] if f["check"] == "contamination"]
    assert [(f["split"], f["row"]) for f in found] == [("train", 11)]


def test_contamination_the_base_already_had_does_not_fail_an_unrelated_change(project: Path) -> None:
    append_rows(project / "data" / "triage" / "train.jsonl", [triage_row(60, _eval_prompt())])
    commit_all(project, "main: contaminated already")
    from tests.security.conftest import git

    git(project, "branch", "-f", "main", "HEAD")
    append_rows(project / "data" / "triage" / "train.jsonl", [triage_row(61)])
    commit_all(project, "pr: a clean row")
    code, out, report = _check(project)
    assert code == 0, out


def test_a_row_of_a_group_living_in_the_test_split_fails_under_base(project: Path) -> None:
    from tests.conftest import write_jsonl
    from tests.security.conftest import git, rows

    write_jsonl(project / "data" / "triage" / "test.jsonl", [{**r, "customer": "cus-00500"} for r in rows(3, 500)])
    commit_all(project, "main: a test split")
    git(project, "branch", "-f", "main", "HEAD")
    append_rows(project / "data" / "triage" / "train.jsonl",
                [triage_row(61, "a different ticket about the mobile app crashing", customer="cus-00500")])
    commit_all(project, "pr: a row of a test customer")
    code, out, report = _check(project, "group_split")
    assert code == 100, out
    found = [(f["split"], f["row"]) for f in report["findings"] if f["check"] == "group_split"]
    assert found == [("train", 11)]
