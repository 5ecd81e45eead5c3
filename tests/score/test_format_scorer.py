"""The format scorer against the places it could be fooled (issue 16 items 7 to 11): formats that are named but
not asserted, text Python's json accepts but RFC 8259 does not, answers that are not objects, items the
validator cannot judge, and ECMA-262 patterns."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gate.contract.schemas import LOOSE_FORMATS, available_formats, default_formats
from gate.engines.types import Response
from gate.score.extract import flexible_json, strict_json
from gate.score.scorecard import ScorecardError, load_scorecard
from gate.score.scorers.format import FormatValidity
from gate.score.types import Item

ROOT = Path(__file__).resolve().parents[2]
ITEM = Item(id="x-1", category="c", messages=({"role": "user", "content": "hi"},), expected=None)


def score(schema, text, **opts):
    return FormatValidity(schema, **opts).score(ITEM, Response(text=text, finish_reason="stop"))


# -- 16.7: the formats asserted are the formats listed (default: every one with a checker)
def test_date_time_and_uri_are_asserted_by_default():
    assert {"date-time", "uri", "time", "duration", "uri-reference", "json-pointer"} <= set(available_formats())
    dt = {"type": "string", "format": "date-time"}
    assert score(dt, '"not a date"').value["schema_valid"] == 0.0
    assert score(dt, '"2024-02-29T10:00:00Z"').value["schema_valid"] == 1.0
    assert score({"type": "string", "format": "uri"}, '"not a uri"').value["schema_valid"] == 0.0


def test_loose_checkers_are_asserted_only_when_listed():
    email = {"type": "string", "format": "email"}
    s = score(email, '"nobody@"')  # jsonschema's email check is only "contains '@'": not trusted by default
    assert s.value["schema_valid"] == 1.0 and s.metadata["formats_not_asserted"] == ["email"]
    assert score(email, '"no at sign"', formats=["email"]).value["schema_valid"] == 0.0
    assert set(LOOSE_FORMATS) == set(available_formats()) - set(default_formats())


@pytest.mark.parametrize("fmt,text,valid", [
    ("uuid", "2eb8aa08-aa98-11ea-b4aa-73b441d16380", True),
    ("uuid", "2eb8aa08-aa98-11ea-b4aa-73b441d16380-", False),  # Python's UUID() takes it
    ("uuid", "{2eb8aa08-aa98-11ea-b4aa-73b441d16380}", False),
    ("date-time", "1998-12-31T23:59:60Z", True),  # a leap second (RFC 3339 5.7)
    ("date-time", "1998-12-31T15:59:60.123-08:00", True),  # the same second, in UTC-8
    ("date-time", "1998-12-31T23:58:60Z", False),  # second 60 at any other minute
    ("date-time", "2024-01-01T00:00:00Z\n", False),  # rfc3339-validator's `$` lets the newline through
    ("time", "23:59:60Z", True), ("time", "12:00:00Z\n", False),
])
def test_exact_uuid_and_rfc3339_edges(fmt, text, valid):
    assert score({"format": fmt}, f'"{text}"').value["schema_valid"] == float(valid)


def test_only_the_listed_formats_are_asserted_and_the_rest_are_named():
    schema = {"type": "object", "properties": {"at": {"type": "string", "format": "date-time"},
                                               "ip": {"type": "string", "format": "ipv4"}}}
    s = score(schema, '{"at": "not a date", "ip": "1.2.3.4"}', formats=["ipv4"])
    assert s.value["schema_valid"] == 1.0 and s.metadata["formats_not_asserted"] == ["date-time"]
    s = score(schema, '{"at": "2024-01-01T00:00:00Z", "ip": "999.1.1.1"}', formats=["ipv4"])
    assert s.value["schema_valid"] == 0.0
    assert "formats_not_asserted" not in score(schema, "{}").metadata


def _card(tmp_path: Path, options: str) -> Path:
    shutil.copytree(ROOT / "scorecards" / "suites", tmp_path / "scorecards" / "suites")
    shutil.copytree(ROOT / "contracts", tmp_path / "contracts")
    card = tmp_path / "scorecards" / "triage.yaml"
    text = (ROOT / "scorecards" / "triage.yaml").read_text()
    old = "    options: {schema_from_contract: ../contracts/triage.yaml}"
    assert old in text
    card.write_text(text.replace(old, options))
    return card


def test_scorecard_formats_option(tmp_path):
    card = _card(tmp_path, "    options: {schema: {type: string, format: date-time}, formats: [date-time, uri]}")
    sc = load_scorecard(card)
    fmt = sc.build_scorers()["format"]
    assert fmt.score(ITEM, Response(text='"yesterday"')).value["schema_valid"] == 0.0
    card = _card(tmp_path / "b", "    options: {schema: {type: string}, formats: [date-tme]}")
    with pytest.raises(ScorecardError, match=r"no checker for format\(s\) \['date-tme'\]"):
        load_scorecard(card)


# -- 16.8: strict is RFC 8259
@pytest.mark.parametrize("text,why", [
    ("NaN", "NaN is not JSON"), ("-Infinity", "-Infinity is not JSON"), ('{"x": Infinity}', "Infinity is not JSON"),
    ('{"a":"oops","a":1}', "duplicate key 'a'"), ('[{"k": 1, "k": 1}]', "duplicate key 'k'"),
])
def test_strict_refuses_what_rfc_8259_refuses_and_flexible_reports_it(text, why):
    assert strict_json(text) == (False, None)
    s = score({}, text)
    assert s.value["strict_parse"] == 0.0 and s.value["schema_valid"] == 0.0
    assert s.value["extractable"] == 1.0 and s.value["schema_valid_flexible"] == 1.0
    assert s.metadata["error"] == "not_strict" and s.metadata["not_strict"].startswith(why)


def test_strict_still_accepts_rfc_json():
    assert strict_json(' {"a": [1, 2.5e3, true, null, "\\u00e9"], "b": {"a": 1}} \n') == (
        True, {"a": [1, 2500.0, True, None, "é"], "b": {"a": 1}})
    assert strict_json("[" * 5000 + "]" * 5000) == (False, None)  # too deep: refused, not a RecursionError


# -- 16.9: the outermost JSON value of any type
def test_non_object_answers_are_extractable_and_flexibly_valid():
    arr = {"type": "array", "items": {"type": "integer"}}
    s = score(arr, "[1, 2]")
    assert s.value == {"strict_parse": 1.0, "extractable": 1.0, "truncated": 0.0, "schema_valid": 1.0,
                       "schema_valid_flexible": 1.0}
    s = score(arr, "Here you go:\n```json\n[1, 2]\n```")
    assert s.value["strict_parse"] == 0.0 and s.value["schema_valid_flexible"] == 1.0
    s = score({"type": "number"}, "<think>hmm</think>42")
    assert s.value["extractable"] == 1.0 and s.value["schema_valid_flexible"] == 1.0
    assert flexible_json('Sure: [{"a": 1}, {"a": 2}] done', want_object=False) == (True, [{"a": 1}, {"a": 2}])
    assert flexible_json('Sure: [{"a": 1}, {"a": 2}] done') == (True, {"a": 1})  # what object readers get


def test_unique_items_is_judged_on_the_whole_array():
    s = score({"uniqueItems": True}, 'The list: [{"foo":"bar"},{"foo":"bar"}]')
    assert s.value["extractable"] == 1.0 and s.value["schema_valid_flexible"] == 0.0


# -- 16.10: an item the scorer cannot judge is a failure with its reason
def test_a_schema_whose_validation_never_ends_is_refused_before_any_item_is_scored():
    """`$ref: '#'` resolves, but validating against it never ends: it used to reach scoring (each item then counted
    as unscorable); the schema check now refuses such a loop when the scorer is built (issue 27 item 12)."""
    from gate.contract.schemas import SchemaProblem

    with pytest.raises(SchemaProblem, match="loops back"):
        FormatValidity({"$ref": "#"})


def test_a_remote_ref_never_reaches_scoring():
    from gate.contract.schemas import SchemaProblem

    with pytest.raises(SchemaProblem, match="does not resolve inside this schema"):
        FormatValidity({"$ref": "http://localhost:1234/integer.json"})


# -- 16.11: ECMA-262 patterns
def test_ecma_patterns():
    letters = {"type": "string", "pattern": "^\\p{Letter}+$"}
    assert score(letters, '"héllo"').value["schema_valid"] == 1.0
    assert score(letters, '"h1"').value["schema_valid"] == 0.0
    assert score({"pattern": "^abc$"}, '"abc\\n"').value["schema_valid"] == 0.0  # Python's $ would match
    assert score({"pattern": "^\\d$"}, '"\u0967"').value["schema_valid"] == 0.0  # \d is ASCII in ECMA-262
    pp = {"type": "object", "patternProperties": {"^\\p{Lu}": {"type": "integer"}}, "additionalProperties": False}
    assert score(pp, '{"Ä": 1}').value["schema_valid"] == 1.0
    assert score(pp, '{"Ä": "x"}').value["schema_valid"] == 0.0
    assert score(pp, '{"a": 1}').value["schema_valid"] == 0.0
    assert score({"format": "regex"}, '"\\\\p{Letter}"').value["schema_valid"] == 1.0
    assert score({"format": "regex"}, '"(?P<x>a)"').value["schema_valid"] == 0.0


def test_a_pattern_that_is_not_ecma_262_is_refused_at_load(tmp_path):
    card = _card(tmp_path, "    options: {schema: {type: string, pattern: '(?P<name>a)'}}")
    text = card.read_text()
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if "(?P<name>a)" in ln)
    with pytest.raises(ScorecardError) as err:
        load_scorecard(card)
    assert str(err.value).startswith(f"{card}:{line}:") and "ECMA-262" in str(err.value)
