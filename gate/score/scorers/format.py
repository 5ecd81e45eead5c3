"""Format validity at three levels: strict parse, extractable, valid against the JSON Schema.

Levels are separate keys because they fail for different reasons (a chatty preamble vs a wrong enum value);
schema validity is judged on the strictly parsed answer, so it never credits text a parser would reject
(`schema_valid_flexible` reports the lenient view). Answers cut off by `finish_reason == "length"` are counted
in their own key: a truncation is a decoding budget problem, not necessarily a format skill problem.
"""

from __future__ import annotations

from typing import Any

from gate.score.extract import flexible_json, strict_json
from gate.score.types import Item, Score
from gate.serve.types import Response


class FormatValidity:
    """Options: `schema` (a JSON Schema, Draft 2020-12, checked when the scorecard loads; format keywords such
    as date-time, ipv4, uuid are asserted with jsonschema's FormatChecker). Without a schema, schema_valid is
    not emitted."""

    type = "format"
    keys = ("strict_parse", "extractable", "schema_valid", "schema_valid_flexible", "truncated")
    primary = "schema_valid"

    def __init__(self, schema: dict[str, Any] | None = None) -> None:
        self.schema = schema
        self._validator: Any = None
        if schema is not None:
            from jsonschema import Draft202012Validator

            Draft202012Validator.check_schema(schema)
            self._validator = Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)

    def _errors(self, value: Any) -> list[str]:
        errs = sorted(self._validator.iter_errors(value), key=lambda e: list(e.absolute_path))
        return [f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}"[:200] for e in errs[:5]]

    def score(self, item: Item, response: Response) -> Score:
        if response.error:
            value = {"strict_parse": 0.0, "extractable": 0.0, "truncated": 0.0}
            if self._validator is not None:
                value |= {"schema_valid": 0.0, "schema_valid_flexible": 0.0}
            return Score(value, None, f"no answer: {response.error}", {"error": "engine_error"})
        truncated = response.finish_reason == "length"
        s_ok, s_val = strict_json(response.text)
        f_ok, f_val = flexible_json(response.text)
        value = {"strict_parse": float(s_ok), "extractable": float(f_ok), "truncated": float(truncated)}
        meta: dict[str, Any] = {"finish_reason": response.finish_reason}
        why = "parses as JSON" if s_ok else ("JSON found inside text" if f_ok else "no JSON")
        if self._validator is not None:
            s_errs = self._errors(s_val) if s_ok else ["not strictly parseable"]
            f_errs = self._errors(f_val) if f_ok else ["no JSON found"]
            value["schema_valid"] = float(s_ok and not s_errs)
            value["schema_valid_flexible"] = float(f_ok and not f_errs)
            if s_ok and s_errs:
                meta["schema_errors"] = s_errs
                why = f"parses but violates the schema: {s_errs[0]}"
            elif not s_ok and f_ok and f_errs:
                meta["schema_errors"] = f_errs
        if not f_ok:
            meta["error"] = "truncated" if truncated else "parse_failure"
        elif not s_ok:
            meta["error"] = "not_strict"
        elif meta.get("schema_errors"):
            meta["error"] = "schema_violation"
        if truncated:
            why += " (truncated: finish_reason=length)"
        return Score(value, (response.text or "")[:500], why, meta)
