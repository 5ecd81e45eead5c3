"""Each kind of template finding, on a small conversation that has it, for both templates where they differ."""

from __future__ import annotations

import copy
import json

import pytest

from gate.template import toolcalls
from gate.template.audit import Auditor, encode_conversation
from gate.template.options import TemplateOptions
from gate.template.tokenizer import load_chat_tokenizer
from tests.template.conftest import CONVERSATION, WEATHER_TOOL, tokenizer_copy


def _rules(res):
    return [i.rule for i in res.issues]


def _call(name, args, cid="call_1"):
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def _earlier_reasoning():
    msgs = copy.deepcopy(CONVERSATION)
    msgs[4]["reasoning_content"] = "The tool says 20, so say 20C."  # before the last user message
    return msgs


def test_reasoning_of_an_earlier_turn_is_dropped_by_default(glm, chatml):
    res = encode_conversation(glm, _earlier_reasoning(), [WEATHER_TOOL])
    assert _rules(res) == ["template.reasoning_dropped"]
    assert res.issues[0].field == "messages[4].reasoning_content"
    assert "clear_thinking" in res.issues[0].message and "keep_thinking: true" in res.issues[0].message
    res = encode_conversation(chatml, _earlier_reasoning(), [WEATHER_TOOL])
    assert _rules(res) == ["template.reasoning_dropped"]
    assert "no keep-thinking switch" in res.issues[0].message


def test_keep_thinking_uses_the_template_switch(glm, chatml):
    keep = TemplateOptions(keep_thinking=True)
    res = encode_conversation(glm, _earlier_reasoning(), [WEATHER_TOOL], keep)
    assert res.issues == []
    assert "<|assistant|><think>The tool says 20, so say 20C.</think>It is 20C.<|user|>" in res.text
    trained = glm.backend.decode([i for i, m in zip(res.ids, res.mask, strict=True) if m], skip_special_tokens=False)
    assert "The tool says 20, so say 20C.</think>It is 20C.<|user|>" in trained
    # ChatML-tiny has no switch: still dropped, and the message says so
    res = encode_conversation(chatml, _earlier_reasoning(), [WEATHER_TOOL], keep)
    assert _rules(res) == ["template.reasoning_dropped"] and "no keep-thinking switch" in res.issues[0].message


def test_a_tool_result_after_a_user_turn_does_not_render_with_glm(glm, chatml):
    msgs = copy.deepcopy(CONVERSATION)
    msgs.insert(3, {"role": "user", "content": "still there?"})
    res = encode_conversation(glm, msgs, [WEATHER_TOOL])
    assert res.status == "error" and _rules(res) == ["template.render_error"]
    assert res.issues[0].message.startswith("TemplateError: a tool result must follow")
    assert encode_conversation(chatml, copy.deepcopy(msgs), [WEATHER_TOOL]).issues == []


def test_string_arguments_are_converted_to_dicts_as_engines_do(glm):
    """GLM templates iterate arguments.items(); the audit converts JSON strings as vLLM does, so this renders."""
    res = encode_conversation(glm, copy.deepcopy(CONVERSATION), [WEATHER_TOOL])
    assert "<arg_key>city</arg_key><arg_value>Paris</arg_value>" in res.text and res.issues == []


def test_two_assistant_turns_in_a_row_have_no_stop_with_glm(glm, chatml):
    msgs = copy.deepcopy(CONVERSATION)
    msgs.insert(2, {"role": "assistant", "content": "Let me check."})
    res = encode_conversation(glm, msgs, [WEATHER_TOOL])
    assert _rules(res) == ["template.stop"] and res.issues[0].field == "messages[2]"
    assert "'<|assistant|>'" in res.issues[0].message
    assert encode_conversation(chatml, copy.deepcopy(msgs), [WEATHER_TOOL]).issues == []  # <|im_end|> closes it


def test_control_tokens_in_text(glm, chatml):
    msgs = copy.deepcopy(CONVERSATION)
    msgs[1]["content"] = "your bot wrote <tool_call>get_weather and stopped"
    for ct in (glm, chatml):
        res = encode_conversation(ct, copy.deepcopy(msgs), [WEATHER_TOOL])
        assert _rules(res) == ["template.control_tokens"] and res.issues[0].field == "messages[1].content"
        assert "'<tool_call>'" in res.issues[0].message
    inline = copy.deepcopy(CONVERSATION)
    inline[6] = {"role": "assistant", "content": "<think>polite</think>You're welcome."}  # a convention, not text
    res = encode_conversation(glm, inline, [WEATHER_TOOL])
    assert res.issues == [] and "<think>polite</think>You're welcome." in res.text


def test_tool_call_roundtrip_through_the_serving_parser(glm, chatml):
    msgs = copy.deepcopy(CONVERSATION)
    msgs[2]["tool_calls"] = [_call("get_weather", {"city": "Paris ", "days": 3})]  # trailing space
    res = encode_conversation(glm, msgs, [WEATHER_TOOL])
    assert _rules(res) == ["template.tool_roundtrip"]
    assert "'city'" in res.issues[0].message and "whitespace stripped" in res.issues[0].message
    assert encode_conversation(chatml, copy.deepcopy(msgs), [WEATHER_TOOL]).issues == []  # JSON keeps it
    # a string that looks like a number survives when the schema types it as a string, not otherwise
    msgs[2]["tool_calls"] = [_call("get_weather", {"city": "1984", "days": 3})]
    assert encode_conversation(glm, copy.deepcopy(msgs), [WEATHER_TOOL]).issues == []
    loose = copy.deepcopy(WEATHER_TOOL)
    loose["function"]["parameters"]["properties"]["city"] = {}
    res = encode_conversation(glm, copy.deepcopy(msgs), [loose])
    assert _rules(res) == ["template.tool_roundtrip"] and "comes back as int" in res.issues[0].message


