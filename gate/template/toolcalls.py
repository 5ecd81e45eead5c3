"""Tool calls in a model's raw text, read the way the serving engine's parser reads them: one parser for gate.

Three readers need it and must agree, or a model would score differently depending on who read its answer: the
template audit (a call the model learns to write must come back from the engine's parser as the call it was
trained on), the embedded engine (it has no server-side parser, so it applies the server's conventions itself)
and the tool-execution scorer (its raw-text fallback when a server returned no `tool_calls`).

Formats follow vLLM's parsers (SGLang's detectors read the same markup):
- `hermes` (`Hermes2ProToolParser`, ChatML/Qwen): `<tool_call>` JSON `</tool_call>`; a last block without its end
  tag still counts when its JSON is complete; the arguments are taken as written (a JSON string stays a string).
- `glm47` (GLM-4.7/5, compact) and `glm45` (GLM-4.5/4.6, name on its own line):
  `<tool_call>name<arg_key>k</arg_key><arg_value>v</arg_value></tool_call>`; values are stripped, kept raw when the
  tool's schema types them as strings, otherwise decoded as JSON, then as a Python literal, else kept raw.
A block that does not parse is a failed call: `parse` keeps it as ("", None) so the count still shows it, and
`parse_tool_calls` (what an engine returns) then returns no calls and the whole text, as vLLM does: an unparseable
answer stays visible to the scorers as a parse failure and never looks like an abstention.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from typing import Any

from gate.engines.types import ToolCall

_HERMES = re.compile(r"<tool_call>(.*?)</tool_call>|<tool_call>(.*)", re.DOTALL)
_GLM47_CALL = re.compile(r"<tool_call>(.*?)(<arg_key>.*?)?</tool_call>", re.DOTALL)
_GLM45_CALL = re.compile(r"<tool_call>([^\n]*)\n(.*)</tool_call>", re.DOTALL)
_GLM_ANY = re.compile(r"<tool_call>.*?</tool_call>", re.DOTALL)
_GLM_ARG = re.compile(r"<arg_key>(.*?)</arg_key>(?:\\n|\s)*<arg_value>(.*?)</arg_value>", re.DOTALL)
_THINK = re.compile(r"^\s*(?:<think>)?(.*?)</think>", re.DOTALL)

FORMATS = ("hermes", "glm47", "glm45")

Call = tuple[str, Any]


@dataclass(frozen=True)
class Block:
    """One `<tool_call>` block: where it sits in the text and what it parses to (`ok` false: the engine fails it)."""

    start: int
    end: int
    name: str
    arguments: Any
    ok: bool


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


def schemas_of(tools: list[Any] | tuple[Any, ...] | None) -> dict[str, dict[str, Any]]:
    """name -> parameters JSON Schema, from OpenAI-style `tools` (what the engine gets as `request.tools`)."""
    out: dict[str, dict[str, Any]] = {}
    for t in tools or ():
        fn = t.get("function", t) if isinstance(t, dict) else None
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            params = fn.get("parameters")
            out[fn["name"]] = params if isinstance(params, dict) else {}
    return out


def blocks(fmt: str | None, text: str, schemas: dict[str, dict[str, Any]] | None = None) -> list[Block]:
    """Every tool-call block of `text` in format `fmt`, in order; an unknown format has none."""
    if fmt == "hermes":
        return _hermes_blocks(text)
    if fmt in ("glm47", "glm45"):
        return _glm_blocks(text, schemas or {}, compact=fmt == "glm47")
    return []


def parse(fmt: str, text: str, schemas: dict[str, dict[str, Any]]) -> list[Call]:
    """(name, arguments) per block; a block the engine would fail is ("", None)."""
    return [(b.name, b.arguments) if b.ok else ("", None) for b in blocks(fmt, text, schemas)]


def parse_hermes(text: str) -> list[Call]:
    return parse("hermes", text, {})


def parse_glm(text: str, schemas: dict[str, dict[str, Any]], compact: bool = True) -> list[Call]:
    """GLM-4.7/5 (`compact`) or GLM-4.5/4.6 tool calls in `text`, as (name, arguments dict)."""
    return parse("glm47" if compact else "glm45", text, schemas)


def parse_tool_calls(text: str, fmt: str | None,
                     schemas: dict[str, dict[str, Any]] | None = None) -> tuple[str, tuple[ToolCall, ...]]:
    """(content, calls) as an OpenAI server returns them: the call blocks cut out of the content. Any block that
    does not parse, or an unknown format, gives no calls and the text unchanged."""
    found = blocks(fmt, text, schemas)
    if not found or not all(b.ok for b in found):
        return text, ()
    kept, pos = [], 0
    for b in found:
        kept.append(text[pos:b.start])
        pos = b.end
    kept.append(text[pos:])
    calls = tuple(ToolCall(name=b.name, arguments=json.dumps(b.arguments, ensure_ascii=False), id=f"call_{i}")
                  for i, b in enumerate(found))
    return "".join(kept).strip(), calls


def _hermes_blocks(text: str) -> list[Block]:
    out: list[Block] = []
    for m in _HERMES.finditer(text):
        body = m.group(1) if m.group(1) is not None else m.group(2)
        try:
            obj = json.loads(body.strip())
        except ValueError:
            obj = None
        # vLLM reads obj["name"] and obj["arguments"]; "parameters" is the older Hermes spelling some models write
        ok = isinstance(obj, dict) and isinstance(obj.get("name"), str) and ("arguments" in obj or "parameters" in obj)
        name = obj["name"] if ok else ""
        args = (obj["arguments"] if "arguments" in obj else obj["parameters"]) if ok else None
        out.append(Block(m.start(), m.end(), name, args, ok))
    return out


def _string_typed(schemas: dict[str, dict[str, Any]], tool: str, arg: str) -> bool:
    """Whether the tool's schema makes `arg` a string (a type of "string", or an enum of strings only)."""
    spec = schemas.get(tool, {}).get("properties", {}).get(arg)
    if not isinstance(spec, dict):
        return False
    if spec.get("type") == "string":
        return True
    enum = spec.get("enum")
    return "type" not in spec and isinstance(enum, list) and bool(enum) and all(isinstance(v, str) for v in enum)


