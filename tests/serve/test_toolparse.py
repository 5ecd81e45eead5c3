"""Tool calls and reasoning from raw text, in hermes (ChatML) and glm47 (GLM-4.7/5) formats."""

from __future__ import annotations

import json

from gate.serve.toolparse import detect_format, parse_tool_calls, split_reasoning


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
