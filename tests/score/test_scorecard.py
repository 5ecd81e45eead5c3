"""Scorecards and suites load; bad input gives one line naming file, line and field."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gate.errors import GateError, InputError
from gate.score.scorecard import ScorecardError, load_scorecard, load_suite

ROOT = Path(__file__).resolve().parents[2]
CARDS = ROOT / "scorecards"


@pytest.mark.parametrize("name", ["triage", "tool-use"])
def test_shipped_scorecards_load(name):
    sc = load_scorecard(CARDS / f"{name}.yaml")
    assert len(sc.sha256) == 64 and sc.suites[0].items and len(sc.suites[0].sha256) == 64
    req = sc.request_for(sc.suites[0].items[0])
    assert req.temperature == 0.0 and req.seed == 1234 and req.messages[0]["role"] == "system"
    scorers = sc.build_scorers()
    assert all(s.primary in s.keys for s in scorers.values())
    assert sc.gates


def test_tool_use_tools_come_from_the_contract():
    sc = load_scorecard(CARDS / "tool-use.yaml")
    names = [t["function"]["name"] for t in sc.tools or ()]
    assert names == ["lookup_order", "issue_refund", "update_ticket", "search_kb", "create_return_label"]


def test_hash_ignores_comments_and_key_order(tmp_path):
    card = _copy(tmp_path, "triage")
    before = load_scorecard(card).sha256
    card.write_text("# a comment\n" + card.read_text())
    assert load_scorecard(card).sha256 == before
    card.write_text(card.read_text().replace("max_tokens: 128", "max_tokens: 129"))
    assert load_scorecard(card).sha256 != before


def _copy(tmp_path: Path, name: str) -> Path:
    shutil.copytree(CARDS / "suites", tmp_path / "scorecards" / "suites")
    shutil.copytree(ROOT / "contracts", tmp_path / "contracts")
    shutil.copytree(ROOT / "fixtures" / "tools", tmp_path / "fixtures" / "tools")
    dst = tmp_path / "scorecards" / f"{name}.yaml"
    shutil.copy(CARDS / f"{name}.yaml", dst)
    return dst


def _line_of(text: str, needle: str) -> int:
    return next(i for i, ln in enumerate(text.splitlines(), 1) if needle in ln)


@pytest.mark.parametrize("old,new,needle,message", [
    ("  max_tokens: 128", "  max_tokens: 128\n  temprature: 0.5", "temprature",
     "unknown key 'temprature' (did you mean"),
    ("    rule: superiority", "    rule: best_effort", "best_effort", "rule"),
    ("    margin: 0.02\n    test: paired_bootstrap", "    test: paired_bootstrap", "format-no-regression",
     "'margin' is a required property"),
    ("    metric: strict", "    metric: loose", "metric: loose", "has no metric 'loose'"),
    ("    scorer: task_success", "    scorer: task_sucess", "task_sucess", "no scorer named"),
    ("    options: {fields: [product, severity, next_action]}", "    options: {feilds: [product]}", "feilds",
     "unknown option 'feilds' for field_match (did you mean 'fields'?)"),
    ("path: suites/triage-heldout.jsonl", "path: suites/nope.jsonl", "nope.jsonl", "suite file not found"),
    ("  max_tokens: 128", "  max_tokens: 128\n  max_tokens: 64", "max_tokens: 64", "duplicate key"),
])
def test_bad_scorecard_names_the_line(tmp_path, old, new, needle, message):
    card = _copy(tmp_path, "triage")
    text = card.read_text()
    assert old in text
    text = text.replace(old, new, 1)
    card.write_text(text)
    with pytest.raises(ScorecardError) as exc:
        load_scorecard(card)
    line = str(exc.value)
    assert "\n" not in line and message in line, line
    assert line.startswith(f"{card}:{_line_of(text, needle)}:"), line


def test_bad_tool_scorer_option(tmp_path):
    card = _copy(tmp_path, "tool-use")
    card.write_text(card.read_text().replace("../fixtures/tools/support_desk.py", "../fixtures/tools/gone.py"))
    with pytest.raises(ScorecardError, match="tool implementation not found"):
        load_scorecard(card)


def test_pinned_suite_hash(tmp_path):
    card = _copy(tmp_path, "triage")
    card.write_text(card.read_text().replace("path: suites/triage-heldout.jsonl",
                                             "path: suites/triage-heldout.jsonl\n    sha256: '" + "0" * 64 + "'"))
    with pytest.raises(ScorecardError, match="suite file changed"):
        load_scorecard(card)


GOOD = {"id": "a", "category": "c", "messages": [{"role": "user", "content": "hi"}], "expected": {}}


@pytest.mark.parametrize("rows,line,message", [
    ([GOOD, "{not json"], 2, "malformed JSON"),
    ([GOOD, {**GOOD, "id": ""}], 2, "id: missing or empty id"),
    ([GOOD, {k: v for k, v in GOOD.items() if k != "id"}], 2, "id: missing or empty id"),
    ([GOOD, GOOD], 2, "id: duplicate id 'a' (first on line 1)"),
    ([{**GOOD, "category": None}], 1, "category: missing or empty category"),
    ([{**GOOD, "messages": []}], 1, "messages: messages must be a non-empty list"),
    ([{k: v for k, v in GOOD.items() if k != "expected"}], 1, "expected: missing expected"),
    ([[1, 2]], 1, "must be a JSON object"),
])
def test_bad_suite_rows(tmp_path, rows, line, message):
    p = tmp_path / "s.jsonl"
    p.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    with pytest.raises(InputError) as exc:
        load_suite(p)
    assert str(exc.value).startswith(f"{p}:{line}: ") and message in str(exc.value), str(exc.value)


def test_errors_are_gate_errors():
    assert issubclass(ScorecardError, GateError)
    with pytest.raises(ScorecardError, match="not found"):
        load_scorecard(CARDS / "missing.yaml")
