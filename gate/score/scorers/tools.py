"""Tool execution, layered like BFCL's AST checker and then executed like its multi-turn checker.

Layers, each with its own error category (gate.score.types.TOOL_ERRORS), first failure wins:
parse (server `tool_calls`, else the raw text: hermes / GLM `<tool_call>` markup or a bare JSON call) ->
count -> function name -> arguments against the tool's JSON Schema (missing / extra / wrong type / bad value)
-> values against the gold's acceptable values with BFCL-style normalisation -> sandboxed execution of the
model's calls and of the gold calls on separate fresh states -> results and final state compared.
Parallel calls are matched to gold calls by the best assignment over all orderings (BFCL's greedy matching
can false-negative). A plain-text answer is an abstention; text with tool-call markup that does not parse,
or an answer cut off by the length limit, is a parse failure, never an abstention.
"""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from typing import Any

from gate.score.extract import flexible_json
from gate.score.sandbox import Execution, Limits, run_calls
from gate.score.types import Item, Score
from gate.serve.types import Response

_BFCL_STRIP = re.compile(r"[ ,./\-_*^]")
_NOT_GIVEN = object()
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$")


def normalize_value(value: Any, mode: str = "bfcl") -> Any:
    """BFCL `standardize_string` (drop ` ,./-_*^`, lowercase, ' -> ") or `basic` (casefold, collapse spaces);
    numbers compare by value (1 == 1.0) but booleans are never numbers; lists and dicts recurse."""
    if isinstance(value, str):
        if mode == "bfcl":
            return _BFCL_STRIP.sub("", value).lower().replace("'", '"')
        if mode == "basic":
            return re.sub(r"\s+", " ", value).strip().casefold()
        return value
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int | float):
        return ("num", float(value))
    if isinstance(value, list | tuple):
        return tuple(normalize_value(v, mode) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, normalize_value(v, mode)) for k, v in value.items()))
    return value


def _schema_error_kind(err: Any) -> str:
    v = err.validator
    if v == "required":
        return "missing_argument"
    if v in ("additionalProperties", "unevaluatedProperties"):
        return "extra_argument"
    if v == "type":
        return "wrong_type"
    return "bad_value"


class ToolExecution:
    """Options: `implementation` (path to a Python module with a `TOOLS` table and `initial_state()`; without
    it, execution is skipped), `normalize` (bfcl | basic | none), `text_formats` (raw-text parsers tried when the
    server returned no tool_calls: hermes, glm47, glm45, json), `execute` (true), `compare` (both | result |
    state), `limits` (cpu_s, wall_s, memory_mb, output_bytes). `tools` (OpenAI-style) comes from the scorecard's
    prompt wrapper. Gold per item: `expected.tool_calls` = [{name, arguments, acceptable?}], where
    `acceptable` maps an argument to a list of accepted values ("" = may be omitted); `expected.refusal: true` or
    an empty list means no call is right."""

    type = "tool_execution"
    keys = ("correct", "parsed", "function", "arguments", "executed", "server_parsed")
    primary = "correct"

    def __init__(self, tools: list[dict[str, Any]] | None = None, implementation: str | Path | None = None,
                 normalize: str = "bfcl", text_formats: list[str] | None = None, execute: bool = True,
                 compare: str = "both", limits: dict[str, Any] | None = None) -> None:
        from jsonschema import Draft202012Validator

        from gate.template.toolcalls import schemas_of

        self.schemas = schemas_of(tools or [])
        self.validators = {n: Draft202012Validator(s, format_checker=Draft202012Validator.FORMAT_CHECKER)
                           for n, s in self.schemas.items()}
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
            if ok and isinstance(obj, dict) and isinstance(obj.get("name"), str) and obj["name"] in self.schemas:
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
        if name.replace(".", "_") != want.replace(".", "_"):
            return "wrong_function", f"called {name!r}, expected {want!r}"
        if not isinstance(args, dict):
            return "parse_failure", f"arguments of {name} are not an object"
        validator = self.validators.get(name)
        if validator is not None:
            errs = sorted(validator.iter_errors(args), key=lambda e: (list(e.absolute_path), e.validator))
            if errs:
                order = ("missing_argument", "extra_argument", "wrong_type", "bad_value")
                err = min(errs, key=lambda e: order.index(_schema_error_kind(e)))
                where = "/".join(map(str, err.absolute_path)) or name
                return _schema_error_kind(err), f"{where}: {err.message[:160]}"
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
            if not self._type_ok(got, [o for o in options if o != ""]):
                return "wrong_type", f"{name}: argument '{k}' is {type(got).__name__}"
            if normalize_value(got, self.normalize) not in [normalize_value(o, self.normalize) for o in options]:
                return "bad_value", f"{name}: argument '{k}' has a value the gold does not accept"
        return None, "matches"

    @staticmethod
    def _type_ok(got: Any, options: list[Any]) -> bool:
        """int is accepted where the gold has a float (BFCL); otherwise the JSON types must agree."""
        def kind(v: Any) -> str:
            if isinstance(v, bool):
                return "bool"
            if isinstance(v, int | float):
                return "num"
            return type(v).__name__
        return not options or kind(got) in {kind(o) for o in options}

    def _match(self, gold: list[dict[str, Any]], calls: list[tuple[str, Any]]) -> tuple[list[int] | None, str, str]:
        """Best assignment of model calls to gold calls: (order or None, error, why)."""
        n = len(gold)
        table = [[self.check_call(g, nm, a) for nm, a in calls] for g in gold]
        perms = itertools.permutations(range(n)) if n <= 6 else [tuple(range(n))]
        best: tuple[int, tuple[int, ...]] | None = None
        for perm in perms:
            good = sum(table[i][perm[i]][0] is None for i in range(n))
            if best is None or good > best[0]:
                best = (good, perm)
            if good == n:
                return list(perm), "", "all calls match"
        assert best is not None
        perm = best[1]
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
            return Score(value, answer, explanation, meta)

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
        names_ok = sorted(n for n, _ in calls) == sorted(str(g.get("name")) for g in gold)
        value["function"] = float(names_ok)
        if order is None:
            return done(err, why)
        value["arguments"] = 1.0
        if not self.execute:
            return done(None, "all calls match (not executed)")
        model_calls = [(calls[j][0], calls[j][1]) for j in order]
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
