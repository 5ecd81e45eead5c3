"""`contract`: every row against its data contract.

Per row (in workers): structure by a precompiled jsonschema validator, metadata types, message order,
assistant answers against the output schema, tool calls against the tool catalogue, refusal and
missing-information rules. Per column (once, in the parent): great-expectations for required values,
allowed sets, uniqueness, patterns and lengths. One problem at one place gives one finding.
"""

from __future__ import annotations

import re
from collections import Counter
from datetime import datetime
from functools import lru_cache
from typing import Any

import orjson
from jsonschema.exceptions import ValidationError

from gate.contract import schemas
from gate.contract.expectations import compile_rules, run_rules
from gate.contract.file_schema import NO_OPTIONS
from gate.contract.model import Contract, thaw
from gate.contract.patterns import combine, compile_pattern
from gate.contract.rows import fast_row_check, row_schema
from gate.data.base import Batch, Check, Finding
from gate.data.text import message_text
from gate.pii.redact import value_snippet as snippet

_SAFE_TOKEN = re.compile(r"[A-Za-z0-9_.:\-]{1,32}")


def _path(parts: Any, prefix: str = "") -> str:
    out = prefix
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(row)"


def _value(v: Any) -> str:
    """Short metadata tokens are shown as they are; anything longer is masked word by word."""
    if isinstance(v, str) and _SAFE_TOKEN.fullmatch(v) and sum(c.isdigit() for c in v) < 6:
        return v
    if isinstance(v, int | float | bool) or v is None:
        return repr(v)
    return snippet(v, 60, words=True)


def _explain(err: ValidationError) -> str:
    """A message built from the schema side only: jsonschema's own messages quote the (possibly private) value."""
    v, vv = err.validator, err.validator_value
    if v == "required":
        missing = [k for k in vv if isinstance(err.instance, dict) and k not in err.instance]
        return f"missing required key(s): {', '.join(missing)}"
    if v == "enum":
        return f"not one of {list(vv)}"
    if v == "const":
        return f"must be {vv!r}"
    if v == "type":
        return f"must be of type {vv}"
    if v == "additionalProperties":
        extra = [k for k in err.instance if k not in err.schema.get("properties", {})] if isinstance(
            err.instance, dict) else []
        return f"unexpected key(s): {', '.join(map(str, extra))}"
    if v in ("minLength", "maxLength", "minItems", "maxItems", "minimum", "maximum", "exclusiveMinimum",
             "exclusiveMaximum", "multipleOf"):
        return f"violates {v}={vv}"
    if v == "pattern":
        return f"does not match pattern {vv}"
    if v == "format":
        return f"not a valid {vv}"
    if v in ("anyOf", "oneOf"):  # the shapes come from the schema, so naming them shows no private value
        from gate.yamlio import describe

        return f"matches none of the allowed shapes ({v}): {'; '.join(describe(s) for s in vv)}"
    return f"violates '{v}'"


def _type_ok(kind: str, v: Any) -> bool:
    if kind == "string":
        return isinstance(v, str)
    if kind == "integer":
        return isinstance(v, int) and not isinstance(v, bool)
    if kind == "number":
        return isinstance(v, int | float) and not isinstance(v, bool)
    if kind == "boolean":
        return isinstance(v, bool)
    if kind == "datetime":
        if not isinstance(v, str) or len(v) < 10:
            return False
        try:
            datetime.fromisoformat(v)
        except ValueError:
            return False
        return True
    return True


