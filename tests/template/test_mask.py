"""The loss mask, token by token, on hand-checked conversations for both templates.

Each expected rendering is written out as consecutive pieces with the loss they must carry; every piece starts
or ends at a control token, so the tokens of the whole are the tokens of the pieces in order, and the mask is
each piece's flag repeated over its tokens. The GLM template is masked prefix by prefix (its turns end only
through the next role token, which is trained as the stop); the ChatML template from its {% generation %} blocks.
"""

from __future__ import annotations

import copy

from gate.template.audit import encode_conversation
from gate.template.options import TemplateOptions
from tests.template.conftest import CONVERSATION, WEATHER_TOOL


def _expect(ct, pieces: list[tuple[str, int]]) -> tuple[list[int], list[int]]:
    ids, mask = [], []
    for text, flag in pieces:
        piece = ct.encode_batch([text])[0].ids
        ids += piece
        mask += [flag] * len(piece)
    return ids, mask


def _tools_block_glm(ct) -> str:
    return ct.render([], [WEATHER_TOOL], {})  # "[gMASK]<sop>" and the tool catalogue, nothing trained


def test_glm_mask_multi_turn_tool_use_and_reasoning(glm):
    res = encode_conversation(glm, copy.deepcopy(CONVERSATION), [WEATHER_TOOL])
    assert res.issues == []
    head = _tools_block_glm(glm)
    assert head.startswith("[gMASK]<sop><|system|>\n# Tools")
    pieces = [
        (head, 0),
        ("<|system|>Be brief.", 0),
        ("<|user|>weather in Paris?", 0),
        ("<|assistant|>", 0),  # the generation prompt's role token is given, not learnt
        ("</think><tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value>"
         "<arg_key>days</arg_key><arg_value>3</arg_value></tool_call>", 1),
        ("<|observation|>", 1),  # GLM's stop after a tool call: the next role token
        ('<tool_response>{"temp": 20}</tool_response>', 0),
        ("<|assistant|>", 0),
        ("</think>It is 20C.", 1),
        ("<|user|>", 1),  # the stop after an answer
        ("thanks", 0),
        # reasoning after the last user message is kept; `<think>` belongs to the generation prompt (given when
        # thinking is on, so not learnt), the reasoning and `</think>` are learnt
        ("<|assistant|><think>", 0),
        ("polite</think>You're welcome.", 1),
        ("<|user|>", 1),  # appended: the final turn has no next role token of its own
    ]
    ids, mask = _expect(glm, pieces)
    assert res.text + "<|user|>" == "".join(p for p, _ in pieces)
    assert res.ids == ids
    assert res.mask == mask
    tokens = [glm.backend.id_to_token(i) for i in res.ids]
    trained = [t for t, m in zip(tokens, res.mask, strict=True) if m]
    assert trained[0] == "</think>" and trained[-1] == "<|user|>"
    assert tokens[-1] == "<|user|>" and res.n_tokens == len(ids) and res.n_loss == sum(mask)
    assert res.trained_stops == tuple(glm.token_id(t) for t in ("<|observation|>", "<|user|>", "<|user|>"))


def test_glm_mask_as_rendered_leaves_turns_without_a_stop(glm):
    """NeMo AutoModel trains exactly the rendered span: GLM turns then never learn to stop."""
    res = encode_conversation(glm, copy.deepcopy(CONVERSATION), [WEATHER_TOOL],
                              TemplateOptions(stop_policy="as_rendered"))
    assert [(i.rule, i.field) for i in res.issues] == [("template.stop", f"messages[{k}]") for k in (2, 4, 6)]
    assert "'<|observation|>'" in res.issues[0].message and "carries no loss" in res.issues[0].message
    assert res.ids[-1] != glm.token_id("<|user|>") and res.n_tokens == len(res.ids)  # nothing appended


def test_chatml_mask_from_generation_blocks(chatml):
    res = encode_conversation(chatml, copy.deepcopy(CONVERSATION), [WEATHER_TOOL])
    assert res.issues == []
    system = chatml.render([{"role": "system", "content": "Be brief."}], [WEATHER_TOOL], {})
    assert system.startswith("<|im_start|>system\nBe brief.\n\n# Tools") and system.endswith("<|im_end|>\n")
    pieces = [
        (system, 0),
        ("<|im_start|>user\nweather in Paris?<|im_end|>\n", 0),
        ("<|im_start|>assistant\n", 0),
        ('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}\n</tool_call><|im_end|>', 1),
        ("\n", 0),
        ('<|im_start|>user\n<tool_response>\n{"temp": 20}\n</tool_response><|im_end|>\n', 0),
        ("<|im_start|>assistant\n", 0),
        ("It is 20C.<|im_end|>", 1),
        ("\n", 0),
        ("<|im_start|>user\nthanks<|im_end|>\n", 0),
        ("<|im_start|>assistant\n", 0),
        ("<think>\npolite\n</think>\n\nYou're welcome.<|im_end|>", 1),
        ("\n", 0),
    ]
    ids, mask = _expect(chatml, pieces)
    assert res.text == "".join(p for p, _ in pieces)
    assert res.ids == ids
    assert res.mask == mask
    im_end = chatml.token_id("<|im_end|>")
    ends = [k for k in range(1, len(mask)) if mask[k - 1] == 1 and mask[k] == 0]
    assert [res.ids[k - 1] for k in ends] == [im_end] * 3  # every trained span ends in the stop token


def test_glm_and_chatml_agree_on_what_is_trained(glm, chatml):
    """The same conversation trains the same assistant text under both templates (markup aside)."""
    for ct in (glm, chatml):
        res = encode_conversation(ct, copy.deepcopy(CONVERSATION), [WEATHER_TOOL])
        text = ct.backend.decode([i for i, m in zip(res.ids, res.mask, strict=True) if m], skip_special_tokens=False)
        assert "It is 20C." in text and "You're welcome." in text and "polite" in text
        assert "Paris?" not in text and "thanks" not in text and '"temp"' not in text and "Be brief" not in text
