"""Getting a JSON answer out of model text, strictly and flexibly.

Strict means the whole content (surrounding whitespace aside) is one JSON value: what a program consuming the
answer would accept, so it is what feeds gates. Flexible mirrors lm-eval's `flexible-extract` and promptfoo's
`contains-json`: strip thinking blocks and code fences, then take the first JSON object found in the text. Both
are reported because the gap between them is itself a finding (lm-eval PR #2034: 0.20 strict vs 0.78 flexible).
"""

from __future__ import annotations

import json
import re
from typing import Any

_THINK = re.compile(r"<think>.*?(</think>|$)", re.DOTALL)
_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)
_DECODER = json.JSONDecoder()
_MISSING = object()


def strict_json(text: str | None) -> tuple[bool, Any]:
    """(True, value) when the whole text is exactly one JSON value."""
    if not text or not text.strip():
        return False, None
    try:
        return True, json.loads(text)
    except ValueError:
        return False, None


def _first_object(text: str, want_object: bool) -> Any:
    for m in re.finditer(r"[\[{]", text):
        if want_object and m.group() != "{":
            continue
        try:
            value, _ = _DECODER.raw_decode(text, m.start())
        except ValueError:
            continue
        return value
    return _MISSING


def flexible_json(text: str | None, want_object: bool = True) -> tuple[bool, Any]:
    """(True, value) when a JSON value can be found inside the text (fences and <think> blocks skipped)."""
    if not text:
        return False, None
    ok, value = strict_json(text)
    if ok and (isinstance(value, dict) or not want_object):
        return True, value
    cleaned = _THINK.sub("", text)
    for candidate in [*_FENCE.findall(cleaned), cleaned]:
        value = _first_object(candidate, want_object)
        if value is not _MISSING:
            return True, value
    return False, None
