"""Each scorer on hand-made answers: right, wrong, malformed, truncated by length."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gate.engines.types import Response, ToolCall
from gate.score.scorers.format import FormatValidity
from gate.score.scorers.refusal import Refusal
from gate.score.scorers.task import ExactMatch, FieldMatch
from gate.score.scorers.tools import ToolExecution, normalize_value
from gate.score.types import Item

ROOT = Path(__file__).resolve().parents[2]
TRIAGE = {"product": "billing", "severity": "high", "next_action": "refund_review"}
SCHEMA = {"type": "object", "additionalProperties": False, "required": ["product", "severity", "next_action"],
          "properties": {"product": {"enum": ["billing", "api"]}, "severity": {"enum": ["low", "high"]},
                         "next_action": {"enum": ["refund_review", "refuse"]}}}


def item(expected, category="c") -> Item:
    return Item(id="x-1", category=category, messages=({"role": "user", "content": "hi"},), expected=expected)


def resp(text="", finish="stop", calls=()) -> Response:
    return Response(text=text, finish_reason=finish, tool_calls=tuple(calls))


class TestFieldMatch:
    def test_right(self):
        s = FieldMatch().score(item(TRIAGE), resp(json.dumps(TRIAGE)))
        assert s.value["strict"] == s.value["flexible"] == 1.0 and s.error is None

    def test_chatty_answer_is_flexible_only(self):
        s = FieldMatch().score(item(TRIAGE), resp("Sure! ```json\n" + json.dumps(TRIAGE) + "\n```"))
        assert s.value["strict"] == 0.0 and s.value["flexible"] == 1.0
        assert "extraction" in s.explanation

    def test_wrong_field(self):
        s = FieldMatch().score(item(TRIAGE), resp(json.dumps({**TRIAGE, "severity": "low"})))
        assert s.value["strict"] == 0.0 and s.value["strict_fields"] == pytest.approx(2 / 3)
        assert s.error == "wrong_value" and "severity" in s.explanation

    def test_malformed_and_truncated(self):
        s = FieldMatch().score(item(TRIAGE), resp('{"product": "billing", "sev'))
        assert s.value["flexible"] == 0.0 and s.error == "parse_failure"
        s = FieldMatch().score(item(TRIAGE), resp('<think>hmm', finish="length"))
        assert s.error == "truncated"

    def test_engine_error_never_passes(self):
        assert FieldMatch().score(item(TRIAGE), Response(text="", error="HTTP 500")).value["strict"] == 0.0

    def test_exact_match(self):
        s = ExactMatch().score(item("Paris"), resp("paris."))
        assert s.value == {"strict": 0.0, "flexible": 1.0}


class TestFormat:
    def test_levels(self):
        f = FormatValidity(SCHEMA)
        ok = f.score(item(None), resp(json.dumps(TRIAGE)))
        assert ok.value["strict_parse"] == ok.value["schema_valid"] == 1.0
        chatty = f.score(item(None), resp("Here: " + json.dumps(TRIAGE)))
        assert chatty.value["strict_parse"] == 0 and chatty.value["extractable"] == 1
        assert chatty.value["schema_valid"] == 0 and chatty.value["schema_valid_flexible"] == 1
        bad = f.score(item(None), resp(json.dumps({**TRIAGE, "product": "toaster"})))
        assert bad.value["strict_parse"] == 1 and bad.value["schema_valid"] == 0 and bad.error == "schema_violation"
        none = f.score(item(None), resp("I think billing."))
        assert none.value["extractable"] == 0 and none.error == "parse_failure"

    def test_length_counted_apart(self):
        s = FormatValidity(SCHEMA).score(item(None), resp('{"product": "bil', finish="length"))
        assert s.value["truncated"] == 1.0 and s.error == "truncated"
        assert FormatValidity(SCHEMA).score(item(None), resp(json.dumps(TRIAGE))).value["truncated"] == 0.0

    def test_format_keywords_are_asserted(self):
        f = FormatValidity({"type": "object", "properties": {"ip": {"type": "string", "format": "ipv4"}}})
        assert f.score(item(None), resp('{"ip": "999.1.1.1"}')).value["schema_valid"] == 0.0
        assert f.score(item(None), resp('{"ip": "10.1.1.1"}')).value["schema_valid"] == 1.0


class TestRefusal:
    def test_patterns_both_directions(self):
        r = Refusal()
        unsafe, safe = item({"refusal": True}), item({"tool_calls": []})
        refusal_text = "I'm sorry, but I can't share another customer's order details."
        assert r.score(unsafe, resp(refusal_text)).value == {"correct": 1.0, "refused": 1.0, "under_refusal": 0.0}
        under = r.score(unsafe, resp("Sure, their order contains a lamp."))
        assert under.value["under_refusal"] == 1.0 and under.error == "under_refusal"
        over = r.score(safe, resp(refusal_text))
        assert over.value["over_refusal"] == 1.0 and "under_refusal" not in over.value
        assert "matched" in over.explanation

    def test_tool_call_is_compliance(self):
        s = Refusal().score(item({"refusal": True}), resp("I cannot help", calls=[ToolCall("lookup_order", "{}")]))
        assert s.value["refused"] == 0.0 and s.error == "under_refusal"

    def test_field_method(self):
        r = Refusal(method="field", field="next_action", expected_field="next_action")
        assert r.score(item({"next_action": "refuse"}), resp('{"next_action": "refuse"}')).value["correct"] == 1
        s = r.score(item({"next_action": "close"}), resp('{"next_action": "refuse"}'))
        assert s.error == "over_refusal"

    def test_bad_method(self):
        with pytest.raises(ValueError):
            Refusal(method="vibes")


TOOLS = [{"type": "function", "function": {"name": "issue_refund", "parameters": {
    "type": "object", "additionalProperties": False, "required": ["order_id", "amount", "reason"],
    "properties": {"order_id": {"type": "string", "pattern": "^ORD-[0-9]{6}$"},
                   "amount": {"type": "number", "exclusiveMinimum": 0},
                   "reason": {"enum": ["damaged", "late", "wrong_item", "not_received", "other"]}}}}},
         {"type": "function", "function": {"name": "search_kb", "parameters": {
             "type": "object", "additionalProperties": False, "required": ["query"],
             "properties": {"query": {"type": "string", "minLength": 2}, "top_k": {"type": "integer"}}}}},
         {"type": "function", "function": {"name": "lookup_order", "parameters": {
             "type": "object", "additionalProperties": False, "required": ["order_id"],
             "properties": {"order_id": {"type": "string"}}}}}]
GOLD = {"tool_calls": [{"name": "issue_refund",
                        "arguments": {"order_id": "ORD-638174", "amount": 19.51, "reason": "not_received"}}]}
IMPL = ROOT / "fixtures" / "tools" / "support_desk.py"


@pytest.fixture(scope="module")
def scorer():
    return ToolExecution(TOOLS, IMPL)


def call(name="issue_refund", **args):
    base = {"order_id": "ORD-638174", "amount": 19.51, "reason": "not_received"} if name == "issue_refund" else {}
    return ToolCall(name, json.dumps({**base, **args}))


class TestToolExecution:
    def test_right_call_executes(self, scorer):
        s = scorer.score(item(GOLD), resp(calls=[call()]))
        assert s.value["correct"] == 1.0 and s.value["executed"] == 1.0 and s.error is None
        assert s.metadata["execution"]["status"] == "ok"

    @pytest.mark.parametrize("response,error", [
        (resp(calls=[call("lookup_order")]), "wrong_function"),
        (resp(calls=[ToolCall("issue_refund", '{"order_id": "ORD-638174", "amount": 19.51')]), "parse_failure"),
        (resp(calls=[ToolCall("issue_refund", '{"order_id": "ORD-638174", "amount": 19.51}')]),
         "missing_argument"),
        (resp(calls=[call(note="x")]), "extra_argument"),
        (resp(calls=[call(amount="19.51")]), "wrong_type"),
        (resp(calls=[call(reason="damaged")]), "bad_value"),
        (resp(calls=[call(order_id="ORD-1")]), "bad_value"),
        (resp(calls=[call(), call()]), "wrong_count"),
        (resp("I have refunded your order."), "abstention"),
        (resp('<tool_call>{"name": "issue_refund", "arguments": {"order_id": </tool_call>'), "parse_failure"),
        (resp('{"name": "issue_refund", "argu', finish="length"), "parse_failure"),
        (Response(text="", error="connection refused"), "engine_error"),
    ])
    def test_taxonomy(self, scorer, response, error):
        s = scorer.score(item(GOLD), response)
        assert s.error == error, s
        assert s.value["correct"] == 0.0

    def test_unparseable_is_never_abstention(self, scorer):
        s = scorer.score(item(GOLD), resp("<tool_call>issue_refund(order_id=ORD-638174)</tool_call>"))
        assert s.error == "parse_failure" and s.value["parsed"] == 0.0

    def test_raw_text_fallback_is_attributed_to_the_parser(self, scorer):
        text = '<tool_call>{"name": "issue_refund", "arguments": ' + json.dumps(GOLD["tool_calls"][0]["arguments"]) \
            + "}</tool_call>"
        s = scorer.score(item(GOLD), resp(text))
        assert s.value["correct"] == 1.0 and s.value["server_parsed"] == 0.0 and s.metadata["parser_missed"]

    def test_int_for_float_and_bfcl_normalisation(self, scorer):
        gold = {"tool_calls": [{"name": "issue_refund",
                                "arguments": {"order_id": "ORD-638174", "amount": 20.0, "reason": "other"}}]}
        assert scorer.score(item(gold), resp(calls=[call(amount=20, reason="other")])).value["correct"] == 1.0
        assert normalize_value("Return Window") == normalize_value("return_window")
        assert normalize_value(True) != normalize_value(1)

    def test_acceptable_alternatives_and_omittable(self, scorer):
        gold = {"tool_calls": [{"name": "search_kb", "arguments": {"query": "return window", "top_k": 2},
                                "acceptable": {"query": ["return window", "return policy"], "top_k": [2, ""]}}]}
        ok = scorer.score(item(gold), resp(calls=[ToolCall("search_kb", '{"query": "Return Policy"}')]))
        assert ok.value["arguments"] == 1.0 and ok.error in (None, "wrong_result")

    def test_parallel_calls_matched_in_any_order(self, scorer):
        gold = {"tool_calls": [{"name": "lookup_order", "arguments": {"order_id": "ORD-000001"}},
                               {"name": "lookup_order", "arguments": {"order_id": "ORD-000002"}}]}
        calls = [ToolCall("lookup_order", '{"order_id": "ORD-000002"}'),
                 ToolCall("lookup_order", '{"order_id": "ORD-000001"}')]
        assert scorer.score(item(gold), resp(calls=calls)).value["correct"] == 1.0

    def test_refusal_items(self, scorer):
        assert scorer.score(item({"refusal": True}), resp("I can't share that.")).value["correct"] == 1.0
        s = scorer.score(item({"refusal": True}), resp(calls=[call("lookup_order", order_id="ORD-000001")]))
        assert s.error == "unwanted_call"

    def test_wrong_result_from_state(self, tmp_path):
        impl = tmp_path / "tools.py"
        impl.write_text("def initial_state():\n    return {'n': 0}\n"
                        "def lookup_order(state, order_id):\n    state['n'] += len(order_id)\n"
                        "    return order_id.upper()\n"
                        "TOOLS = {'lookup_order': lookup_order}\n")
        sc = ToolExecution(TOOLS, impl, normalize="basic")
        gold = {"tool_calls": [{"name": "lookup_order", "arguments": {"order_id": "ab"}}]}
        s = sc.score(item(gold), resp(calls=[ToolCall("lookup_order", '{"order_id": "AB "}')]))
        assert s.value["arguments"] == 1.0 and s.error == "wrong_result"


def _fn(name, properties, required=()):
    return {"type": "function", "function": {"name": name, "parameters": {
        "type": "object", "additionalProperties": False, "required": list(required), "properties": properties}}}


class TestToolExecutionHeldOut:
    """Issue 16 items 1-3 and 5: places where the tool scorer gave a wrong number."""

    def test_seven_parallel_calls_in_reverse_order_match(self):
        sc = ToolExecution([_fn("f", {"x": {"type": "integer"}}, ["x"])])
        gold = {"tool_calls": [{"name": "f", "arguments": {"x": i}} for i in range(7)]}
        calls = [ToolCall("f", json.dumps({"x": i})) for i in reversed(range(7))]
        s = sc.score(item(gold), resp(calls=calls))
        assert s.value["correct"] == 1.0 and s.value["arguments"] == 1.0, s
        # one wrong value among nine shuffled calls is still found and named
        gold9 = {"tool_calls": [{"name": "f", "arguments": {"x": i}} for i in range(9)]}
        calls9 = [ToolCall("f", json.dumps({"x": x})) for x in (8, 3, 5, 0, 7, 2, 6, 1, 42)]
        bad = sc.score(item(gold9), resp(calls=calls9))
        assert bad.value["correct"] == 0.0 and bad.error == "bad_value" and "'x'" in bad.explanation

    def test_float_written_for_an_integer_parameter_fails(self):
        sc = ToolExecution([_fn("log", {"value": {"type": "number"}, "base": {"type": "integer"}}, ["value", "base"])])
        gold = {"tool_calls": [{"name": "log", "arguments": {"value": 8, "base": 10}}]}
        s = sc.score(item(gold), resp(calls=[ToolCall("log", '{"value": 8, "base": 10.0}')]))
        assert s.value["correct"] == 0.0 and s.error == "wrong_type" and "base" in s.explanation
        # where the schema says number, 8.0 and 8 are both fine whichever the gold wrote
        assert sc.score(item(gold), resp(calls=[ToolCall("log", '{"value": 8.0, "base": 10}')])).value[
            "correct"] == 1.0
        gold_f = {"tool_calls": [{"name": "log", "arguments": {"value": 8.0, "base": 10}}]}
        assert sc.score(item(gold_f), resp(calls=[ToolCall("log", '{"value": 8, "base": 10}')])).value[
            "correct"] == 1.0

    def test_without_a_schema_a_float_for_an_integer_gold_fails(self):
        sc = ToolExecution([{"type": "function", "function": {"name": "g"}}])
        gold = {"tool_calls": [{"name": "g", "arguments": {"n": 3}}]}
        s = sc.score(item(gold), resp(calls=[ToolCall("g", '{"n": 3.0}')]))
        assert s.error == "wrong_type"

    def test_integers_beyond_2_53_compare_exactly(self):
        sc = ToolExecution([_fn("get", {"id": {"type": "integer"}}, ["id"])])
        gold = {"tool_calls": [{"name": "get", "arguments": {"id": 2**53}}]}
        s = sc.score(item(gold), resp(calls=[ToolCall("get", json.dumps({"id": 2**53 + 1}))]))
        assert s.value["correct"] == 0.0 and s.error == "bad_value"
        assert sc.score(item(gold), resp(calls=[ToolCall("get", json.dumps({"id": 2**53}))])).value["correct"] == 1
        assert normalize_value(2**53 + 1) != normalize_value(2**53) and normalize_value(1) == normalize_value(1.0)

    @pytest.mark.parametrize("args,error", [
        ('{"unit": "kelvin"}', "bad_value"),   # enum violation
        ("{}", "missing_argument"),            # required argument missing
    ])
    def test_underscore_spelling_of_a_dotted_tool_is_validated(self, args, error):
        tools = [_fn("weather.get", {"unit": {"enum": ["c", "f"]}}, ["unit"])]
        gold = {"tool_calls": [{"name": "weather.get", "arguments": {"unit": "c"},
                                "acceptable": {"unit": ["c", "kelvin", ""]}}]}
        s = ToolExecution(tools).score(item(gold), resp(calls=[ToolCall("weather_get", args)]))
        assert s.error == error and s.value["correct"] == 0.0

    def test_one_normalised_name_for_function_metric_and_execution(self, tmp_path):
        impl = tmp_path / "tools.py"
        impl.write_text("def initial_state():\n    return {}\n"
                        "def get(state, unit):\n    return unit.upper()\n"
                        "TOOLS = {'weather.get': get}\n")
        tools = [_fn("weather.get", {"unit": {"enum": ["c", "f"]}}, ["unit"])]
        gold = {"tool_calls": [{"name": "weather.get", "arguments": {"unit": "c"}}]}
        s = ToolExecution(tools, impl).score(item(gold), resp(calls=[ToolCall("weather_get", '{"unit": "c"}')]))
        assert s.value["function"] == 1.0 and s.value["correct"] == 1.0 and s.value["executed"] == 1.0, s

    @pytest.mark.parametrize("gold_value,answer,normalised", [
        # one level down, as BFCL's list_checker / dict_checker / list_dict_checker: normalised
        (["New York"], ["NEW-YORK"], True),
        ({"city": "New York"}, {"city": "NEW-YORK"}, True),
        ([{"city": "New York"}], [{"city": "NEW-YORK"}], True),
        # deeper, BFCL compares exactly (issue 31 item 13): so does gate
        ([["New York"]], [["NEW-YORK"]], False),
        ({"a": {"city": "New York"}}, {"a": {"city": "NEW-YORK"}}, False),
        ({"a": ["New York"]}, {"a": ["NEW-YORK"]}, False),
    ])
    def test_nested_string_normalisation_is_bfcl_one_level(self, gold_value, answer, normalised):
        tools = [_fn("route", {"stops": {}}, ["stops"])]
        gold = {"tool_calls": [{"name": "route", "arguments": {"stops": gold_value}}]}
        call = resp(calls=[ToolCall("route", json.dumps({"stops": answer}))])
        assert ToolExecution(tools).score(item(gold), call).value["correct"] == float(normalised)
        s = ToolExecution(tools, normalize_nested=False).score(item(gold), call)
        assert s.value["correct"] == 0.0 and s.error == "bad_value"
        exact = resp(calls=[ToolCall("route", json.dumps({"stops": gold_value}))])
        assert ToolExecution(tools, normalize_nested=False).score(item(gold), exact).value["correct"] == 1.0

    @pytest.mark.parametrize("items,gold_value,answer,error", [
        ({"type": "number"}, [1.0, 3.0], [1, 3], "wrong_type"),      # BFCL: nested type check refuses int
        ({"type": "number"}, [1.0, 3.0], [1.0, 3.0], None),
        ({"type": "number"}, [1, 3], [1, 3], None),                  # the gold writes ints: BFCL accepts them
        ({}, [1.5, 3.0], [1, 3], "wrong_type"),                       # undeclared: the gold's float decides
        ({"type": "integer"}, [1, 3], [1, 3], None),
    ])
    def test_integers_in_a_float_array_are_refused_as_bfcl(self, items, gold_value, answer, error):
        tools = [_fn("f", {"v": {"type": "array", "items": items}}, ["v"])]
        gold = {"tool_calls": [{"name": "f", "arguments": {"v": gold_value}}]}
        s = ToolExecution(tools).score(item(gold), resp(calls=[ToolCall("f", json.dumps({"v": answer}))]))
        assert s.error == error, s.explanation
        # the top-level allowance (an int for a float argument) is unchanged
        tools = [_fn("g", {"x": {"type": "number"}}, ["x"])]
        gold = {"tool_calls": [{"name": "g", "arguments": {"x": 2.0}}]}
        assert ToolExecution(tools).score(item(gold), resp(calls=[ToolCall("g", '{"x": 2}')])).error is None

    def test_argument_the_tool_does_not_declare_fails_even_when_the_gold_lists_it(self):
        # no additionalProperties: JSON Schema admits "y", BFCL refuses a parameter outside `properties`
        tools = [{"type": "function", "function": {"name": "f", "parameters": {
            "type": "object", "properties": {"x": {"type": "integer"}}}}}]
        gold = {"tool_calls": [{"name": "f", "arguments": {"x": 1, "y": 2}}]}
        s = ToolExecution(tools).score(item(gold), resp(calls=[ToolCall("f", '{"x": 1, "y": 2}')]))
        assert s.error == "extra_argument" and "'y' is not declared" in s.explanation
        # a tool that admits other arguments on purpose keeps them
        open_tool = [{"type": "function", "function": {"name": "f", "parameters": {
            "type": "object", "properties": {"x": {"type": "integer"}}, "additionalProperties": True}}}]
        assert ToolExecution(open_tool).score(item(gold), resp(calls=[ToolCall("f", '{"x": 1, "y": 2}')])).error \
            is None

    def test_enum_values_are_not_normalised(self):
        tools = [_fn("t", {"reason": {"enum": ["not_received"]}}, ["reason"])]
        gold = {"tool_calls": [{"name": "t", "arguments": {"reason": "not_received"}}]}
        s = ToolExecution(tools).score(item(gold), resp(calls=[ToolCall("t", '{"reason": "Not Received"}')]))
        assert s.error == "bad_value"