class ContractCheck(Check):
    name = "contract"
    drop_action = "drop_row"  # an empty user or assistant turn: nothing can repair it
    drop_rules = ("messages.empty",)
    rules = ("row.schema", "field.type", "field.required", "field.null_rate", "field.allowed", "field.unique",
             "field.pattern", "field.length", "source.allowed", "language.allowed", "messages.count",
             "messages.system", "messages.order", "messages.final_role", "messages.empty", "tool.unknown",
             "tool.arguments.parse", "tool.arguments.schema", "tool.missing_required", "tool.result_orphan",
             "tool.unanswered", "tool.row_tools", "output.parse", "output.schema", "refusal", "refusal.unprompted",
             "missing_information")
    order = 10
    incremental = "per_row"
    incremental_keeps = ("field.unique",)  # a changed row's value that an unchanged row already has
    options_schema = NO_OPTIONS  # the rules are the contract itself
    version = "1"

    def __init__(self, contract: Contract) -> None:
        super().__init__(contract)
        c = contract
        self._rules = compile_rules(c)
        self._columns = sorted({r.column for r in self._rules})
        types = {f.name: f.type for f in c.fields}
        self._column_types = [(k, types.get(k, "string")) for k in self._columns]
        # every validator from gate.contract.schemas: no $ref retrieval, ECMA-262 patterns; the data door asserts
        # every installed format checker, the loose ones too (each still refuses some bad values)
        self._row_validator = schemas.validator(row_schema(c), assert_formats=False)
        every = schemas.available_formats()
        self._row_fast_ok = fast_row_check(c)
        self._output_validator = (schemas.validator(thaw(c.output_schema), formats=every)
                                  if c.output_schema is not None else None)
        self._tools = {t.name: (schemas.validator(thaw(t.parameters), formats=every),
                                t.required) for t in c.tools}
        self._row_tools = [{"type": "function", "function": {"name": t.name, "description": t.description,
                                                             "parameters": thaw(t.parameters)}} for t in c.tools]
        self._catalogue_key = _norm_tools(self._row_tools)
        refusal = c.refusal or {}
        # RE2 (gate.contract.patterns): linear in the text, whatever the pattern a pull request wrote
        rx = combine(refusal.get("when_user_matches", ()))
        self._refusal_rx = [rx] if rx is not None else []
        self._refusal_text = (compile_pattern(refusal["expect_text_matches"])
                              if refusal.get("expect_text_matches") else None)
        self._refusal_output = dict(refusal.get("expect_output") or {})
        self._forbid_tools = bool(refusal.get("forbid_tool_calls"))
        self._missing = c.missing_information
        self._answer = lru_cache(maxsize=1 << 16)(self._answer_uncached)
        # parent-side state
        self._column_chunks: dict[str, list[Any]] = {}
        self._typed_bad: set[tuple[str, int, str]] = set()
        self._split_names: list[str] = []

    # ---------------------------------------------------------------- per row (workers)
    def map(self, batch: Batch) -> Any:
        findings: list[Finding] = []
        counts: Counter[str] = Counter()
        cols: dict[str, list[Any]] = {"__split": [], "__row": [], "__id": [], **{k: [] for k in self._columns}}
        typed_bad: list[tuple[str, int, str]] = []
        for line, row in batch.rows:
            counts["scanned"] += 1
            rid = row.get("id")
            rid = str(rid) if isinstance(rid, str | int) and not isinstance(rid, bool) else None
            out: list[Finding] = []

            def add(field: str | None, rule: str, message: str, value: Any = None, severity: str = "error",
                    _line: int = line, _rid: str | None = rid, _out: list[Finding] = out) -> None:
                _out.append(Finding("contract", batch.split, _line, field, rule, severity, message,
                                    None if value is None else _value(value), _rid))

            for f in self.contract.fields:
                v = row.get(f.name)
                if v is not None and not _type_ok(f.type, v):
                    add(f.name, "field.type", f"must be a {f.type}", v)
                    typed_bad.append((batch.split, line, f.name))
            self._check_row(row, add)
            findings.extend(out)
            cols["__split"].append(batch.split)
            cols["__row"].append(line)
            cols["__id"].append(rid)
            for k, kind in self._column_types:
                v = row.get(k)
                cols[k].append(v if v is not None and _type_ok(kind, v) else None)
        return findings, counts, cols, typed_bad

    def _check_row(self, row: dict[str, Any], add: Any) -> None:
        c = self.contract
        if not self._row_fast_ok(row) and not self._row_validator.is_valid(row):
            for err in self._row_validator.iter_errors(row):
                add(_path(err.absolute_path), "row.schema", _explain(err),
                    err.instance if not isinstance(err.instance, dict | list) else None)
            return
        msgs: list[dict[str, Any]] = row["messages"]
        roles = [m["role"] for m in msgs]
        if c.max_messages is not None and len(msgs) > c.max_messages:
            add("messages", "messages.count", f"{len(msgs)} messages, at most {c.max_messages} allowed")
        if c.system_prompt == "required" and roles[0] != "system":
            add("messages[0].role", "messages.system", "the conversation must start with a system prompt")
        elif c.system_prompt == "forbidden" and "system" in roles:
            add(f"messages[{roles.index('system')}].role", "messages.system", "system prompts are not allowed")
        for i, r in enumerate(roles):
            if r == "system" and i > 0:
                add(f"messages[{i}].role", "messages.order", "a system message may only come first")
        if c.final_role == "assistant" and roles[-1] != "assistant":
            add(f"messages[{len(msgs) - 1}].role", "messages.final_role",
                f"the conversation must end with the assistant, not '{roles[-1]}'")

        calls: dict[str, int] = {}
        answered: set[str] = set()
        for i, m in enumerate(msgs):
            text = message_text(m, include_tool_calls=False)
            if m["role"] == "user" and not text.strip():
                add(f"messages[{i}].content", "messages.empty", "empty user message")
            elif m["role"] == "assistant" and not text.strip() and not m.get("tool_calls") \
                    and not c.allow_empty_assistant:
                add(f"messages[{i}].content", "messages.empty", "empty assistant message")
            if m["role"] == "assistant" and m.get("tool_calls"):
                for j, call in enumerate(m["tool_calls"]):
                    if call.get("id"):
                        calls[call["id"]] = i
                    self._check_call(call["function"], f"messages[{i}].tool_calls[{j}].function", add)
            if m["role"] == "tool":
                cid = m.get("tool_call_id")
                if cid is None or cid not in calls:
                    add(f"messages[{i}].tool_call_id", "tool.result_orphan",
                        "tool result answers no earlier tool call")
                else:
                    answered.add(cid)
        for cid, i in calls.items():
            if cid not in answered:
                add(f"messages[{i}].tool_calls", "tool.unanswered", f"tool call '{cid}' gets no tool result")
        if c.require_row_tools and c.tools and _norm_tools(row.get("tools")) != self._catalogue_key:
            add("tools", "tool.row_tools", "the row's tools differ from the contract's tool catalogue")

        answers = [(i, m) for i, m in enumerate(msgs) if m["role"] == "assistant" and isinstance(
            m.get("content"), str) and m["content"].strip()]
        if c.output_applies_to == "final_assistant":
            answers = [(i, m) for i, m in answers if i == len(msgs) - 1]
        final_obj: Any = None
        for i, m in answers:
            if c.output_format != "json":
                continue
            obj, problems = self._answer(m["content"])
            if i == len(msgs) - 1:
                final_obj = obj
            for sub, rule, message, value in problems:
                add(_path(sub, f"messages[{i}].content"), rule, message, value)
        self._check_rules(msgs, final_obj, add)

    def _answer_uncached(self, content: str) -> tuple[Any, tuple[tuple[tuple[Any, ...], str, str, Any], ...]]:
        """Parses and validates one answer; memoised because answers of structured tasks repeat a lot."""
        try:
            obj = orjson.loads(content)
        except orjson.JSONDecodeError:
            return None, (((), "output.parse", "assistant answer is not valid JSON", content),)
        if self._output_validator is None or self._output_validator.is_valid(obj):
            return obj, ()
        return obj, tuple((tuple(err.absolute_path), "output.schema", _explain(err),
                           err.instance if not isinstance(err.instance, dict | list) else None)
                          for err in self._output_validator.iter_errors(obj))

    def _check_call(self, fn: dict[str, Any], where: str, add: Any) -> None:
        name = fn["name"]
        if name not in self._tools:
            add(f"{where}.name", "tool.unknown", "tool is not in the contract's catalogue", name)
            return
        args = fn["arguments"]
        if isinstance(args, str):
            try:
                args = orjson.loads(args) if args.strip() else {}
            except orjson.JSONDecodeError:
                add(f"{where}.arguments", "tool.arguments.parse", "arguments are not valid JSON", args)
                return
        validator, required = self._tools[name]
        if not isinstance(args, dict):
            add(f"{where}.arguments", "tool.arguments.schema", "arguments must be a JSON object")
            return
        missing = [k for k in required if k not in args]
        if missing and self.contract.on_missing_required == "ask_user":
            add(f"{where}.arguments", "tool.missing_required",
                f"required argument(s) {', '.join(missing)} missing: the assistant must ask the user instead")
        for err in validator.iter_errors(args):
            if err.validator == "required" and missing and self.contract.on_missing_required == "ask_user" \
                    and not err.absolute_path:
                continue
            add(_path(err.absolute_path, f"{where}.arguments"), "tool.arguments.schema", _explain(err),
                err.instance if not isinstance(err.instance, dict | list) else None)

    def _check_rules(self, msgs: list[dict[str, Any]], final_obj: Any, add: Any) -> None:
        last = len(msgs) - 1
        final_text = msgs[last].get("content") if msgs[last]["role"] == "assistant" else None
        final_text = final_text if isinstance(final_text, str) else ""
        if self._refusal_rx:
            trigger = next((i for i, m in enumerate(msgs) if m["role"] == "user" and isinstance(m.get("content"), str)
                            and any(rx.search(m["content"]) for rx in self._refusal_rx)), None)
            if trigger is not None:
                problems = []
                if self._refusal_output and (not isinstance(final_obj, dict) or any(
                        final_obj.get(k) != v for k, v in self._refusal_output.items())):
                    problems.append(f"answer must set {self._refusal_output}")
                if self._refusal_text is not None and not self._refusal_text.search(final_text):
                    problems.append("answer does not refuse in words")
                if self._forbid_tools and any(m.get("tool_calls") for m in msgs[trigger + 1:]
                                              if m["role"] == "assistant"):
                    problems.append("a tool was called for a request that must be refused")
                if problems:
                    add(f"messages[{last}]", "refusal", "refusal rule: " + "; ".join(problems))
            elif self._refusal_output and isinstance(final_obj, dict) and all(
                    final_obj.get(k) == v for k, v in self._refusal_output.items()):
                add(f"messages[{last}]", "refusal.unprompted", "refusal without a request that must be refused",
                    severity="warning")
        mi = self._missing
        if mi and isinstance(final_obj, dict) and any(final_obj.get(f) == mi["placeholder"] for f in mi["fields"]):
            expect = dict(mi.get("expect_output") or {})
            if any(final_obj.get(k) != v for k, v in expect.items()):
                add(f"messages[{last}].content", "missing_information",
                    f"information marked missing, so the answer must set {expect}")

    # ---------------------------------------------------------------- parent
    def warm_up(self) -> None:
        if self._rules:
            import great_expectations  # noqa: F401 - a 2-3 s import, overlapped with the scan

    def reduce(self, partial: Any) -> None:
        findings, counts, cols, typed_bad = partial
        self.findings.extend(findings)
        self.counts.update(counts)
        self._typed_bad.update(typed_bad)
        import pyarrow as pa

        split = cols.pop("__split")
        if split:
            if split[0] not in self._split_names:
                self._split_names.append(split[0])
            # a split index per row, not its name: per-row state is what grows with the file
            cols["__split"] = [self._split_names.index(split[0])] * len(split)
        for k, values in cols.items():
            self._column_chunks.setdefault(k, []).append(pa.array(values, type=_arrow_type(k, self.contract)))

    def finish(self) -> None:
        if not self._rules or not self._column_chunks.get("__row"):
            return
        import pyarrow as pa

        table = pa.table({k: pa.chunked_array(v) for k, v in self._column_chunks.items()})
        self._column_chunks.clear()
        splits = table.column("__split")
        lines = table.column("__row")
        ids = table.column("__id")
        # one column at a time: great-expectations works on pandas, and a frame of every column at once is the
        # largest object of the whole scan on big files
        for column in self._columns:
            frame = table.select([column]).to_pandas()
            rules = [r for r in self._rules if r.column == column]
            self._column_findings(run_rules(rules, frame), frame, splits, lines, ids)
            del frame

    def _column_findings(self, outcomes: list[Any], frame: Any, splits: Any, lines: Any, ids: Any) -> None:
        for outcome in outcomes:
            r = outcome.rule
            if outcome.error:
                self.findings.append(Finding("contract", "*", None, r.column, r.rule, "error",
                                             f"expectation could not run: {outcome.error[:200]}"))
                continue
            if outcome.success and r.kind == "not_null" and outcome.unexpected_count:
                continue  # within the allowed null rate
            if outcome.success:
                continue
            col = frame[r.column]
            for idx in outcome.unexpected_index:
                split, line = self._split_names[splits[idx].as_py()], lines[idx].as_py()
                if (split, line, r.column) in self._typed_bad:
                    continue  # already reported as field.type
                self.findings.append(Finding("contract", split, line, r.column, r.rule, "error",
                                             _rule_message(r.rule, r.kwargs), _value(col.iloc[idx])
                                             if r.kind != "not_null" else None, ids[idx].as_py()))
            if r.kind == "not_null" and dict(r.kwargs).get("mostly", 1.0) < 1.0:
                rate = outcome.unexpected_count / max(outcome.element_count, 1)
                self.findings.append(Finding("contract", "*", None, r.column, "field.null_rate", "error",
                                             f"null rate {rate:.2%} above the allowed "
                                             f"{1 - dict(r.kwargs)['mostly']:.2%}"))

    def details(self) -> dict[str, Any]:
        return {"rules": Counter(f.rule for f in self.findings), "expectations": len(self._rules),
                "engine": "jsonschema (Draft 2020-12) + great-expectations (ephemeral)"}


