"""Issue 27 item 7, patterns: every regular expression a contract or scorecard brings is matched by RE2, in time
linear in the text, so no shape (listed or not) can make a check backtrack without bound; what RE2 cannot run
(lookaround, backreference) is refused at load in one line naming the file, line and field."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
import yaml

from gate.errors import GateError
from tests.conftest import CONTRACTS, ROOT, gate_inprocess, triage_row, write_jsonl

#: exponential on a backtracking engine (Python `re`, `regress`), each with a 50k-character line that triggers it
SHAPES = {
    r"^(a+)+$": "a" * 50_000 + "!",
    r"^(\w+\s?)*$": "a" * 50_000 + "!",
    r"^(a|a)*$": "a" * 50_000 + "!",
    r"^(a|aa)+$": "a" * 50_000 + "!",
    r"(\d|\d\d)*x": "1" * 50_000,
}


def _contract(tmp_path: Path, raw: dict) -> Path:
    raw["evaluation_sets"] = []
    p = tmp_path / "c.yaml"
    p.write_text(yaml.safe_dump(raw, sort_keys=False))
    return p


def _triage() -> dict:
    return yaml.safe_load((CONTRACTS / "triage.yaml").read_text())


def _with_everywhere(shape: str) -> dict:
    """The shape as a field pattern, a refusal rule, an output-schema pattern and a patternProperties key."""
    raw = _triage()
    raw["fields"]["customer"]["pattern"] = shape
    raw["refusal"]["when_user_matches"].append(shape)
    schema = raw["output"]["schema"]
    schema["properties"]["note"] = {"type": "string", "pattern": shape}
    schema["patternProperties"] = {shape: {"type": "string"}}
    return raw


@pytest.mark.parametrize("shape", list(SHAPES))
def test_exponential_shapes_run_in_linear_time_in_gate_check(tmp_path: Path, shape: str) -> None:
    """Before: `^(a+)+$` and `^(\\w+\\s?)*$` were refused by a static screen, and `^(a|a)*$`, `^(a|aa)+$`,
    `(\\d|\\d\\d)*x` loaded and then ran for hours on one 50k-character line. Now each loads and every path that
    reads it (great-expectations field rule, refusal rule, output schema pattern and patternProperties) answers
    at once."""
    adv = SHAPES[shape]
    p = _contract(tmp_path, _with_everywhere(shape))
    answer = {"product": "billing", "severity": "low", "next_action": "close", "note": adv, adv: "x"}
    data = tmp_path / "ds"
    write_jsonl(data / "train.jsonl", [triage_row(1, text=adv, answer=answer, customer=adv), triage_row(2)])
    t0 = time.monotonic()
    code, text = gate_inprocess("check", str(data), "-c", str(p), "--checks", "contract", "--no-db",
                                "-o", str(tmp_path / "rep"), "-q", "-j", "1")
    seconds = time.monotonic() - t0
    assert code == 100, text[-2000:]  # row 1 breaks rules; nothing hung and nothing crashed
    rules = {(f["row"], f["rule"]) for f in json.loads((tmp_path / "rep" / "report.json").read_text())["findings"]}
    assert (2, "field.pattern") in rules  # the well-formed row's customer does not match the shape
    assert seconds < 30, seconds  # the old engines did not finish in hours; most of this is importing GX


@pytest.mark.parametrize("shape", list(SHAPES))
def test_each_matcher_takes_under_a_second_on_the_attack(shape: str) -> None:
    """The engines themselves, timed: the contract/scorer dialect, a JSON Schema `pattern`, `patternProperties`
    (also as read by `additionalProperties` and `unevaluatedProperties`, jsonschema's own use Python's `re`)."""
    from gate.contract import schemas
    from gate.contract.patterns import compile_pattern
    from gate.engines.types import Response
    from gate.score.scorers.refusal import Refusal

    adv = SHAPES[shape]
    checks = [
        lambda: compile_pattern(shape).search(adv),
        lambda: Refusal(patterns=[shape]).detect(Response(text=adv)),
        lambda: schemas.validator({"type": "string", "pattern": shape}).is_valid(adv),
        lambda: schemas.validator({"patternProperties": {shape: {"type": "integer"}},
                                   "additionalProperties": False}).is_valid({adv: 1}),
        lambda: schemas.validator({"patternProperties": {shape: {"type": "integer"}},
                                   "unevaluatedProperties": False}).is_valid({adv: 1}),
    ]
    for i, run in enumerate(checks):
        t0 = time.monotonic()
        run()
        assert time.monotonic() - t0 < 1, (i, shape)


def test_unevaluated_properties_still_reads_pattern_properties() -> None:
    from gate.contract import schemas

    v = schemas.validator({"patternProperties": {"^x-": {"type": "integer"}}, "unevaluatedProperties": False})
    assert v.is_valid({"x-a": 1}) and not v.is_valid({"y": 1}) and not v.is_valid({"x-a": "s"})


@pytest.mark.parametrize("where", ["field", "refusal", "expect_text", "output_pattern", "pattern_properties",
                                   "tool_parameters"])
@pytest.mark.parametrize("pattern", [r"^(?=.*\d)[a-z0-9]+$", r"^(a)\1$"])
def test_what_re2_cannot_run_is_refused_in_one_line(tmp_path: Path, where: str, pattern: str) -> None:
    """A lookahead or a backreference cannot run in linear time: refused at load and by `gate contract lint`,
    one line naming the file, the line and the field."""
    from gate.contract import load_contract

    raw = _triage()
    if where == "field":
        raw["fields"]["customer"]["pattern"] = pattern
    elif where == "refusal":
        raw["refusal"]["when_user_matches"].append(pattern)
    elif where == "expect_text":
        raw["refusal"]["expect_text_matches"] = pattern
    elif where == "output_pattern":
        raw["output"]["schema"]["properties"]["note"] = {"type": "string", "pattern": pattern}
    elif where == "pattern_properties":
        raw["output"]["schema"]["patternProperties"] = {pattern: {"type": "string"}}
    else:
        raw = yaml.safe_load((CONTRACTS / "tool-use.yaml").read_text())
        raw["tools"]["catalogue"][0]["parameters"]["properties"]["q"] = {"type": "string", "pattern": pattern}
    p = _contract(tmp_path, raw)
    t0 = time.monotonic()
    with pytest.raises(GateError) as exc:
        load_contract(p)
    msg = str(exc.value)
    assert time.monotonic() - t0 < 2 and "\n" not in msg and f"{p}:" in msg and "RE2" in msg, msg
    code, text = gate_inprocess("contract", "lint", str(p))
    lines = text.strip().splitlines()
    assert code == 1 and len(lines) == 1 and "RE2" in lines[0], text


def test_scorecard_refusal_pattern_re2_cannot_run_is_refused(tmp_path: Path) -> None:
    from gate.score.scorecard import ScorecardError, load_scorecard

    shutil.copytree(ROOT / "scorecards" / "suites", tmp_path / "scorecards" / "suites")
    shutil.copytree(ROOT / "contracts", tmp_path / "contracts")
    card = tmp_path / "scorecards" / "triage.yaml"
    text = (ROOT / "scorecards" / "triage.yaml").read_text()
    old = "      method: field          # the triage answer says it refuses in its own field\n"
    assert old in text
    card.write_text(text.replace(old, "      method: field\n      patterns: ['(?<!not )sorry']\n"))
    with pytest.raises(ScorecardError) as exc:
        load_scorecard(card)
    assert "\n" not in str(exc.value) and "patterns" in str(exc.value) and "RE2" in str(exc.value)


def test_normal_patterns_validate_and_reject_as_before(tmp_path: Path) -> None:
    """`^tri-\\d{6}$` and `^[a-z]+(-[a-z0-9]+)*$` (the static screen's accepted shapes) keep their meaning: the
    same rows pass and the same rows are flagged, in fields, refusal rules and output schemas."""
    raw = _triage()
    raw["fields"]["id"]["pattern"] = r"^tri-\d{6}$"
    raw["fields"]["customer"]["pattern"] = r"^[a-z]+(-[a-z0-9]+)*$"
    raw["refusal"]["when_user_matches"].append(r"^[a-z]+(-[a-z0-9]+)*$")
    raw["output"]["schema"]["properties"]["note"] = {"type": "string", "pattern": r"^[a-z]+(-[a-z0-9]+)*$"}
    p = _contract(tmp_path, raw)
    ok = {"product": "billing", "severity": "low", "next_action": "close"}
    rows = [
        triage_row(1, customer="acme-eu-2", answer={**ok, "note": "ok-1"}),
        triage_row(2, customer="Acme"),  # capital: no match
        triage_row(3, customer="acme--eu"),  # empty segment
        triage_row(4, id="tri-12345"),  # five digits
        triage_row(5, id="xtri-123456"),
        triage_row(6, text="reset-my-password", customer="acme"),  # refusal due, answer does not refuse
        triage_row(7, customer="acme", answer={**ok, "note": "Not-ok"}),
        triage_row(8, customer="acme", text="Reset-my-password please"),  # no refusal due
    ]
    for r in rows:
        if r["customer"].startswith("cus-"):
            r["customer"] = "acme"
    data = tmp_path / "ds"
    write_jsonl(data / "train.jsonl", rows)
    code, text = gate_inprocess("check", str(data), "-c", str(p), "--checks", "contract", "--no-db",
                                "-o", str(tmp_path / "rep"), "-q", "-j", "1")
    assert code == 100, text[-2000:]
    found = sorted((f["row"], f["field"] or "", f["rule"])
                   for f in json.loads((tmp_path / "rep" / "report.json").read_text())["findings"])
    assert [(line, rule) for line, _, rule in found if rule == "field.pattern"] == [
        (2, "field.pattern"), (3, "field.pattern"), (4, "field.pattern"), (5, "field.pattern")]
    assert [line for line, _, rule in found if rule == "refusal"] == [6], found
    assert [line for line, _, rule in found if rule == "output.schema"] == [7], found


@pytest.mark.parametrize("pattern,text,matches", [
    (r"^\u00e9$", "é", True), (r"^\u{1F600}$", "\U0001F600", True), (r"^\ud83d\ude00$", "\U0001F600", True),
    (r"^a.b$", "a\rb", False), (r"^a.b$", "a\u2028b", False), (r"^a.b$", "a-b", True),
    (r"^\s$", "\u00a0", True), (r"^[\s]$", "\ufeff", True), (r"^\S$", "\u3000", False), (r"^[^\s]$", "x", True),
    (r"^\p{Letter}+$", "héllo", True), (r"^\p{digit}+$", "\u09ea", True), (r"^\P{sc=Greek}$", "α", False),
    (r"^\d$", "\u0967", False), (r"^abc$", "abc\n", False),
])
def test_schema_patterns_keep_their_ecma_262_meaning_on_re2(pattern: str, text: str, matches: bool) -> None:
    """RE2 spells some ECMA-262 constructs differently or not at all (`\\u`, long property names) and gives `.`
    and `\\s` other sets: the translation keeps what the schema author meant (regress agrees on each case)."""
    from gate.contract import schemas

    assert (schemas.schema_regex(pattern).search(text) is not None) is matches
    assert (schemas.ecma_regex(pattern).find(text) is not None) is matches  # the ECMA-262 engine's answer


def test_python_end_of_text_escape_is_read_as_re2s() -> None:
    from gate.contract.patterns import compile_pattern, problem

    assert problem(r"^tri-\d{6}\Z") is None
    rx = compile_pattern(r"^tri-\d{6}\Z")
    assert rx.search("tri-123456") and not rx.search("tri-123456\n") and not rx.search("tri-1234567")
