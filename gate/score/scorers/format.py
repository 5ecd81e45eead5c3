"""Format validity at three levels: strict parse, extractable, valid against the JSON Schema.

Levels are separate keys because they fail for different reasons (a chatty preamble vs a wrong enum value);
schema validity is judged on the strictly parsed answer (RFC 8259: no NaN, no duplicate keys), so it never credits
text a parser would reject (`schema_valid_flexible` reports the lenient view, on the outermost JSON value of any
type found in the text). Answers cut off by `finish_reason == "length"` are counted in their own key: a
truncation is a decoding budget problem, not necessarily a format skill problem. An answer the scorer cannot
judge (the validator fails on it) is a failure with its reason, never a missing score that leaves the metric.
"""

from __future__ import annotations

from typing import Any

from gate.engines.types import Response
from gate.score.extract import flexible_json, strict_reason
from gate.score.types import Item, Score


def _formats_used(node: Any, out: set[str]) -> set[str]:
    if isinstance(node, dict):
        if isinstance(node.get("format"), str):
            out.add(node["format"])
        for v in node.values():
            _formats_used(v, out)
    elif isinstance(node, list):
        for v in node:
            _formats_used(v, out)
    return out


class FormatValidity:
    """Options: `schema` (a JSON Schema, Draft 2020-12, checked when the scorecard loads: ECMA-262 patterns, no
    `$ref` outside the schema, nothing fetched) and `formats` (the `format` values asserted, e.g. [date-time,
    uri]; each needs an installed checker, `gate.contract.schemas.available_formats()`; default: all of them but the
    ones whose checker is too loose to trust, `LOOSE_FORMATS`: email, idn-email, hostname, duration, uri-template).
    A format the schema uses that is not asserted is an annotation only; each score lists those in
    `formats_not_asserted`. `formats: []` makes every format an annotation, as draft 2020-12 does by default.
    Without a schema, schema_valid is not emitted."""

    type = "format"
    keys = ("strict_parse", "extractable", "schema_valid", "schema_valid_flexible", "truncated")
    # `schema`: the scorecard's `schema_from_contract` (a contract path) is resolved into it by the loader
    options_schema = {"type": "object", "additionalProperties": False, "properties": {
        "schema": {"type": ["object", "boolean", "null"]}, "formats": {"type": "array", "items": {"type": "string"}}}}
    primary = "schema_valid"

    def __init__(self, schema: dict[str, Any] | bool | None = None, formats: list[str] | None = None) -> None:
        self.schema = schema
        self._validator: Any = None
        self.formats_not_asserted: list[str] = []
        if schema is not None:
            from gate.contract import schemas

            schemas.check_schema(schema, formats=formats)  # SchemaProblem: the scorecard loader said so already
            asserted = set(schemas.default_formats() if formats is None else formats)
            self.formats_not_asserted = sorted(_formats_used(schema, set()) - asserted)
            self._validator = schemas.validator(schema, formats=formats)

    def _errors(self, value: Any) -> list[str]:
        errs = sorted(self._validator.iter_errors(value), key=lambda e: list(e.absolute_path))
        return [f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}"[:200] for e in errs[:5]]

    def _judge(self, ok: bool, value: Any, missing: str) -> tuple[list[str], str | None]:
        """(schema errors, why it could not be judged): a validator failure is the item's failure, with reason."""
        if not ok:
            return [missing], None
        try:
            return self._errors(value), None
        except RecursionError:
            return ["cannot validate: nested too deeply"], "cannot validate: nested too deeply"
        except Exception as exc:  # a $ref the registry refuses, a pattern the engine cannot run...
            why = f"cannot validate: {type(exc).__name__}: {' '.join(str(exc).split())[:160]}"
            return [why], why

    def score(self, item: Item, response: Response) -> Score:
        if response.error:
            value = {"strict_parse": 0.0, "extractable": 0.0, "truncated": 0.0}
            if self._validator is not None:
                value |= {"schema_valid": 0.0, "schema_valid_flexible": 0.0}
            return Score(value, None, f"no answer: {response.error}", {"error": "engine_error"})
        truncated = response.finish_reason == "length"
        s_ok, s_val, s_why = strict_reason(response.text)
        f_ok, f_val = flexible_json(response.text, want_object=False)
        value = {"strict_parse": float(s_ok), "extractable": float(f_ok), "truncated": float(truncated)}
        meta: dict[str, Any] = {"finish_reason": response.finish_reason}
        why = "parses as JSON" if s_ok else ("JSON found inside text" if f_ok else "no JSON")
        if not s_ok and f_ok and s_why not in ("", "not JSON", "empty"):
            meta["not_strict"] = s_why  # NaN, a duplicate key: read leniently, reported
            why = f"not strict JSON ({s_why.split(' (')[0]})"
        unscorable = None
        if self._validator is not None:
            s_errs, s_fail = self._judge(s_ok, s_val, "not strictly parseable")
            f_errs, f_fail = self._judge(f_ok, f_val, "no JSON found")
            unscorable = s_fail or f_fail
            value["schema_valid"] = float(s_ok and not s_errs)
            value["schema_valid_flexible"] = float(f_ok and not f_errs)
            if self.formats_not_asserted:
                meta["formats_not_asserted"] = self.formats_not_asserted
            if unscorable:
                meta["unscorable"] = unscorable
                why = unscorable
            elif s_ok and s_errs:
                meta["schema_errors"] = s_errs
                why = f"parses but violates the schema: {s_errs[0]}"
            elif not s_ok and f_ok and f_errs:
                meta["schema_errors"] = f_errs
        if unscorable:
            meta["error"] = "unscorable"
        elif not f_ok:
            meta["error"] = "truncated" if truncated else "parse_failure"
        elif not s_ok:
            meta["error"] = "not_strict"
        elif meta.get("schema_errors"):
            meta["error"] = "schema_violation"
        if truncated:
            why += " (truncated: finish_reason=length)"
        return Score(value, (response.text or "")[:500], why, meta)