def _norm_tools(tools: Any) -> Any:
    if not isinstance(tools, list):
        return None
    return sorted(orjson.dumps(t, option=orjson.OPT_SORT_KEYS) for t in tools)


def _arrow_type(column: str, contract: Contract) -> Any:
    import pyarrow as pa

    if column == "__row":
        return pa.int64()
    if column == "__split":
        return pa.int16()
    if column == "__id":
        return pa.string()
    spec = next((f for f in contract.fields if f.name == column), None)
    kind = spec.type if spec else "string"
    return {"integer": pa.int64(), "number": pa.float64(), "boolean": pa.bool_()}.get(kind, pa.string())


def _rule_message(rule: str, kwargs: tuple[tuple[str, Any], ...]) -> str:
    kw = dict(kwargs)
    return {
        "field.required": "required value is missing",
        "field.null_rate": "value is missing",
        "field.allowed": f"not one of {kw.get('value_set')}",
        "source.allowed": f"source not in the contract's sources {kw.get('value_set')}",
        "language.allowed": f"language not in the contract's languages {kw.get('value_set')}",
        "field.unique": "value is not unique",
        "field.pattern": f"does not match pattern {kw.get('regex')}",
        "field.length": f"length outside [{kw.get('min_value')}, {kw.get('max_value')}]",
    }.get(rule, rule)
