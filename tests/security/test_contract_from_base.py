"""Issue 27 item 1: under `--changed-since` / `--base` the rules come from the base's contract; a pull request that
loosens its contract gets a failing `contract_change` finding per loosening (file:line), a tightening applies at
once, and a reviewed loosening passes only with `--allow-contract-change`."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from tests.conftest import CONTRACTS, gate_inprocess, triage_row
from tests.security.conftest import AWS_KEY, append_rows, commit_all, edit_contract, git

FAST = ("--checks", "secret,length", "--no-db", "-o", "rep", "-q")


def _check(repo: Path, *args: str) -> tuple[int, str, dict]:
    cwd = os.getcwd()
    os.chdir(repo)
    try:
        code, out = gate_inprocess("check", "data/triage", "-c", "contracts/triage.yaml", *args, *FAST)
    finally:
        os.chdir(cwd)
    rep = repo / "rep" / "report.json"
    return code, out, json.loads(rep.read_text()) if rep.is_file() else {}


def _result(report: dict, name: str) -> dict:
    res = next(r for r in report["checks"] if r["name"] == name)
    return {**res, "findings": [f for f in report["findings"] if f["check"] == name]}


def _loosen_and_leak(repo: Path) -> None:
    edit_contract(repo, "max_findings: {contract: 0, exact_duplicate: 0, length: 0}",
                  "max_findings: {contract: 100, pii: 100, secret: 100}")
    append_rows(repo / "data" / "triage" / "train.jsonl",
                [triage_row(50, f"my key is {AWS_KEY} please rotate it for the billing account")])
    commit_all(repo, "pr")


@pytest.mark.parametrize("flag", ["--changed-since", "--base"])
def test_raised_thresholds_do_not_let_a_secret_through(project: Path, flag: str) -> None:
    _loosen_and_leak(project)
    code, out, report = _check(project, flag, "main")
    assert code == 100, out
    change = _result(report, "contract_change")
    assert change["status"] == "fail"
    where = {(f["split"], f["row"], f["field"]) for f in change["findings"]}
    assert ("contracts/triage.yaml", 70, "thresholds.max_findings.secret") in where
    assert ("contracts/triage.yaml", 70, "thresholds.max_findings.pii") in where
    assert _result(report, "secret")["status"] == "fail"  # judged by the base's threshold (0), not the PR's (100)


def test_a_reviewed_loosening_passes_only_with_the_flag(project: Path) -> None:
    _loosen_and_leak(project)
    code, out, report = _check(project, "--base", "main", "--allow-contract-change")
    assert code == 0, out
    change = _result(report, "contract_change")
    assert change["status"] == "warn"
    assert all("allowed by --allow-contract-change" in f["message"] for f in change["findings"])


def test_a_tightening_applies_at_once(project: Path) -> None:
    edit_contract(project, "max_row_chars: 6000", "max_row_chars: 300")
    append_rows(project / "data" / "triage" / "train.jsonl",
                [triage_row(51, "the widget on the billing page is broken again " * 8)])
    commit_all(project, "pr")
    code, out, report = _check(project, "--base", "main")
    assert code == 100, out
    assert _result(report, "length")["status"] == "fail"
    change = _result(report, "contract_change")
    assert change["status"] == "pass" and not change["findings"]
    assert change["details"]["tightenings"] == ["limits.max_row_chars lowered"]


def test_an_evaluation_set_that_loses_items_is_a_loosening(project: Path) -> None:
    suite = project / "scorecards" / "suites" / "triage-heldout.jsonl"
    suite.write_text("".join(suite.read_text().splitlines(keepends=True)[1:]))
    append_rows(project / "data" / "triage" / "train.jsonl", [triage_row(52)])
    commit_all(project, "pr")
    code, out, report = _check(project, "--base", "main")
    assert code == 100, out
    rules = {f["field"] for f in _result(report, "contract_change")["findings"]}
    assert "evaluation_sets.scorecards/suites/triage-heldout.jsonl" in rules


def test_a_contract_new_since_the_base_fails_closed(project: Path) -> None:
    git(project, "mv", "contracts/triage.yaml", "contracts/other.yaml")
    commit_all(project, "pr")
    cwd = os.getcwd()
    os.chdir(project)
    try:
        code, out = gate_inprocess("check", "data/triage", "-c", "contracts/other.yaml", "--base", "main", *FAST)
    finally:
        os.chdir(cwd)
    assert code == 1
    assert out.strip().count("\n") == 0 and "does not exist at `main`" in out and "contracts/other.yaml" in out


BASE = yaml.safe_load((CONTRACTS / "triage.yaml").read_text())


def _edit(path: str, value: object) -> dict:
    doc = json.loads(json.dumps(BASE))
    *parents, last = path.split(".")
    node = doc
    for p in parents:
        node = node.setdefault(p, {})
    if value is None:
        del node[last]
    else:
        node[last] = value
    return doc


LOOSENINGS = [
    ("thresholds.max_findings.length", 5),  # raised threshold
    ("thresholds.max_duplicate_rate", 0.2),
    ("fields.id.pattern", None),  # a removed rule
    ("fields.id.pattern", "^.*$"),  # a changed pattern (direction unknown: loosening)
    ("fields.id.required", False),
    ("fields.customer", None),  # a dropped field
    ("sources", ["email", "chat", "web_form", "phone", "fax"]),  # a widened allowed set
    ("sources", None),
    ("messages.max_messages", 60),
    ("messages.system_prompt", "optional"),
    ("limits.max_row_chars", None),  # a removed limit
    ("limits.max_message_chars", 9000),  # a relaxed limit
    ("evaluation_sets", []),  # a dropped evaluation set
    ("refusal", None),  # a removed rule section
    ("output.schema", {"type": "object"}),  # a changed schema
    ("allow_extra_fields", True),
    ("checks", {"pii": {"entities": ["EMAIL_ADDRESS"]}}),  # options whose default is not known here: loosening
    ("checks", {"near_duplicate": {"threshold": 0.95}}),
    ("checks", {"contamination": {"eval_splits": []}}),
    ("checks", {"secret": {"detect_secrets": False}}),
    ("checks", {"future_check": {"anything": 1}}),  # a key the table does not know
    # more entity types that fail only beside a direct identifier
    ("checks", {"pii": {"quasi_identifiers": ["PERSON", "LOCATION", "NRP", "DATE_TIME", "EMAIL_ADDRESS"]}}),
]


@pytest.mark.parametrize(("path", "value"), LOOSENINGS, ids=[f"{p}={v}" for p, v in LOOSENINGS])
def test_every_kind_of_loosening_is_found(path: str, value: object) -> None:
    from gate.contract.trust import compare_contracts

    base = {**BASE, "allow_extra_fields": False} if path == "allow_extra_fields" else BASE
    changes = compare_contracts(base, _edit(path, value))
    assert changes and any(c.direction == "loosening" for c in changes), changes


TIGHTENINGS = [
    ("thresholds.max_findings.length", None),  # back to the default 0: same
    ("limits.max_row_chars", 100),
    ("languages", []),
    ("fields.source.allowed", ["email"]),
    ("fields.source.max_length", 20),
    ("messages.min_messages", 3),
    ("evaluation_sets", ["../scorecards/suites/triage-heldout.jsonl", "more.jsonl"]),
    ("fields.note", {"type": "string", "max_length": 100}),  # a declared field (undeclared ones are allowed)
    ("description", "anything"),
    ("sources", ["phone", "web_form", "chat", "email"]),  # the same set in another order
    ("messages.roles", ["assistant", "user", "system"]),
    ("checks", {"pii": {"quasi_identifiers": []}}),  # every entity an error
    ("checks", {"pii": {"quasi_identifiers": ["PERSON", "LOCATION", "NRP", "DATE_TIME"]}}),  # the default, written
]


def test_a_pull_request_cannot_turn_its_stand_ins_back_into_warnings() -> None:
    """`checks.pii.stand_ins: error` refuses the row wording that makes a real value a warning ("For example,
    ..."): a pull request that sets it back to `warning`, or deletes it, loosens the base; setting it tightens."""
    from gate.contract.trust import compare_contracts

    strict = _edit("checks", {**(BASE.get("checks") or {}), "pii": {**((BASE.get("checks") or {}).get("pii") or {}),
                                                                  "stand_ins": "error"}})
    lax = json.loads(json.dumps(strict))
    lax["checks"]["pii"]["stand_ins"] = "warning"
    dropped = json.loads(json.dumps(strict))
    del dropped["checks"]["pii"]["stand_ins"]
    for pr in (lax, dropped):
        changes = compare_contracts(strict, pr)
        assert [c.direction for c in changes] == ["loosening"], changes
        assert changes[0].path[-1] == "stand_ins", changes
    assert not any(c.direction == "loosening" for c in compare_contracts(BASE, strict))


@pytest.mark.parametrize(("path", "value"), TIGHTENINGS, ids=[f"{p}={v}" for p, v in TIGHTENINGS])
def test_tightenings_and_neutral_edits_are_not_loosenings(path: str, value: object) -> None:
    from gate.contract.trust import compare_contracts

    changes = compare_contracts(BASE, _edit(path, value))
    assert not any(c.direction == "loosening" for c in changes), changes


def test_a_shared_service_is_not_sent_a_loosened_contract(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With GATE_URL the service checks with the contract it is sent: a loosening is refused before sending."""
    _loosen_and_leak(project)
    monkeypatch.setenv("GATE_URL", "http://127.0.0.1:9")  # nothing listens: a send would fail otherwise
    code, out, _ = _check(project, "--changed-since", "main")
    assert code == 1
    assert out.strip().count("\n") == 0 and "loosens `main`" in out and "contracts/triage.yaml:70" in out


def test_the_annotation_points_at_the_contract_line(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _loosen_and_leak(project)
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    code, out, _ = _check(project, "--base", "main")
    assert code == 100
    assert "::error file=contracts/triage.yaml,line=70,title=gate contract_change::" in out