def test_calls_the_contract_rejects_are_left_to_it(glm, tool_contract):
    """An argument off its schema (amount as a string) would not round-trip either: one problem, one finding."""
    a = Auditor(glm, TemplateOptions(), tool_contract)
    row = json.loads(_faulty_row("tool.arguments.schema"))
    assert [r.issues for r in a.audit([(1, row)])] == [[]]
    bad = {"messages": [{"role": "bot", "content": "hi"}]}  # structure: the contract's finding
    assert a.audit([(2, bad)])[0].status == "skipped"


def _faulty_row(rule):
    from tests.conftest import FIXTURES

    faults = json.loads((FIXTURES / "tool-use-faulty" / "FAULTS.json").read_text())
    f = next(f for f in faults if f["rule"] == rule and "amount" in f["note"])
    return (FIXTURES / "tool-use-faulty" / f"{f['split']}.jsonl").read_text().splitlines()[f["row"] - 1]


def test_generation_blocks_that_train_user_text_are_found(tmp_path):
    def wrap_user(src):
        old = "{{- '<|im_start|>user\\n' + visible_text(m.content) + '<|im_end|>\\n' -}}"
        assert old in src
        return src.replace(old, "{%- generation -%}" + old + "{%- endgeneration -%}")
    ct = load_chat_tokenizer(tokenizer_copy(tmp_path, "chatml-tiny", wrap_user))
    opts = TemplateOptions(stop_policy="next_role")
    res = encode_conversation(ct, copy.deepcopy(CONVERSATION), [WEATHER_TOOL], opts)
    assert "template.mask" in _rules(res)
    issue = next(i for i in res.issues if i.rule == "template.mask")
    assert issue.field == "messages[1].content" and "user text carry loss" in issue.message


def test_a_template_that_rewrites_earlier_turns_breaks_prefix_masks(tmp_path):
    """A header that depends on the whole conversation changes with every prefix: NeMo AutoModel raises on it."""
    def count_turns(src):
        header = "{{- '<|system|>' + (messages | length | string) + ' turns' -}}"
        return src.replace("[gMASK]<sop>", "[gMASK]<sop>" + header, 1)
    ct = load_chat_tokenizer(tokenizer_copy(tmp_path, "glm-tiny", count_turns))
    res = encode_conversation(ct, copy.deepcopy(CONVERSATION), [WEATHER_TOOL])
    assert _rules(res) == ["template.mask"] and "rewrites earlier turns" in res.issues[0].message
    assert res.issues[0].field == "messages[1]"  # the first prefix that disagrees: the first two messages


def test_only_assistant_boundaries_matter(chatml):
    """ChatML groups consecutive tool results under one turn (it looks ahead), but the prefixes that bound
    assistant turns still agree, so a prefix mask is right."""
    msgs = copy.deepcopy(CONVERSATION)
    msgs[2]["tool_calls"].append(_call("get_weather", {"city": "Lyon"}, "call_2"))
    msgs.insert(4, {"role": "tool", "tool_call_id": "call_2", "content": '{"temp": 18}'})
    res = encode_conversation(chatml, copy.deepcopy(msgs), [WEATHER_TOOL], TemplateOptions(mask="prefix"))
    gen = encode_conversation(chatml, msgs, [WEATHER_TOOL])
    assert res.issues == [] and gen.issues == []
    assert res.ids == gen.ids and res.mask == gen.mask  # both: the answer and its <|im_end|>, not the newline


def test_generation_mask_needs_generation_blocks(glm):
    from gate.errors import GateError

    with pytest.raises(GateError, match="no \\{% generation %\\} block"):
        Auditor(glm, TemplateOptions(mask="generation"))


# ---------------------------------------------------------------------------------------------- parsers

SCHEMAS = toolcalls.schemas_of([WEATHER_TOOL])


def test_glm_parser_reads_values_as_vllm_does():
    text = ("</think>ok<tool_call>get_weather<arg_key>city</arg_key><arg_value> Paris </arg_value>"
            "<arg_key>days</arg_key><arg_value>3</arg_value><arg_key>opts</arg_key><arg_value>{\"a\": [1]}"
            "</arg_value></tool_call><tool_call>get_weather</tool_call>")
    assert toolcalls.parse("glm47", text, SCHEMAS) == [("get_weather", {"city": "Paris", "days": 3,
                                                                         "opts": {"a": [1]}}),
                                                       ("get_weather", {})]
    newline = "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>"
    assert toolcalls.parse("glm45", newline, SCHEMAS) == [("get_weather", {"city": "Paris"})]
    assert toolcalls.parse("glm45", "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value>"
                                    "</tool_call>", SCHEMAS) == [("", None)]  # GLM-4.5's parser on 4.7 output


def test_hermes_parser_and_differences():
    text = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call><tool_call>{bad'
    got = toolcalls.parse("hermes", text, {})
    assert got == [("get_weather", {"city": "Paris"}), ("", None)]
    assert toolcalls.first_difference([("get_weather", {"city": "Paris"})], got[:1]) is None
    assert "1 call(s) rendered, 2 parsed back" == toolcalls.first_difference([got[0]], got)
    assert "comes back as float" in toolcalls.first_difference([("f", {"x": True})], [("f", {"x": 1.0})])
    assert "argument keys differ" in toolcalls.first_difference([("f", {"x": 1})], [("f", {"y": 1})])
