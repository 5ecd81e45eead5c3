"""Tool execution, layered like BFCL's AST checker and then executed like its multi-turn checker.

Layers, each with its own error category (gate.score.types.TOOL_ERRORS), first failure wins:
parse (server `tool_calls`, else the raw text: hermes / GLM `<tool_call>` markup or a bare JSON call) ->
count -> function name -> arguments against the tool's JSON Schema (missing / extra / wrong type / bad value)
-> values against the gold's acceptable values with BFCL-style normalisation -> sandboxed execution of the
model's calls and of the gold calls on separate fresh states -> results and final state compared.
Parallel calls are matched to gold calls by an optimal assignment (Hungarian method on the call x gold table,
any number of calls; BFCL's greedy matching can false-negative).
Names: one normalised name (`.` and `_` are the same: models that cannot emit dots write `a_b` for `a.b`) is
used for the schema lookup, `correct`, the `function` metric and execution (the tool's declared name is run).
Types: the JSON type the model wrote is checked, not only the schema's (JSON Schema's `integer` accepts 5.0,
a Python tool does not); integers compare exactly, also beyond 2**53.
Normalisation rule (documented in the scorecard reference): free strings - top level and, with
`normalize_nested` (default), one level down exactly where BFCL's checker normalises - are normalised before
being compared with the gold's acceptable values; a parameter whose schema declares an `enum` is checked by the
schema first, so an enum value must be written exactly as declared (no normalisation), and gold alternatives
outside the enum are flagged when the scorecard is loaded (`gold_problems`, which also flags values outside a
declared `format` and arguments the tool does not declare).
A plain-text answer is an abstention; text with tool-call markup that does not parse, or an answer cut off by
the length limit, is a parse failure, never an abstention.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

from gate.engines.types import Response
from gate.io.jsonkind import json_kind
from gate.score.extract import flexible_json
from gate.score.sandbox import Execution, Limits, run_calls
from gate.score.types import Item, Score

_BFCL_STRIP = re.compile(r"[ ,./\-_*^]")
_NOT_GIVEN = object()
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$")


def normalize_value(value: Any, mode: str = "bfcl", nested: bool = True, _depth: int = 0,
                    _in_list: bool = False) -> Any:
    """BFCL `standardize_string` (drop ` ,./-_*^`, lowercase, ' -> ") or `basic` (casefold, collapse spaces);
    numbers compare by value (1 == 1.0) but exactly (an int is never rounded through a float, so 2**53 + 1 is
    not 2**53) and booleans are never numbers. With `nested`, strings one level down are normalised as BFCL's
    checker does (`list_checker`, `dict_checker`, `list_dict_checker`): the items of an argument's list, the
    values of an argument's object, and the values of objects that are items of an argument's list. Anything
    deeper (a list inside a list, an object or list inside an object) is compared exactly, as in BFCL."""
    if isinstance(value, str):
        if mode == "bfcl":
            return _BFCL_STRIP.sub("", value).lower().replace("'", '"')
        if mode == "basic":
            return re.sub(r"\s+", " ", value).strip().casefold()
        return value
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int | float):
        return ("num", value)  # int == float compares exactly in Python; no float() round trip
    if isinstance(value, list | tuple):
        # a list's items are normalised only when the list is the argument itself
        inner = mode if nested and _depth == 0 else "none"
        return ("list", tuple(normalize_value(v, inner, nested, _depth + 1, True) for v in value))
    if isinstance(value, dict):
        # an object's values: when the object is the argument, or an item of the argument's list
        inner = mode if nested and (_depth == 0 or (_depth == 1 and _in_list)) else "none"
        return ("dict", tuple(sorted(((k, normalize_value(v, inner, nested, _depth + 1)) for k, v in value.items()),
                                     key=lambda kv: kv[0])))
    return value


def mask_except(text: str, keep: Collection[str], masker: Callable[[str], str] | None = None) -> str:
    """`text` through `masker` (default `gate.pii.redact.mask_loose`) except the whole tokens in `keep`: declared tool
    names are configuration, not personal data, and must stay readable ("called 'calculate_area_v2'", not
    "'calc***'"). Only whole tokens are kept: a kept name inside a longer token must not split that token into
    pieces too short to be masked. Whitespace around the kept names is preserved whatever the masker does."""
    if masker is None:
        from gate.pii.redact import mask_loose as masker
    words = sorted({k for k in keep if k and k in text}, key=len, reverse=True)
    if not words:
        return masker(text)
    parts = re.split(r"(?<![\w\-+/=.])(" + "|".join(map(re.escape, words)) + r")(?![\w\-+/=])", text)

    def masked(p: str) -> str:
        core = p.strip()
        return p[: len(p) - len(p.lstrip())] + masker(core) + p[len(p.rstrip()):] if core else p
    return "".join(p if i % 2 else masked(p) for i, p in enumerate(parts))


def tool_key(name: str) -> str:
    """The one normalised tool name used for lookup and every metric (`a.b` and `a_b` are the same tool)."""
    return name.replace(".", "_")


def _json_kind(v: Any) -> str:
    """The JSON type the model wrote (gate.io.jsonkind: 10.0 is a number, not an integer, since a Python tool would
    get a float); the scorer uses it as is, null, arrays and objects included, since any of them is a wrong type."""
    return json_kind(v)


def _strict_validator_class() -> Any:
    """Draft 2020-12 with `integer` meaning a JSON integer as written (JSON Schema's own accepts 5.0)."""
    from jsonschema import Draft202012Validator, validators

    checker = Draft202012Validator.TYPE_CHECKER.redefine(
        "integer", lambda _c, v: isinstance(v, int) and not isinstance(v, bool))
    return validators.extend(Draft202012Validator, type_checker=checker)


def _schema_error_kind(err: Any) -> str:
    v = err.validator
    if v == "required":
        return "missing_argument"
    if v in ("additionalProperties", "unevaluatedProperties"):
        return "extra_argument"
    if v == "type":
        return "wrong_type"
    return "bad_value"


def gold_problems(tools: list[dict[str, Any]] | tuple[dict[str, Any], ...] | None,
                  expected: Any) -> list[tuple[str, str]]:
    """(field, message) for every gold value of an item that no call can ever match: an argument value or an
    `acceptable` alternative the tool's schema refuses (outside an enum, wrong JSON type), an omittable ("") argument
    the schema requires, a call to a tool the prompt does not offer. Checked when the scorecard is loaded, because at
    scoring time such an alternative is silently unreachable."""
    from gate.template.toolcalls import schemas_of

    gold = expected.get("tool_calls") if isinstance(expected, dict) else None
    if not isinstance(gold, list) or not tools:
        return []
    from gate.contract.schemas import validator

    schemas = schemas_of(list(tools))
    by_key = {tool_key(n): n for n in schemas}
    cls = _strict_validator_class()
    out: list[tuple[str, str]] = []
    for i, call in enumerate(gold):
        if not isinstance(call, dict):
            continue
        where = f"expected.tool_calls[{i}]"
        name = str(call.get("name", ""))
        declared = by_key.get(tool_key(name))
        if declared is None:
            out.append((f"{where}.name", f"tool {name!r} is not among the prompt's tools"))
            continue
        schema = schemas[declared]
        v = validator(schema, cls=cls)  # the validator scoring uses: `format` asserted the same way
        props = _declared_properties(schema)
        required = set(schema.get("required") or []) if isinstance(schema, dict) else set()
        base = dict(call.get("arguments") or {}) if isinstance(call.get("arguments"), dict) else {}
        options: list[tuple[str, str, Any]] = [(k, f"{where}.arguments.{k}", val) for k, val in base.items()]
        acceptable = call.get("acceptable") if isinstance(call.get("acceptable"), dict) else {}
        for k, alts in acceptable.items():
            for j, alt in enumerate(alts if isinstance(alts, list) else [alts]):
                field = f"{where}.acceptable.{k}[{j}]"
                if alt == "":
                    if k in required:
                        out.append((field, f"'' (may be omitted) for {declared}.{k}, which the schema requires"))
                    continue
                options.append((k, field, alt))
        for k, field, val in options:
            errs = [e for e in v.iter_errors({**base, k: val}) if list(e.absolute_path)[:1] == [k]
                    or (e.validator in ("additionalProperties", "unevaluatedProperties") and repr(k) in e.message)]
            if errs:
                from gate.pii.redact import value_snippet as snippet

                out.append((field, f"{snippet(val, 40)} for {declared}.{k} can never match: "
                                   f"{errs[0].message[:120]}"))
            elif props is not None and k not in props:
                out.append((field, f"argument {k!r} is not declared by {declared}: a call passing it scores "
                                   "extra_argument (BFCL: unexpected parameter)"))
    return out


def _declared_properties(schema: Any) -> set[str] | None:
    """The argument names a tool declares, or None where it declares none or admits others on purpose (an explicit
    `additionalProperties` that is not false): BFCL refuses any parameter outside `properties`."""
    if not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict):
        return None
    extra = schema.get("additionalProperties", False)
    if extra is not False and extra is not None and "additionalProperties" in schema:
        return None
    return set(schema["properties"])


class ToolExecution:
    """Options: `implementation` (path to a Python module with a `TOOLS` table and `initial_state()`; without
    it, execution is skipped), `normalize` (bfcl | basic | none), `text_formats` (raw-text parsers tried when the
    server returned no tool_calls: hermes, glm47, glm45, json), `execute` (true), `compare` (both | result |
    state), `limits` (cpu_s, wall_s, memory_mb, output_bytes). `tools` (OpenAI-style) comes from the scorecard's
    prompt wrapper. Gold per item: `expected.tool_calls` = [{name, arguments, acceptable?}], where
    `acceptable` maps an argument to a list of accepted values ("" = may be omitted); `expected.refusal: true` or
    an empty list means no call is right. `normalize_nested` (true): normalise strings one level down as BFCL
    does (see `normalize_value`); false compares them exactly."""

    type = "tool_execution"
    keys = ("correct", "parsed", "function", "arguments", "executed", "server_parsed")
    # `tools` comes from the prompt wrapper (the loader injects it); the rest are the scorecard's options
    options_schema = {"type": "object", "additionalProperties": False, "properties": {
        "tools": {"type": "array", "items": {"type": "object"}},
        "implementation": {"type": "string"},
        "normalize": {"type": "string"},
        "text_formats": {"type": "array", "items": {"type": "string"}},
        "execute": {"type": "boolean"},
        "compare": {"type": "string"},
        "limits": {"type": "object"},
        "normalize_nested": {"type": "boolean"},
    }}
    primary = "correct"

    def __init__(self, tools: list[dict[str, Any]] | None = None, implementation: str | Path | None = None,
                 normalize: str = "bfcl", text_formats: list[str] | None = None, execute: bool = True,
                 compare: str = "both", limits: dict[str, Any] | None = None,
                 normalize_nested: bool = True) -> None:
        from gate.contract.schemas import validator  # no $ref retrieval, ECMA-262 patterns
        from gate.template.toolcalls import schemas_of

        cls = _strict_validator_class()
        self.schemas = schemas_of(tools or [])
        self.names = {tool_key(n): n for n in self.schemas}  # normalised -> declared name
        self.declared_names = set(self.names) | set(self.names.values())
        self.validators = {tool_key(n): validator(s, cls=cls) for n, s in self.schemas.items()}
        self.normalize_nested = normalize_nested
        self.implementation = Path(implementation) if implementation else None
        self.normalize = normalize
        self.text_formats = tuple(text_formats or ("hermes", "glm47", "json"))
        self.execute = execute and self.implementation is not None
        self.compare = compare
        self.limits = Limits(**(limits or {}))
        self._gold_cache: dict[str, Execution] = {}

    # -- parsing ---------------------------------------------------------------------------------------------
    def parse(self, response: Response) -> tuple[str, list[tuple[str, Any]], str]:
        """(source, calls, why). source: server | text | none | failed. A call whose arguments do not decode
        is kept with arguments None so the parse failure is reported, not hidden."""
        if response.tool_calls:
            calls: list[tuple[str, Any]] = []
            for tc in response.tool_calls:
                try:
                    args = json.loads(tc.arguments) if tc.arguments.strip() else {}
                except ValueError:
                    return "failed", [(tc.name, None)], f"arguments of {tc.name} are not JSON"
                calls.append((tc.name, args))
            return "server", calls, ""
        text = response.text or ""
        if "<tool_call>" in text:
            from gate.template.toolcalls import parse

            for fmt in self.text_formats:
                if fmt == "json":
                    continue
                found = parse(fmt, text, self.schemas)
                if found and all(_IDENT.match(n) and isinstance(a, dict) for n, a in found):
                    return "text", found, f"recovered from text ({fmt})"
            return "failed", [], "tool-call markup in the text does not parse"
        if "json" in self.text_formats:
            ok, obj = flexible_json(text)
            if ok and isinstance(obj, dict) and isinstance(obj.get("name"), str) and tool_key(obj["name"]) in \
                    self.names:
                args = obj.get("arguments", obj.get("parameters", {}))
                if isinstance(args, str):
                    try:
                        args = json.loads(args)
                    except ValueError:
                        return "failed", [(obj["name"], None)], "arguments string is not JSON"
                return "text", [(obj["name"], args)], "recovered from a JSON object in the text"
        if response.finish_reason == "length":
            return "failed", [], "answer cut off by the length limit"
        return "none", [], "no tool call"

    # -- checking one call -----------------------------------------------------------------------------------
    def check_call(self, gold: dict[str, Any], name: str, args: Any) -> tuple[str | None, str]:
        """(error kind or None, why) for one model call against one gold call."""
        want = str(gold.get("name", ""))
        if tool_key(name) != tool_key(want):
            return "wrong_function", f"called {name!r}, expected {want!r}"
        if not isinstance(args, dict):
            return "parse_failure", f"arguments of {name} are not an object"
        validator = self.validators.get(tool_key(name))
        if validator is not None:
            errs = sorted(validator.iter_errors(args), key=lambda e: (list(e.absolute_path), e.validator))
            if errs:
                order = ("missing_argument", "extra_argument", "wrong_type", "bad_value")
                err = min(errs, key=lambda e: order.index(_schema_error_kind(e)))
                where = "/".join(map(str, err.absolute_path)) or name
                return _schema_error_kind(err), f"{where}: {err.message[:160]}"
        schema = self.schemas.get(self.names.get(tool_key(name), ""), {})
        props = _declared_properties(schema)
        if props is not None:
            for k in args:
                if k not in props:
                    return "extra_argument", f"{name}: argument '{k}' is not declared by the tool"
        gold_args = dict(gold.get("arguments") or {})
        acceptable = {k: list(v) for k, v in (gold.get("acceptable") or {}).items()}
        for k, v in gold_args.items():
            acceptable.setdefault(k, [v])
        for k in args:
            if k not in acceptable:
                return "extra_argument", f"{name}: argument '{k}' is not in the gold call"
        for k, options in acceptable.items():
            got = args.get(k, _NOT_GIVEN)
            if got is _NOT_GIVEN:
                if "" in options:
                    continue
                return "missing_argument", f"{name}: argument '{k}' is missing"
            declared = "type" in (self.schemas.get(self.names.get(tool_key(name), ""), {}).get("properties")
                                  or {}).get(k, {})
            if not self._type_ok(got, [o for o in options if o != ""], declared):
                return "wrong_type", f"{name}: argument '{k}' is {_json_kind(got)}"
            item_schema = ((schema.get("properties") or {}).get(k) or {}).get("items") if isinstance(
                (schema.get("properties") or {}).get(k), dict) else None
            if not self._items_ok(got, [o for o in options if o != ""], item_schema):
                return "wrong_type", f"{name}: argument '{k}' has an integer where the list holds numbers (floats)"
            norm = [normalize_value(o, self.normalize, self.normalize_nested) for o in options]
            if normalize_value(got, self.normalize, self.normalize_nested) not in norm:
                return "bad_value", f"{name}: argument '{k}' has a value the gold does not accept"
        return None, "matches"

    @staticmethod
    def _type_ok(got: Any, options: list[Any], declared: bool = False) -> bool:
        """An integer is accepted where the gold has a float (BFCL). Where the schema declares the parameter's
        type it has already decided integer vs number (8.0 is a fine `number` even if the gold wrote 8); where
        it does not, a float is refused where every gold number is an integer (10.0 for `base: 10` is a float in
        Python). Otherwise the JSON types must agree."""
        if not options:
            return True
        def kind(v: Any) -> str:
            k = _json_kind(v)
            return "number" if declared and k == "integer" else k
        kinds = {kind(o) for o in options}
        return kind(got) in kinds or (kind(got) == "integer" and "number" in kinds)

    @staticmethod
    def _items_ok(got: Any, options: list[Any], item_schema: Any) -> bool:
        """BFCL's one-level nested type check: in a list whose items are floats (declared `items: {type:
        number}`, or, undeclared, the gold list's own first item a float), an integer item is refused (`[1, 3]`
        for `[1.0, 3.0]`), unless the gold list itself writes integers (BFCL reads the gold's type as allowed). The
        top-level int-for-float allowance does not reach inside the list, as in BFCL."""
        if not isinstance(got, list) or not any(isinstance(i, int) and not isinstance(i, bool) for i in got):
            return True
        golds = [o for o in options if isinstance(o, list)]
        if not golds:
            return True
        declared = item_schema.get("type") if isinstance(item_schema, dict) else None
        for g in golds:
            first = next((x for x in g if x != ""), None)
            gold_kind = _json_kind(first) if first is not None else None
            wants_float = declared == "number" or (declared is None and gold_kind == "number")
            if not wants_float or gold_kind == "integer":
                return True
        return False

    def _match(self, gold: list[dict[str, Any]], calls: list[tuple[str, Any]]) -> tuple[list[int] | None, str, str]:
        """Optimal assignment of model calls to gold calls (most matching pairs, any n): (order or None, error,
        why). The error reported is the first gold call left unmatched by that assignment."""
        import numpy as np
        from scipy.optimize import linear_sum_assignment

        n = len(gold)
        table = [[self.check_call(g, nm, a) for nm, a in calls] for g in gold]
        cost = np.array([[0.0 if cell[0] is None else 1.0 for cell in row] for row in table])
        rows, cols = linear_sum_assignment(cost)
        perm = [int(c) for _, c in sorted(zip(rows.tolist(), cols.tolist(), strict=True))]
        if all(table[i][perm[i]][0] is None for i in range(n)):
            return perm, "", "all calls match"
        first = next(i for i in range(n) if table[i][perm[i]][0] is not None)
        err, why = table[first][perm[first]]
        return None, str(err), why

    # -- execution -------------------------------------------------------------------------------------------
    def _run(self, calls: list[tuple[str, dict[str, Any]]]) -> Execution:
        assert self.implementation is not None
        return run_calls(self.implementation, calls, None, self.limits)

    def _gold_run(self, calls: list[tuple[str, dict[str, Any]]]) -> Execution:
        key = json.dumps(calls, sort_keys=True)
        if key not in self._gold_cache:
            ex = self._run(calls)
            if ex.status != "ok":
                from gate.errors import GateError

                raise GateError(f"the gold calls fail in the tool implementation ({ex.status}: {ex.detail})",
                                file=str(self.implementation))
            self._gold_cache[key] = ex
        return self._gold_cache[key]

    # -- scoring ---------------------------------------------------------------------------------------------
    def score(self, item: Item, response: Response) -> Score:
        exp = item.expected if isinstance(item.expected, dict) else {}
        gold = list(exp.get("tool_calls") or [])
        no_call_wanted = bool(exp.get("refusal")) or ("tool_calls" in exp and not gold)
        zero = dict.fromkeys(("correct", "parsed", "function", "arguments", "server_parsed"), 0.0)
        if response.error:
            return Score(zero, None, f"no answer: {response.error}", {"error": "engine_error"})
        source, calls, why = self.parse(response)
        answer = json.dumps([{"name": n, "arguments": a} for n, a in calls], sort_keys=True)[:500] if calls else \
            (response.text or "")[:300]
        meta: dict[str, Any] = {"source": source, "n_calls": len(calls), "finish_reason": response.finish_reason}
        if source == "text":
            meta["parser_missed"] = True  # the model wrote a call the server's parser did not return
        value = {**zero, "parsed": float(source in ("server", "text", "none")),
                 "server_parsed": float(source == "server")}

        def done(error: str | None, explanation: str) -> Score:
            if error:
                meta["error"] = error
            value["correct"] = float(error is None)
            # schema messages quote the model's values: masked like any model text, but the declared tool names
            # (configuration, not personal data) stay readable in the record and the reports
            return Score(value, answer, mask_except(explanation, self.declared_names), meta)

        if source == "failed":
            return done("parse_failure", why)
        if no_call_wanted:
            if calls:
                return done("unwanted_call", f"called {calls[0][0]} where no call is right")
            return done(None, "no call, as expected")
        if not calls:
            return done("abstention", "answered in text without calling a tool")
        if len(calls) != len(gold):
            return done("wrong_count", f"{len(calls)} call(s), expected {len(gold)}")
        order, err, why = self._match(gold, calls)
        names_ok = sorted(tool_key(n) for n, _ in calls) == sorted(tool_key(str(g.get("name"))) for g in gold)
        value["function"] = float(names_ok)
        if order is None:
            return done(err, why)
        value["arguments"] = 1.0
        if not self.execute:
            return done(None, "all calls match (not executed)")
        # the declared tool runs, whichever spelling of its name the model used
        model_calls = [(self.names.get(tool_key(calls[j][0]), str(gold[i]["name"])), calls[j][1])
                       for i, j in enumerate(order)]
        gold_calls = [(str(g["name"]), dict(g.get("arguments") or {})) for g in gold]
        value["executed"] = 0.0
        got = self._run(model_calls)
        meta["execution"] = {"status": got.status, "detail": got.detail, "wall_s": round(got.wall_s, 4),
                             "network": got.network}
        if got.status in ("timeout", "sandbox_violation"):
            return done(got.status, got.detail)
        if got.status != "ok":
            return done("execution_error", got.detail)
        value["executed"] = 1.0
        ref = self._gold_run(gold_calls)
        if self.compare in ("both", "result") and list(got.results) != list(ref.results):
            return done("wrong_result", "results differ from the gold calls' results")
        if self.compare in ("both", "state") and got.state != ref.state:
            return done("wrong_result", "final state differs from the gold calls' final state")
        return done(None, "calls match and execute to the gold result and state")
