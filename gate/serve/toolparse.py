"""Tool calls and reasoning parsed from raw generated text, in the format the chat template taught the model.

The embedded engine has no server-side parser, so it applies the same conventions vLLM's parsers do: `hermes`
(`<tool_call>\\n{"name": ..., "arguments": {...}}\\n</tool_call>`, ChatML/Qwen) and `glm47`
(`<tool_call>name<arg_key>k</arg_key><arg_value>v</arg_value></tool_call>`, GLM-4.7/5). A block that does not parse
is left in the text and not turned into a call: an unparseable answer must stay visible to the scorers as a parse
failure, never look like an abstention.
"""

from __future__ import annotations

import json
import re

from gate.serve.types import ToolCall

_HERMES = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.S)
_GLM = re.compile(r"<tool_call>([^<\n]*?)\s*((?:<arg_key>.*?</arg_key>\s*<arg_value>.*?</arg_value>\s*)*)</tool_call>",
                  re.S)
_GLM_ARG = re.compile(r"<arg_key>(.*?)</arg_key>\s*<arg_value>(.*?)</arg_value>", re.S)
_THINK = re.compile(r"^\s*(?:<think>)?(.*?)</think>", re.S)


def detect_format(chat_template: str | None) -> str | None:
    """'glm47' if the template writes `<arg_key>`, 'hermes' if it writes `<tool_call>`, else None (no tools)."""
    if not chat_template:
        return None
    if "<arg_key>" in chat_template:
        return "glm47"
    if "<tool_call>" in chat_template:
        return "hermes"
    return None


def split_reasoning(text: str) -> tuple[str | None, str]:
    """(`reasoning`, rest) when the text holds `</think>`; the generation prompt may already have opened `<think>`."""
    m = _THINK.match(text)
    if not m:
        return None, text
    return (m.group(1).strip() or None), text[m.end():].lstrip()


def parse_tool_calls(text: str, fmt: str | None) -> tuple[str, tuple[ToolCall, ...]]:
    """(content with parsed call blocks removed, calls). Unknown format → nothing parsed."""
    if fmt == "hermes":
        return _parse(text, _HERMES, _hermes_call)
    if fmt in ("glm47", "glm45"):
        return _parse(text, _GLM, _glm_call)
    return text, ()


def _parse(text: str, pattern: re.Pattern[str], build: object) -> tuple[str, tuple[ToolCall, ...]]:
    calls: list[ToolCall] = []
    kept: list[str] = []
    pos = 0
    for i, m in enumerate(pattern.finditer(text)):
        call = build(m, i)  # type: ignore[operator]
        if call is None:
            continue  # leave the malformed block in the content
        kept.append(text[pos:m.start()])
        pos = m.end()
        calls.append(call)
    kept.append(text[pos:])
    return "".join(kept).strip() if calls else text, tuple(calls)


def _hermes_call(m: re.Match[str], i: int) -> ToolCall | None:
    try:
        obj = json.loads(m.group(1))
    except json.JSONDecodeError:
        return None
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        return None
    args = obj.get("arguments", obj.get("parameters", {}))
    return ToolCall(name=obj["name"], arguments=json.dumps(args, ensure_ascii=False), id=f"call_{i}")


def _glm_call(m: re.Match[str], i: int) -> ToolCall | None:
    name = m.group(1).strip()
    if not name:
        return None
    args: dict[str, object] = {}
    for k, v in _GLM_ARG.findall(m.group(2)):
        try:  # GLM writes strings raw and everything else as JSON (`tojson`)
            args[k.strip()] = json.loads(v)
        except json.JSONDecodeError:
            args[k.strip()] = v
    return ToolCall(name=name, arguments=json.dumps(args, ensure_ascii=False), id=f"call_{i}")
