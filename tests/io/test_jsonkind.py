"""The one JSON-type rule (gate.io.jsonkind) and the two refinements its callers add on top of it."""

from __future__ import annotations

import json

import pytest

from gate.io.jsonkind import json_kind


@pytest.mark.parametrize("text,kind", [
    ("true", "boolean"), ("5", "integer"), ("10.0", "number"), ("1e3", "number"), ('"x"', "string"),
    ("null", "null"), ("[1]", "array"), ('{"a": 1}', "object"),
])
def test_the_type_as_written(text, kind):
    assert json_kind(json.loads(text)) == kind


def test_contract_init_tells_timestamps_apart_and_types_only_scalars():
    from gate.contract.init import _kind

    assert _kind("2024-05-01T10:00:00") == "datetime" and _kind("2024-x") == "string"
    assert [_kind(v) for v in (True, 3, 3.0, None, [1], {})] == ["boolean", "integer", "number", "other", "other",
                                                                   "other"]


def test_the_tool_scorer_names_every_json_type():
    from gate.score.scorers.tools import _json_kind

    assert [_json_kind(v) for v in (True, 3, 3.0, None, [1], {})] == ["boolean", "integer", "number", "null",
                                                                        "array", "object"]
