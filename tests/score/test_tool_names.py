"""Reports show the called and the expected function name unmasked (issue 16 item 6): function names are declared
configuration, not personal data, but the rest of an explanation is still masked like any model text."""

from __future__ import annotations

import json
from types import SimpleNamespace

from gate.engines.types import Response, ToolCall
from gate.score.run import _examples
from gate.score.scorers.tools import ToolExecution, mask_except
from gate.score.types import Item

LONG_A, LONG_B = "calculate_triangle_area_v2", "calculate_circle_area_v2"
TOOLS = [{"type": "function", "function": {"name": n, "parameters": {
    "type": "object", "properties": {"base": {"type": "integer"}, "email": {"type": "string", "format": "email"}}}}}
    for n in (LONG_A, LONG_B, "geo.lookup_place_by_code_2")]


def _score(name, args, want=LONG_B):
    it = Item("t-1", "c", ({"role": "user", "content": "hi"},), {"tool_calls": [{"name": want, "arguments": {}}]})
    return ToolExecution(TOOLS).score(it, Response(text="", tool_calls=(ToolCall(name, json.dumps(args)),)))


def test_both_names_in_full_in_the_explanation_and_the_report():
    s = _score(LONG_A, {})
    assert s.error == "wrong_function"
    assert f"called '{LONG_A}', expected '{LONG_B}'" in s.explanation
    sc = SimpleNamespace(scorers=[SimpleNamespace(name="calls", type="tool_execution")], tools=tuple(TOOLS))
    run = SimpleNamespace(spec=SimpleNamespace(role="candidate"), scores=[
        {"key": "correct", "scorer": "calls", "suite": "s", "item_id": "t-1", "value": 0.0,
         "explanation": s.explanation}])
    (ex,) = _examples(SimpleNamespace(scorecard=sc, runs=[run]))
    assert LONG_A in ex["explanation"] and LONG_B in ex["explanation"] and "***" not in ex["explanation"]
    # the underscore spelling of a dotted declared name is a declared name too
    s2 = _score("geo_lookup_place_by_code_2", {}, want=LONG_A)
    assert "geo_lookup_place_by_code_2" in s2.explanation


def test_model_values_in_an_explanation_are_still_masked():
    s = _score(LONG_B, {"base": "jane.doe@example.com"}, want=LONG_B)
    assert s.error == "wrong_type" and "is not of type" in s.explanation, s.explanation
    assert "jane.doe@example.com" not in s.explanation
    token = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"
    assert token not in mask_except(f"called {token}", {LONG_A})
    # a kept name inside a longer token does not split the token into pieces too short to mask
    assert token not in mask_except(f"x {token} y", {"live"})
    assert mask_except(f"called '{LONG_A}'", set()) == "called 'calc***'"  # what reports showed before
    assert mask_except(f"called '{LONG_A}', expected 'x'", {LONG_A}) == f"called '{LONG_A}', expected 'x'"
