"""Tool calls and reasoning from raw text, as an engine returns them (gate.template.toolcalls.parse_tool_calls)."""

from __future__ import annotations

import json

from gate.template.toolcalls import detect_format, parse, parse_tool_calls, schemas_of, split_reasoning


def test_hermes_calls_are_parsed_and_removed_from_content():
    text = 'Sure.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
    content, calls = parse_tool_calls(text, "hermes")
    assert content == "Sure." and calls[0].name == "get_weather"
    assert json.loads(calls[0].arguments) == {"city": "Paris"}


def test_malformed_block_stays_in_the_text_so_it_is_a_parse_failure_not_an_abstention():
    text = '<tool_call>\n{"name": "get_weather", "arguments": {"city": \n</tool_call>'
    assert parse_tool_calls(text, "hermes") == (text, ())


def test_glm47_calls_with_typed_values():
    text = "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value>" \
           "<arg_key>days</arg_key><arg_value>3</arg_value></tool_call>"
    content, calls = parse_tool_calls(text, "glm47")
    assert content == "" and calls[0].name == "get_weather"
    assert json.loads(calls[0].arguments) == {"city": "Paris", "days": 3}


def test_format_detection_and_reasoning_split():
    assert detect_format("... <arg_key> ...") == "glm47" and detect_format("<tool_call>") == "hermes"
    assert detect_format("{{ messages }}") is None and detect_format(None) is None
    assert split_reasoning("<think>plan</think>\n\nanswer") == ("plan", "answer")
    assert split_reasoning("plan</think>answer") == ("plan", "answer")
    assert split_reasoning("no reasoning") == (None, "no reasoning")


def test_one_bad_block_fails_the_whole_answer_as_vllm_does():
    good = '<tool_call>\n{"name": "a", "arguments": {}}\n</tool_call>'
    text = good + '<tool_call>\n{"name": "b", "arguments": {"x": \n</tool_call>'
    assert parse_tool_calls(text, "hermes") == (text, ())
    assert parse("hermes", text, {}) == [("a", {}), ("", None)]  # the audit still sees which call failed


def test_hermes_edge_cases_follow_vllm():
    # a last call without its end tag counts when its JSON is complete (generation stopped at the tag)
    content, calls = parse_tool_calls('<tool_call>\n{"name": "a", "arguments": {"x": 1}}', "hermes")
    assert content == "" and [(c.name, json.loads(c.arguments)) for c in calls] == [("a", {"x": 1})]
    # arguments written as a JSON string stay a string: vLLM returns them so, and the scorer must see it
    _, calls = parse_tool_calls('<tool_call>{"name": "a", "arguments": "{\\"x\\": 1}"}</tool_call>', "hermes")
    assert json.loads(calls[0].arguments) == '{"x": 1}'
    # no arguments at all: vLLM fails the call (KeyError); "parameters" is accepted as the older spelling
    assert parse_tool_calls('<tool_call>{"name": "a"}</tool_call>', "hermes")[1] == ()
    _, calls = parse_tool_calls('<tool_call>{"name": "a", "parameters": {"x": 2}}</tool_call>', "hermes")
    assert json.loads(calls[0].arguments) == {"x": 2}
    assert parse_tool_calls("no calls here", "hermes") == ("no calls here", ())
    assert parse_tool_calls("<tool_call>a</tool_call>", None) == ("<tool_call>a</tool_call>", ())


def test_glm_values_are_typed_by_the_tool_schema():
    schemas = schemas_of([{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"code": {"type": "string"}, "n": {"type": "integer"}}}}}])
    text = "<tool_call>f<arg_key>code</arg_key><arg_value>42</arg_value><arg_key>n</arg_key><arg_value>7</arg_value>" \
           "</tool_call>"
    _, calls = parse_tool_calls(text, "glm47", schemas)
    assert json.loads(calls[0].arguments) == {"code": "42", "n": 7}  # a string stays a string, digits or not
    _, calls = parse_tool_calls(text, "glm47")
    assert json.loads(calls[0].arguments) == {"code": 42, "n": 7}  # without the schema it would be decoded
    assert parse_tool_calls("<tool_call><arg_key>k</arg_key><arg_value>v</arg_value></tool_call>", "glm47")[1] == ()
