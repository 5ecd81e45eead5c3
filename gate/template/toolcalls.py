"""Tool calls as the serving engine reads them back: parsers for the GLM and hermes formats, and the comparison.

A tool call the model learns to write must come out of the serving engine's parser as the call it was trained
on. These parsers follow vLLM's (`Glm47MoeModelToolParser`, `Hermes2ProToolParser`; SGLang's `glm47` and hermes
detectors read the same markup): GLM values are stripped, kept raw when the tool's schema types them as
strings and otherwise decoded as JSON, then as a Python literal, else kept raw; hermes calls are JSON.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

_GLM47_CALL = re.compile(r"<tool_call>(.*?)(<arg_key>.*?)?</tool_call>", re.DOTALL)
_GLM45_CALL = re.compile(r"<tool_call>([^\n]*)\n(.*)</tool_call>", re.DOTALL)
_GLM_ANY = re.compile(r"<tool_call>.*?</tool_call>", re.DOTALL)
_GLM_ARG = re.compile(r"<arg_key>(.*?)</arg_key>(?:\\n|\s)*<arg_value>(.*?)</arg_value>", re.DOTALL)
_HERMES = re.compile(r"<tool_call>(.*?)</tool_call>|<tool_call>(.*)", re.DOTALL)

Call = tuple[str, Any]


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


def parse_glm(text: str, schemas: dict[str, dict[str, Any]], compact: bool = True) -> list[Call]:
    """GLM-4.7/5 (`compact`) or GLM-4.5/4.6 tool calls in `text`, as (name, arguments dict)."""
    calls: list[Call] = []
    for block in _GLM_ANY.findall(text):
        m = (_GLM47_CALL if compact else _GLM45_CALL).search(block)
        if m is None:
            calls.append(("", None))  # the engine would fail this call
            continue
        name = m.group(1).strip()
        args: dict[str, Any] = {}
        for key, value in _GLM_ARG.findall(m.group(2) or ""):
            k, v = key.strip(), value.strip()
            args[k] = v if _string_typed(schemas, name, k) else _deserialize(v)
        calls.append((name, args))
    return calls


def parse_hermes(text: str) -> list[Call]:
    calls: list[Call] = []
    for a, b in _HERMES.findall(text):
        try:
            obj = json.loads((a or b).strip())
        except ValueError:
            calls.append(("", None))
            continue
        if not isinstance(obj, dict):
            calls.append(("", None))
            continue
        args = obj.get("arguments", obj.get("parameters"))
        if isinstance(args, str):  # a template that writes the arguments string raw
            try:
                args = json.loads(args)
            except ValueError:
                pass
        calls.append((str(obj.get("name", "")), args))
    return calls


def parse(fmt: str, text: str, schemas: dict[str, dict[str, Any]]) -> list[Call]:
    if fmt == "glm47":
        return parse_glm(text, schemas, compact=True)
    if fmt == "glm45":
        return parse_glm(text, schemas, compact=False)
    if fmt == "hermes":
        return parse_hermes(text)
    return []


def schemas_of(tools: list[Any] | None) -> dict[str, dict[str, Any]]:
    """name -> parameters JSON Schema, from OpenAI-style `tools` (what the engine gets as `request.tools`)."""
    out: dict[str, dict[str, Any]] = {}
    for t in tools or ():
        fn = t.get("function", t) if isinstance(t, dict) else None
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            params = fn.get("parameters")
            out[fn["name"]] = params if isinstance(params, dict) else {}
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
