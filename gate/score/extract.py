"""Getting a JSON answer out of model text, strictly and flexibly.

Strict means the whole content (surrounding whitespace aside) is one JSON value as RFC 8259 defines it: what a
program consuming the answer would accept, so it is what feeds gates. Python's `json` accepts more (`NaN`,
`Infinity`, and duplicate keys, the last one winning, so `{"a":"oops","a":1}` would be read as `{"a":1}`):
the strict parse refuses those. Flexible mirrors lm-eval's `flexible-extract` and promptfoo's `contains-json`:
strip thinking blocks and code fences, then take the outermost JSON value found in the text (leniently: the
deviations are reported by `strict_reason`, not refused). Both are reported because the gap between them is
itself a finding (lm-eval PR #2034: 0.20 strict vs 0.78 flexible).
"""

from __future__ import annotations

import json
import re
from typing import Any

_THINK = re.compile(r"<think>.*?(</think>|$)", re.DOTALL)
_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)
_DECODER = json.JSONDecoder()
_MISSING = object()


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON (RFC 8259 has no NaN or Infinity)")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"duplicate key {k[:40]!r} (RFC 8259: names should be unique; readers disagree on "
                             "which value wins)")
        out[k] = v
    return out


_STRICT = json.JSONDecoder(parse_constant=_no_constants, object_pairs_hook=_no_duplicates)


def strict_reason(text: str | None) -> tuple[bool, Any, str]:
    """(ok, value, why not): `why` says what keeps the text from being one RFC 8259 JSON value."""
    if not text or not text.strip():
        return False, None, "empty"
    try:
        return True, _STRICT.decode(text), ""
    except RecursionError:
        return False, None, "nested too deeply"
    except ValueError as exc:
        msg = str(exc)
        return False, None, msg if ("not JSON" in msg or "duplicate key" in msg) else "not JSON"


def strict_json(text: str | None) -> tuple[bool, Any]:
    """(True, value) when the whole text is exactly one JSON value (RFC 8259: no NaN/Infinity, no duplicate keys)."""
    ok, value, _ = strict_reason(text)
    return ok, value


def _lenient(text: str) -> tuple[bool, Any]:
    """Python's own reading of a whole text: what the flexible level accepts."""
    try:
        return True, json.loads(text)
    except (ValueError, RecursionError):
        return False, None


def _first_value(text: str, want_object: bool) -> Any:
    """The value starting at the earliest `{` (or `[`) that decodes: the outermost one, whatever is inside it."""
    for m in re.finditer(r"[\[{]", text):
        if want_object and m.group() != "{":
            continue
        try:
            value, _ = _DECODER.raw_decode(text, m.start())
        except (ValueError, RecursionError):
            continue
        return value
    return _MISSING


def flexible_json(text: str | None, want_object: bool = True) -> tuple[bool, Any]:
    """(True, value) when a JSON value can be found inside the text (fences and <think> blocks skipped).

    `want_object` (what tool-call and task scorers read) looks only for objects. Without it (the format scorer),
    any value counts: a whole candidate (the text, a fence's content) that parses is taken as it is (an array,
    a number), else the outermost object or array inside it."""
    if not text:
        return False, None
    ok, value = _lenient(text)
    if ok and (isinstance(value, dict) or not want_object):
        return True, value
    cleaned = _THINK.sub("", text)
    for candidate in [*_FENCE.findall(cleaned), cleaned]:
        if not want_object:
            ok, value = _lenient(candidate)
            if ok:
                return True, value
        value = _first_value(candidate, want_object)
        if value is not _MISSING:
            return True, value
    return False, None
