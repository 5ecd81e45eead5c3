"""Rows in the shape each runner's data loader reads, checked against what that loader accepts.

- `ms-swift` (4.x `MessagesPreprocessor`): `messages` in OpenAI form (assistant `tool_calls` become `tool_call`
  messages, `tool` results stay), `tools`, a per-message `loss` on assistant messages (bool), and per-row
  `chat_template_kwargs` when the template needs a switch. ms-swift keeps only `role`, `content`, `loss` and
  `loss_scale` of a message, so reasoning goes inline before the answer, spelt as the chat template renders it
  (`<think>R</think>A` for GLM, with newlines for Qwen3; `think_form`), because ms-swift's encoder keeps it
  literally; `content` must not be null (`""` for a message that only calls tools).
- `nemo-automodel` (`ChatDataset`): OpenAI `messages` (roles system/user/assistant/tool; `tool` messages need a
  non-empty `tool_call_id`; `reasoning_content` on assistant messages) and `tools`; with the chat template known,
  tool-call arguments also as objects (`ARGS_KEY`, for the patched template) and no reasoning the template does
  not render (AutoModel's prefix mask refuses a row whose earlier reasoning the full render drops).
- `hf`: a `datasets` DatasetDict per split (`save_to_disk`): every column of the row, messages with a fixed set of
  keys (content as a string, tool-call arguments as JSON strings, the OpenAI convention) and `tools` as a JSON
  string, so Arrow gets one schema whatever the tools' parameters look like.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import orjson

from gate.requests import EXPORT_FORMATS

FORMATS = EXPORT_FORMATS  # one list, which the CLI offers
ROLES = {"system", "user", "assistant", "tool"}


class Unrepresentable(ValueError):
    """The row cannot be written in the target format (the loader would reject or mangle it)."""


def _text(content: Any, i: int) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    raise Unrepresentable(f"messages[{i}].content is neither text nor text parts")


def _calls(m: dict[str, Any], i: int) -> list[dict[str, Any]]:
    out = []
    for j, tc in enumerate(m.get("tool_calls") or ()):
        fn = tc.get("function") if isinstance(tc, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not fn["name"]:
            raise Unrepresentable(f"messages[{i}].tool_calls[{j}] has no function name")
        args = fn.get("arguments")
        if isinstance(args, str):
            try:
                parsed = orjson.loads(args) if args.strip() else {}
            except orjson.JSONDecodeError:
                raise Unrepresentable(f"messages[{i}].tool_calls[{j}].function.arguments is not JSON") from None
        else:
            parsed = args
        if not isinstance(parsed, dict):
            raise Unrepresentable(f"messages[{i}].tool_calls[{j}].function.arguments is not a JSON object")
        out.append({"id": tc.get("id") or f"call_{j}", "type": "function",
                    "function": {"name": fn["name"], "arguments": orjson.dumps(parsed).decode()}})
    return out


def _messages(row: dict[str, Any]) -> list[dict[str, Any]]:
    msgs = row.get("messages")
    if not isinstance(msgs, list) or not msgs:
        raise Unrepresentable("no messages")
    for i, m in enumerate(msgs):
        if not isinstance(m, dict) or m.get("role") not in ROLES:
            raise Unrepresentable(f"messages[{i}].role is not one of {sorted(ROLES)}")
        if m["role"] == "tool" and not (isinstance(m.get("tool_call_id"), str) and m["tool_call_id"]):
            raise Unrepresentable(f"messages[{i}] is a tool result without a tool_call_id")
    return msgs


def _reasoning(m: dict[str, Any]) -> str | None:
    for key in ("reasoning_content", "reasoning", "thinking"):
        if isinstance(m.get(key), str) and m[key].strip():
            return m[key]
    return None


def _tools(row: dict[str, Any]) -> list[Any] | None:
    tools = row.get("tools")
    if isinstance(tools, str):
        try:
            tools = orjson.loads(tools)
        except orjson.JSONDecodeError:
            raise Unrepresentable("tools is not JSON") from None
    if tools is not None and not isinstance(tools, list):
        raise Unrepresentable("tools is not a list")
    return tools or None


#: How reasoning is written inline when no chat template says otherwise (Qwen3-style spelling).
DEFAULT_THINK = ("<think>\n", "\n</think>\n\n")


def think_form(render: Any) -> tuple[str, str]:
    """The chat template's own spelling of reasoning before an answer: `render(messages)` is the template; the text
    around two markers gives (before reasoning, between reasoning and answer), e.g. GLM's ('<think>', '</think>')
    where Qwen3 has newlines. ms-swift's encoder keeps inline reasoning literally, so the export must spell it as
    the template renders it, or training sees other tokens than the template (and serving) produce."""
    r_mark, a_mark = "GateReasoningMarker7f3a", "GateAnswerMarker7f3a"  # plain words: templates filter the rest
    msgs = [{"role": "user", "content": "q"}, {"role": "assistant", "reasoning_content": r_mark, "content": a_mark}]
    try:
        text = render(msgs)
    except Exception:  # a template that cannot render the probe: keep the default spelling
        return DEFAULT_THINK
    i, j = text.find(r_mark), text.find(a_mark)
    start = text.rfind("<think>", 0, i) if i >= 0 else -1
    if start < 0 or j < i:
        return DEFAULT_THINK
    return text[start:i], text[i + len(r_mark):j]


def to_ms_swift(row: dict[str, Any], template_kwargs: dict[str, Any] | None = None,
                think: tuple[str, str] = DEFAULT_THINK) -> dict[str, Any]:
    out_msgs = []
    for i, m in enumerate(_messages(row)):
        msg: dict[str, Any] = {"role": m["role"], "content": _text(m.get("content"), i)}
        if m["role"] == "assistant":
            r = _reasoning(m)
            if r is not None:
                msg["content"] = f"{think[0]}{r.strip()}{think[1]}{msg['content']}"
            calls = _calls(m, i)
            if calls:
                msg["tool_calls"] = calls
            msg["loss"] = m.get("weight", 1) != 0  # OpenAI fine-tuning `weight: 0` keeps a turn out of the loss
        elif m["role"] == "tool":
            msg["tool_call_id"] = m["tool_call_id"]
        out_msgs.append(msg)
    out: dict[str, Any] = {"messages": out_msgs}
    tools = _tools(row)
    if tools:
        out["tools"] = tools
    if template_kwargs:
        out["chat_template_kwargs"] = dict(template_kwargs)
    if isinstance(row.get("id"), str):
        out["id"] = row["id"]
    return out


#: Where a nemo-automodel export keeps a tool call's arguments as an object, next to the JSON string: AutoModel 0.7's
#: ChatDataset (`_normalize_tool_calls`) turns `function.arguments` into a JSON string but copies the function's
#: other keys as they are, so a template patched by `patch_arguments` reads the object from here.
ARGS_KEY = "gate_arguments"
_ARGS_RE = re.compile(r"\b([A-Za-z_]\w*(?:\.function)?)\.arguments\b")


def patch_arguments(source: str) -> str | None:
    """The chat template with every `X.arguments` read as `X.gate_arguments` when the row has it (else as before),
    or None when the template never names `.arguments` that way. Rows without the key render exactly as with the
    original template; exported rows render as the original template renders the row with dict arguments."""
    patched, n = _ARGS_RE.subn(lambda m: f"({m[1]}.{ARGS_KEY} if {m[1]}.{ARGS_KEY} is defined else {m[1]}.arguments)",
                               source)
    return patched if n else None


def _dict_arguments(msgs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages as a template that needs dict arguments reads them (what serving renders)."""
    out = []
    for m in msgs:
        if m.get("tool_calls"):
            m = {**m, "tool_calls": [{**tc, "function": {"name": tc["function"]["name"],
                                                         "arguments": orjson.loads(tc["function"]["arguments"])}}
                                     for tc in m["tool_calls"]]}
        out.append(m)
    return out