def _deserialize(value: str) -> Any:
    try:
        return json.loads(value)
    except ValueError:
        pass
    try:
        return ast.literal_eval(value)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return value


def _glm_blocks(text: str, schemas: dict[str, dict[str, Any]], compact: bool) -> list[Block]:
    out: list[Block] = []
    for whole in _GLM_ANY.finditer(text):
        m = (_GLM47_CALL if compact else _GLM45_CALL).search(whole.group(0))
        name = m.group(1).strip() if m else ""
        if m is None or not name:
            out.append(Block(whole.start(), whole.end(), "", None, False))
            continue
        args: dict[str, Any] = {}
        for key, value in _GLM_ARG.findall(m.group(2) or ""):
            k, v = key.strip(), value.strip()
            args[k] = v if _string_typed(schemas, name, k) else _deserialize(v)
        out.append(Block(whole.start(), whole.end(), name, args, True))
    return out


def first_difference(want: list[Call], got: list[Call]) -> str | None:
    """None when the parsed calls equal the originals; else what differs, naming keys but never values."""
    if len(want) != len(got):
        return f"{len(want)} call(s) rendered, {len(got)} parsed back"
    for i, ((wn, wa), (gn, ga)) in enumerate(zip(want, got, strict=True)):
        if gn != wn:
            return f"call {i}: the parser reads the name differently" if gn else f"call {i}: the parser fails on it"
        if ga == wa and _same_types(ga, wa):
            continue
        if not isinstance(ga, dict):
            return f"call {i} ({wn}): arguments do not parse"
        missing = sorted(set(wa) - set(ga))
        extra = sorted(set(ga) - set(wa))
        if missing or extra:
            return f"call {i} ({wn}): argument keys differ (missing {missing}, extra {extra})"
        for k in wa:
            if ga[k] != wa[k] or not _same_types(ga[k], wa[k]):
                return (f"call {i} ({wn}): argument '{k}' comes back as {type(ga[k]).__name__} "
                        f"{_shape(ga[k], wa[k])}")
    return None


def _same_types(a: Any, b: Any) -> bool:
    """1 == 1.0 == True in Python; a tool receives different JSON for each."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_types(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same_types(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, int | float) and isinstance(b, int | float):
        return True
    return type(a) is type(b)


def _shape(got: Any, want: Any) -> str:
    if isinstance(got, str) and isinstance(want, str):
        if got == want.strip():
            return "with its surrounding whitespace stripped"
        return "with different text"
    return f"where {type(want).__name__} was rendered"
