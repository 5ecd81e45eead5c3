"""Gold tool calls checked against the tool schemas when the scorecard is loaded (issue 16 item 4): an `acceptable`
alternative outside the declared enum or of the wrong type can never be reached, so it is a warning naming file,
line and item, and an error (exit 1, one line) under `--strict`."""

from __future__ import annotations

import json
import logging

import pytest

from gate.errors import InputError
from gate.score.scorecard import load_scorecard
from gate.score.scorers.tools import gold_problems

TOOLS = [{"type": "function", "function": {"name": "weather.get", "parameters": {
    "type": "object", "additionalProperties": False, "required": ["city", "unit"],
    "properties": {"city": {"type": "string"}, "unit": {"enum": ["c", "f"]}, "days": {"type": "integer"}}}}}]


def gold(**call):
    return {"tool_calls": [{"name": "weather.get", "arguments": {"city": "Oslo", "unit": "c"}, **call}]}


@pytest.mark.parametrize("expected,field,words", [
    (gold(acceptable={"unit": ["c", "kelvin"]}), "expected.tool_calls[0].acceptable.unit[1]", "is not one of"),
    (gold(acceptable={"days": [3, "3"]}), "expected.tool_calls[0].acceptable.days[1]", "is not of type"),
    (gold(acceptable={"days": [3, 3.0]}), "expected.tool_calls[0].acceptable.days[1]", "is not of type"),
    (gold(acceptable={"unit": ["c", ""]}), "expected.tool_calls[0].acceptable.unit[1]", "schema requires"),
    (gold(arguments={"city": "Oslo", "unit": "C"}), "expected.tool_calls[0].arguments.unit", "is not one of"),
    (gold(arguments={"city": "Oslo", "unit": "c", "lang": "en"}), "expected.tool_calls[0].arguments.lang",
     "can never match"),
    ({"tool_calls": [{"name": "weather.lookup", "arguments": {}}]}, "expected.tool_calls[0].name", "not among"),
])
def test_unreachable_gold_values(expected, field, words):
    problems = gold_problems(TOOLS, expected)
    assert [f for f, _ in problems] == [field], problems
    assert words in problems[0][1]


def test_reachable_gold_has_no_problem():
    assert gold_problems(TOOLS, gold(acceptable={"unit": ["c", "f"], "days": [3, ""]})) == []
    assert gold_problems(TOOLS, {"refusal": True}) == [] and gold_problems(None, gold()) == []
    # the underscore spelling of a dotted tool is the same tool
    assert gold_problems(TOOLS, {"tool_calls": [{"name": "weather_get",
                                                 "arguments": {"city": "Oslo", "unit": "f"}}]}) == []


def _scorecard(tmp_path, rows):
    suite = tmp_path / "suite.jsonl"
    suite.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    card = tmp_path / "card.yaml"
    card.write_text("name: t\nversion: '1'\nsuites: [{name: s, path: suite.jsonl}]\n"
                    f"prompt: {{tools: {json.dumps(TOOLS)}}}\n"
                    "decoding: {temperature: 0, max_tokens: 8}\n"
                    "scorers: [{name: calls, type: tool_execution, options: {execute: false}}]\n", encoding="utf-8")
    return card, suite


ROWS = [{"id": "t-1", "category": "c", "messages": [{"role": "user", "content": "hi"}], "expected": gold()},
        {"id": "t-2", "category": "c", "messages": [{"role": "user", "content": "hi"}],
         "expected": gold(acceptable={"unit": ["c", "kelvin"]})}]


def test_scorecard_load_warns_with_file_line_and_item(tmp_path, caplog):
    card, suite = _scorecard(tmp_path, ROWS)
    with caplog.at_level(logging.WARNING, logger="gate.score.scorecard"):
        sc = load_scorecard(card)
    (w,) = sc.warnings
    # the value is shown as a snippet: masked by the common-word allowlist like every snippet (gate.pii.redact)
    assert w.startswith(f"{suite}:2: expected.tool_calls[0].acceptable.unit[1]: item t-2: xxxx for weather.get.unit")
    assert any(w in r.getMessage() for r in caplog.records)


def test_scorecard_load_strict_refuses(tmp_path):
    card, suite = _scorecard(tmp_path, ROWS)
    with pytest.raises(InputError) as ei:
        load_scorecard(card, strict=True)
    assert (ei.value.file, ei.value.line, ei.value.field) == (str(suite), 2,
                                                              "expected.tool_calls[0].acceptable.unit[1]")
    assert load_scorecard(tmp_path / "card.yaml", strict=False).warnings  # the same file loads without --strict


def test_gate_score_strict_exits_1_with_one_line(tmp_path):
    from tests.conftest import run_gate

    card, suite = _scorecard(tmp_path, ROWS)
    res = run_gate("score", "no-such-model", "-s", str(card), "--strict", "--db", str(tmp_path / "g.duckdb"),
                   "-o", str(tmp_path / "out"), timeout=120)
    assert res.returncode == 1, res.stderr
    (line,) = res.stderr.strip().splitlines()
    assert "suite.jsonl:2: expected.tool_calls[0].acceptable.unit[1]: item t-2" in line
    assert not (tmp_path / "out").exists() and not (tmp_path / "g.duckdb").exists()


def test_gold_value_outside_the_declared_format_is_flagged():
    """Issue 31 item 11: scoring asserts `format`, so the load-time check must too."""
    tools = [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "required": ["d"], "properties": {"d": {"type": "string", "format": "date"}}}}}]
    expected = {"tool_calls": [{"name": "f", "arguments": {"d": "2020-12-25"},
                                "acceptable": {"d": ["2020-12-25", "Dec 25, 2020"]}}]}
    problems = gold_problems(tools, expected)
    assert [f for f, _ in problems] == ["expected.tool_calls[0].acceptable.d[1]"], problems
    assert "is not a 'date'" in problems[0][1]


def test_gold_argument_the_tool_does_not_declare_is_flagged():
    """Issue 31 item 12: no additionalProperties, so JSON Schema admits 'y'; BFCL and the scorer refuse it."""
    tools = [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"x": {"type": "integer"}}}}}]
    problems = gold_problems(tools, {"tool_calls": [{"name": "f", "arguments": {"x": 1, "y": 2}}]})
    assert [f for f, _ in problems] == ["expected.tool_calls[0].arguments.y"], problems
    assert "not declared by f" in problems[0][1]
    assert gold_problems(tools, {"tool_calls": [{"name": "f", "arguments": {"x": 1}}]}) == []