def _drop_unrendered_reasoning(msgs: list[dict[str, Any]], tools: list[Any] | None,
                               render: Callable[[list[dict[str, Any]], list[Any] | None], str]) -> None:
    """Removes, in place, the reasoning of assistant turns that the chat template does not render in the whole
    conversation (GLM and Qwen3 drop it before the last user turn). The text is the same; but AutoModel builds the
    loss mask from renders of conversation prefixes, where such a turn is the last one and its reasoning shows, so
    the prefix is no prefix of the whole and ChatDataset refuses the row ("Cannot build an answer-only loss mask
    from conversation prefixes")."""
    idx = [i for i, m in enumerate(msgs) if m["role"] == "assistant" and m.get("reasoning_content")]
    if not any(i < len(msgs) - 1 for i in idx):  # only a closing turn's reasoning: every prefix is consistent
        return
    try:
        full = render(_dict_arguments(msgs), tools)
    except Exception:  # the template refuses the row: nothing to compare with (the template check reports it)
        return
    for i in idx:
        kept = msgs[i].pop("reasoning_content")
        try:
            same = render(_dict_arguments(msgs), tools) == full
        except Exception:
            same = False
        if not same:
            msgs[i]["reasoning_content"] = kept


def to_nemo_automodel(row: dict[str, Any], dict_arguments: bool = False,
                      render: Callable[[list[dict[str, Any]], list[Any] | None], str] | None = None
                      ) -> dict[str, Any]:
    """`dict_arguments`: the template needs argument objects (see ARGS_KEY); `render(messages, tools)`: the chat
    template as AutoModel calls it, to leave out reasoning it does not render (see _drop_unrendered_reasoning)."""
    out_msgs = []
    for i, m in enumerate(_messages(row)):
        msg: dict[str, Any] = {"role": m["role"], "content": _text(m.get("content"), i)}
        if m["role"] == "assistant":
            r = _reasoning(m)
            if r is not None:
                msg["reasoning_content"] = r
            calls = _calls(m, i)
            if calls:
                if dict_arguments:
                    for c in calls:
                        c["function"][ARGS_KEY] = orjson.loads(c["function"]["arguments"])
                msg["tool_calls"] = calls
        elif m["role"] == "tool":
            msg["tool_call_id"] = m["tool_call_id"]
        out_msgs.append(msg)
    out: dict[str, Any] = {"messages": out_msgs}
    tools = _tools(row)
    if render is not None:
        _drop_unrendered_reasoning(out_msgs, tools, render)
    if tools:
        out["tools"] = tools
    if isinstance(row.get("id"), str):
        out["id"] = row["id"]
    return out


def to_hf(row: dict[str, Any]) -> dict[str, Any]:
    out_msgs = []
    for i, m in enumerate(_messages(row)):
        calls = _calls(m, i) if m["role"] == "assistant" else []
        out_msgs.append({"role": m["role"], "content": _text(m.get("content"), i),
                         "reasoning_content": _reasoning(m) if m["role"] == "assistant" else None,
                         "tool_calls": calls or None, "tool_call_id": m.get("tool_call_id")})
    out = {k: v for k, v in row.items() if k not in ("messages", "tools")}
    out["messages"] = out_msgs
    tools = _tools(row)
    out["tools"] = orjson.dumps(tools).decode() if tools else None
    return out


CONVERTERS = {"ms-swift": to_ms_swift, "nemo-automodel": to_nemo_automodel, "hf": to_hf}
