"""Shared pieces for the template audit tests: the committed tiny tokenizers and a tool-use conversation."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gate.contract.model import TokenizerRef

TOKENIZERS = Path(__file__).resolve().parents[2] / "fixtures" / "tokenizers"

WEATHER_TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "Weather for a city.",
    "parameters": {"type": "object", "required": ["city"],
                   "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}}

# the GLM example of ../shared/notes/runners-and-serving.md §5: a tool call, its result, an answer, a second
# user turn and a final answer with reasoning
CONVERSATION = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "weather in Paris?"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "get_weather", "arguments": '{"city": "Paris", "days": 3}'}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": '{"temp": 20}'},
    {"role": "assistant", "content": "It is 20C."},
    {"role": "user", "content": "thanks"},
    {"role": "assistant", "content": "You're welcome.", "reasoning_content": "polite"},
]


def ref(name: str) -> TokenizerRef:
    return TokenizerRef(str(TOKENIZERS / name))


@pytest.fixture(scope="session")
def glm():
    from gate.template.tokenizer import load_chat_tokenizer

    return load_chat_tokenizer(ref("glm-tiny"))


@pytest.fixture(scope="session")
def chatml():
    from gate.template.tokenizer import load_chat_tokenizer

    return load_chat_tokenizer(ref("chatml-tiny"))


def tokenizer_copy(tmp_path: Path, name: str, edit=None, config=None) -> TokenizerRef:
    """A copy of a committed tokenizer with its chat template (and tokenizer_config.json) edited."""
    import json

    d = tmp_path / f"{name}-edited"
    shutil.copytree(TOKENIZERS / name, d)
    if edit:
        p = d / "chat_template.jinja"
        p.write_text(edit(p.read_text()))
    if config:
        p = d / "tokenizer_config.json"
        p.write_text(json.dumps(config(json.loads(p.read_text()))))
    return TokenizerRef(str(d))
