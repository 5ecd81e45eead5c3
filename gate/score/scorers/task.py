"""Task success: does the answer carry the expected fields (or text), under strict and flexible extraction.

Both extractions are scored and reported as separate keys; `strict` is the primary key because a downstream
program only gets what strictly parses (lm-eval `strict-match` vs `flexible-extract`).
"""

from __future__ import annotations

import json
import re
from typing import Any

from gate.engines.types import Response
from gate.score.extract import flexible_json, strict_json
from gate.score.types import Item, Score


def _norm_text(value: Any, case: bool, space: bool) -> Any:
    if not isinstance(value, str):
        return value
    out = value
    if space:
        out = re.sub(r"\s+", " ", out).strip()
    if case:
        out = out.lower()
    return out


class FieldMatch:
    """Compares named fields of a JSON answer with `item.expected` (all fields, or those listed in `fields`).

    Options: `fields` (default: every key of expected), `ignore_case`, `normalize_whitespace` (both default
    false: the gate scores what a parser would see). Per-field hits are in metadata for error analysis.
    """

    type = "field_match"
    keys = ("strict", "flexible", "strict_fields", "flexible_fields")
    options_schema = {"type": "object", "additionalProperties": False, "properties": {
        "fields": {"type": "array", "items": {"type": "string"}},
        "ignore_case": {"type": "boolean"},
        "normalize_whitespace": {"type": "boolean"},
    }}
    primary = "strict"

    def __init__(self, fields: list[str] | None = None, ignore_case: bool = False,
                 normalize_whitespace: bool = False) -> None:
        self.fields = tuple(fields) if fields else None
        self.ignore_case = ignore_case
        self.normalize_whitespace = normalize_whitespace

    def _compare(self, got: Any, expected: dict[str, Any]) -> dict[str, bool]:
        names = self.fields or tuple(expected)
        if not isinstance(got, dict):
            return dict.fromkeys(names, False)
        return {n: n in got and _norm_text(got[n], self.ignore_case, self.normalize_whitespace)
                == _norm_text(expected.get(n), self.ignore_case, self.normalize_whitespace) for n in names}

    def score(self, item: Item, response: Response) -> Score:
        expected = item.expected if isinstance(item.expected, dict) else {}
        if response.error:
            return Score({k: 0.0 for k in self.keys}, None, f"no answer: {response.error}",
                         {"error": "engine_error"})
        s_ok, s_val = strict_json(response.text)
        f_ok, f_val = flexible_json(response.text)
        s_hits = self._compare(s_val if s_ok else None, expected)
        f_hits = self._compare(f_val if f_ok else None, expected)
        n = max(len(s_hits), 1)
        value = {"strict": float(bool(s_hits) and all(s_hits.values())),
                 "flexible": float(bool(f_hits) and all(f_hits.values())),
                 "strict_fields": sum(s_hits.values()) / n, "flexible_fields": sum(f_hits.values()) / n}
        wrong = [k for k, v in f_hits.items() if not v]
        if value["strict"]:
            why = "all fields match"
        elif not s_ok and value["flexible"]:
            why = "fields match only after extraction from surrounding text"
        elif not f_ok:
            why = "no JSON object in the answer" + (" (truncated: finish_reason=length)"
                                                    if response.finish_reason == "length" else "")
        else:
            why = f"fields differ: {', '.join(wrong)}"
        meta: dict[str, Any] = {"strict_parse": s_ok, "extractable": f_ok, "field_hits": f_hits,
                                "finish_reason": response.finish_reason}
        if not f_ok:
            meta["error"] = "truncated" if response.finish_reason == "length" else "parse_failure"
        elif not value["flexible"]:
            meta["error"] = "wrong_value"
        answer = None
        if f_ok:
            answer = json.dumps(f_val, ensure_ascii=False, sort_keys=True)[:500]
        return Score(value, answer, why, meta)


class ExactMatch:
    """The whole answer equals the expected string (`expected` or `expected[field]`); strict compares the raw
    text stripped, flexible also ignores case, whitespace runs and a trailing period."""

    type = "exact_match"
    keys = ("strict", "flexible")
    options_schema = {"type": "object", "additionalProperties": False, "properties": {"field": {"type": "string"}}}
    primary = "strict"

    def __init__(self, field: str | None = None) -> None:
        self.field = field

    def score(self, item: Item, response: Response) -> Score:
        want = item.expected.get(self.field) if self.field and isinstance(item.expected, dict) else item.expected
        want = "" if want is None else str(want)
        got = response.text or ""

        def loose(s: str) -> str:
            return re.sub(r"\s+", " ", s).strip().rstrip(".").lower()

        value = {"strict": float(got.strip() == want.strip()), "flexible": float(loose(got) == loose(want))}
        meta: dict[str, Any] = {"finish_reason": response.finish_reason}
        if response.error:
            meta["error"] = "engine_error"
        return Score(value, got[:500], "exact match" if value["strict"] else
                     ("match after normalisation" if value["flexible"] else "differs"), meta)
