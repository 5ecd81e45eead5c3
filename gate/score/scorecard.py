"""Loading a scorecard: one YAML file naming suites, the prompt wrapper, decoding, scorers and gates.

Validated the way contracts are (`gate.yamlio`: the same duplicate-key-refusing loader and node lookup, so every
error names its file, line and key), hashed over its canonical form so a result can say exactly which
scorecard produced it (lm-eval `task_hashes`). Suites are read with one clear error per bad row. The prompt
wrapper and decoding are applied by `request_for`, so baseline and candidate get byte-identical requests.
"""

from __future__ import annotations

import difflib
import hashlib
import inspect
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gate import yamlio
from gate.contract.model import thaw
from gate.engines.types import Request
from gate.errors import GateError, InputError
from gate.io.rows import iter_jsonl
from gate.score.scorecard_schema import SCORECARD_SCHEMA
from gate.score.scorers import KEYS
from gate.score.types import Item


class ScorecardError(GateError):
    """The scorecard file is not a valid scorecard (unknown key, bad reference, unreadable suite...)."""


@dataclass(frozen=True)
class Suite:
    """A suite as loaded: its items in file order and the sha256 of the file's bytes."""

    name: str
    path: str
    sha256: str
    items: tuple[Item, ...]


@dataclass(frozen=True)
class ScorerSpec:
    name: str
    type: str
    options: dict[str, Any]
    suites: tuple[str, ...] | None = None

    def build(self) -> Any:
        from gate.score.scorers import build

        return build(self.type, dict(self.options))


@dataclass(frozen=True)
class Scorecard:
    """A parsed, validated scorecard. `sha256` identifies its meaning (comments and key order do not count);
    `suite_hashes` pins the item files."""

    path: str
    name: str
    version: str
    sha256: str
    raw: dict[str, Any]
    suites: tuple[Suite, ...]
    scorers: tuple[ScorerSpec, ...]
    decoding: dict[str, Any]
    system: str | None = None
    system_mode: str = "keep"
    tools: tuple[dict[str, Any], ...] | None = None
    tool_choice: Any = None
    response_format: dict[str, Any] | None = None
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)
    gates: tuple[dict[str, Any], ...] = ()
    kind: str = "quality"
    rollback_triggers: tuple[dict[str, Any], ...] = ()
    #: one-line problems that do not stop a run ("file:line: field: message"); `strict` loading refuses them
    warnings: tuple[str, ...] = ()

    @property
    def suite_hashes(self) -> dict[str, str]:
        return {s.name: s.sha256 for s in self.suites}

    def build_scorers(self) -> dict[str, Any]:
        """name -> scorer instance (built on demand: jsonschema and the sandbox are imported only here)."""
        return {s.name: s.build() for s in self.scorers}

    def scorers_for(self, suite: str) -> tuple[ScorerSpec, ...]:
        return tuple(s for s in self.scorers if s.suites is None or suite in s.suites)

    def request_for(self, item: Item) -> Request:
        """The request for one item under this scorecard's prompt wrapper and decoding (same for both models)."""
        msgs = [dict(m) for m in item.messages]
        if self.system is not None:
            has = bool(msgs) and msgs[0].get("role") == "system"
            if self.system_mode == "replace" or not has:
                msgs = [{"role": "system", "content": self.system}, *(msgs[1:] if has else msgs)]
            elif self.system_mode == "prepend":
                msgs[0] = {"role": "system", "content": self.system + "\n\n" + str(msgs[0].get("content", ""))}
        d = self.decoding
        return Request(messages=tuple(msgs), tools=self.tools, tool_choice=self.tool_choice,
                       response_format=self.response_format, temperature=float(d["temperature"]),
                       top_p=float(d.get("top_p", 1.0)), max_tokens=int(d["max_tokens"]), seed=d.get("seed", 0),
                       logprobs=bool(d.get("logprobs", False)),
                       stop=tuple(d["stop"]) if d.get("stop") else None,
                       chat_template_kwargs=dict(self.chat_template_kwargs) or None)


def load_suite(path: str | Path, name: str = "") -> Suite:
    """Reads a JSONL suite; the first bad row ends the run with one line naming file, line and field."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read suite ({exc.strerror or exc})", file=str(p)) from None
    items: list[Item] = []
    seen: dict[str, int] = {}
    for no, row in iter_jsonl(raw, str(p)):
        rid = row.get("id")
        if not isinstance(rid, str) or not rid.strip():
            raise InputError("missing or empty id", file=str(p), line=no, field="id")
        if rid in seen:
            raise InputError(f"duplicate id '{rid}' (first on line {seen[rid]})", file=str(p), line=no, field="id")
        seen[rid] = no
        cat = row.get("category")
        if not isinstance(cat, str) or not cat:
            raise InputError("missing or empty category", file=str(p), line=no, field="category")
        msgs = row.get("messages")
        if not isinstance(msgs, list) or not msgs:
            raise InputError("messages must be a non-empty list", file=str(p), line=no, field="messages")
        for i, m in enumerate(msgs):
            if not isinstance(m, dict) or not isinstance(m.get("role"), str):
                raise InputError("each message needs a role", file=str(p), line=no, field=f"messages[{i}].role")
        if "expected" not in row:
            raise InputError("missing expected", file=str(p), line=no, field="expected")
        extra = {k: v for k, v in row.items() if k not in ("id", "category", "messages", "expected")}
        items.append(Item(id=rid, category=cat, messages=tuple(msgs), expected=row["expected"],
                          suite=name or p.stem, line=no, extra=extra))
    if not items:
        raise InputError("suite has no items", file=str(p))
    return Suite(name=name or p.stem, path=str(p), sha256=hashlib.sha256(raw).hexdigest(), items=tuple(items))


def load_scorecard(path: str | Path, load_suites: bool = True, strict: bool = False) -> Scorecard:
    """Reads, validates and resolves a scorecard (suites, contract references, scorer options). Problems that leave
    the scorecard usable but a number wrong (a gold alternative no answer can reach) are `warnings`, each logged as
    one line on stderr; with `strict` the first of them is an error naming its file, line and field."""
    return yamlio.guarded(lambda: _load_scorecard(Path(path), load_suites, strict), path, ScorecardError)


def _gold_warnings(suites: list[Suite], specs: list[ScorerSpec], strict: bool) -> list[str]:
    """Gold tool calls checked against the tool schemas the scorer validates answers with."""
    out: list[str] = []
    for spec in specs:
        if spec.type != "tool_execution" or not spec.options.get("tools"):
            continue
        from gate.score.scorers.tools import gold_problems

        for suite in suites:
            if spec.suites is not None and suite.name not in spec.suites:
                continue
            for it in suite.items:
                for fld, msg in gold_problems(spec.options["tools"], it.expected):
                    err = InputError(f"item {it.id}: {msg}", file=suite.path, line=it.line, field=fld)
                    if strict:
                        raise err
                    out.append(str(err))
    if out:
        import logging

        log = logging.getLogger("gate.score.scorecard")
        for w in out:
            log.warning("gate: warning: %s", w)
    return out


class _Refs:
    """How a scorecard names other files: paths relative to the scorecard, contracts loaded with their errors
    reported at the scorecard field that names them, and the scorecard's own file:line:field `fail`."""

    def __init__(self, p: Path, fail: Any) -> None:
        self.p = p
        self.fail = fail

    def resolve(self, rel: str, fpath: list[Any] | None = None) -> Path:
        if "\x00" in rel:  # the OS refuses such a path with a bare ValueError
            raise ScorecardError(f"a file reference contains a NUL byte: {rel!r}", file=str(self.p))
        from gate.io.confine import OutsideRoot, confine

        target = self.p.parent / rel
        if not os.path.lexists(target):  # nothing there: the caller says "not found"
            return target.resolve()
        try:  # confined to the scorecard's repository (gate.io.confine): a scorecard cannot read outside it
            return confine(target, anchor=self.p, what="referenced file")
        except OutsideRoot as exc:
            if fpath is not None:
                raise self.fail(exc.message, fpath) from None
            raise ScorecardError(exc.message, file=str(self.p)) from None

    def contract_part(self, rel: str, fpath: list[Any]) -> Any:
        from gate.contract.model import load_contract

        path = self.resolve(rel, fpath)
        try:
            return load_contract(path)
        except GateError as exc:
            raise self.fail(f"contract reference: {exc}", fpath) from None


def _load_scorecard(p: Path, load_suites: bool, strict: bool = False) -> Scorecard:
    doc = yamlio.read(p, what="scorecard", error=ScorecardError)
    doc.validate(SCORECARD_SCHEMA)
    data = doc.data
    refs = _Refs(p, doc.fail)
    names, suites = _suites(data, refs, load_suites)
    prompt = data.get("prompt") or {}
    tools = _prompt_tools(prompt, refs)
    response_format = _response_format(prompt, data["name"], refs)
    specs, snames = _scorer_specs(data, names, tools, refs)
    warnings = _gold_warnings(suites, specs, strict)
    _check_gates(data, names, snames, doc.fail)
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)
    return Scorecard(
        path=str(p), name=data["name"], version=str(data["version"]),
        sha256=hashlib.sha256(canonical.encode()).hexdigest(), raw=data, suites=tuple(suites),
        scorers=tuple(specs), decoding=dict(data["decoding"]), system=prompt.get("system"),
        system_mode=prompt.get("system_mode", "keep"), tools=tuple(tools) if tools is not None else None,
        tool_choice=prompt.get("tool_choice"), response_format=response_format,
        chat_template_kwargs=dict(prompt.get("chat_template_kwargs") or {}),
        gates=tuple(dict(g) for g in data.get("gates") or []), kind=data.get("kind", "quality"),
        rollback_triggers=tuple(dict(t) for t in data.get("rollback_triggers") or []), warnings=tuple(warnings))


def _suites(data: dict[str, Any], refs: _Refs, load_suites: bool) -> tuple[set[str], list[Suite]]:
    """The declared suite names, and (with `load_suites`) the suites read and checked against a pinned sha256."""
    fail = refs.fail
    suites: list[Suite] = []
    names: set[str] = set()
    for i, s in enumerate(data["suites"]):
        if s["name"] in names:
            raise fail(f"suite '{s['name']}' is declared twice", ["suites", i, "name"])
        names.add(s["name"])
        sp = refs.resolve(s["path"], ["suites", i, "path"])
        if not sp.is_file():
            raise fail(f"suite file not found: {sp}", ["suites", i, "path"])
        if load_suites:
            suite = load_suite(sp, s["name"])
            if s.get("sha256") and s["sha256"] != suite.sha256:
                raise fail(f"suite file changed: sha256 {suite.sha256[:12]}… is not the pinned one",
                           ["suites", i, "sha256"])
            suites.append(suite)
    return names, suites


def _prompt_tools(prompt: dict[str, Any], refs: _Refs) -> list[dict[str, Any]] | None:
    """The tool catalogue sent with every prompt: given inline (each parameters schema checked by the same schema
    gate as a contract's) or taken from a contract."""
    fail = refs.fail
    tools: list[dict[str, Any]] | None = [dict(t) for t in prompt["tools"]] if "tools" in prompt else None
    for j, t in enumerate(tools or []):  # the tool scorer validates calls against these: the same schema gate
        params = (t.get("function") or {}).get("parameters") if isinstance(t.get("function"), dict) else None
        if isinstance(params, dict):
            from gate.contract.schemas import SchemaProblem, check_schema

            try:
                check_schema(params)
            except SchemaProblem as exc:
                raise fail(exc.message, ["prompt", "tools", j, "function", "parameters", *exc.path]) from None
    if prompt.get("tools_from_contract"):
        if tools is not None:
            raise fail("give tools or tools_from_contract, not both", ["prompt", "tools_from_contract"])
        c = refs.contract_part(prompt["tools_from_contract"], ["prompt", "tools_from_contract"])
        if not c.tools:
            raise fail("the contract has no tool catalogue", ["prompt", "tools_from_contract"])
        tools = [{"type": "function", "function": {"name": t.name, "description": t.description,
                                                   "parameters": thaw(t.parameters)}} for t in c.tools]
    return tools


def _response_format(prompt: dict[str, Any], card_name: str, refs: _Refs) -> dict[str, Any] | None:
    """The OpenAI-style `response_format` of every request, its schema inline or taken from a contract."""
    fail = refs.fail
    rf = dict(prompt["response_format"]) if prompt.get("response_format") else None
    if rf and rf.get("schema_from_contract"):
        c = refs.contract_part(rf.pop("schema_from_contract"), ["prompt", "response_format", "schema_from_contract"])
        if c.output_schema is None:
            raise fail("the contract has no output schema", ["prompt", "response_format", "schema_from_contract"])
        rf["schema"] = thaw(c.output_schema)
    if rf and rf["type"] == "json_schema":
        if "schema" not in rf:
            raise fail("json_schema needs schema or schema_from_contract", ["prompt", "response_format"])
        js = {"name": rf.get("name", card_name), "schema": rf["schema"]}
        if "strict" in rf:
            js["strict"] = rf["strict"]
        return {"type": "json_schema", "json_schema": js}
    if rf:
        return {"type": rf["type"]}
    return None


def _scorer_specs(data: dict[str, Any], names: set[str], tools: list[dict[str, Any]] | None, refs: _Refs
                  ) -> tuple[list[ScorerSpec], dict[str, str]]:
    """Each scorer with its options resolved (file references read, the prompt's tools injected), and the map
    scorer name -> type the gates are checked against."""
    fail = refs.fail
    specs: list[ScorerSpec] = []
    snames: dict[str, str] = {}
    for i, s in enumerate(data["scorers"]):
        where = ["scorers", i]
        if s["name"] in snames:
            raise fail(f"scorer '{s['name']}' is declared twice", [*where, "name"])
        snames[s["name"]] = s["type"]
        for j, sn in enumerate(s.get("suites", [])):
            if sn not in names:
                raise fail(f"no suite named '{sn}'", [*where, "suites", j])
        opts = dict(s.get("options") or {})
        opts = _resolve_options(s["type"], opts, tools, refs.resolve,
                                lambda m, k, w=where: fail(m, [*w, "options"], k), refs.contract_part,
                                [*where, "options"])
        specs.append(ScorerSpec(s["name"], s["type"], opts, tuple(s["suites"]) if "suites" in s else None))
    return specs, snames


def _check_gates(data: dict[str, Any], names: set[str], snames: dict[str, str], fail: Any) -> None:
    """Gates stay plain data for the release step; only their references and rule combinations are checked here,
    and gate and rollback-trigger names are unique."""
    for i, g in enumerate(data.get("gates") or []):
        if g["scorer"] not in snames:
            raise fail(f"no scorer named '{g['scorer']}'", ["gates", i, "scorer"])
        if g["metric"] not in KEYS[snames[g["scorer"]]]:
            raise fail(f"scorer '{g['scorer']}' ({snames[g['scorer']]}) has no metric '{g['metric']}' "
                       f"(it has {', '.join(KEYS[snames[g['scorer']]])})", ["gates", i, "metric"])
        if g.get("suite") and g["suite"] not in names:
            raise fail(f"no suite named '{g['suite']}'", ["gates", i, "suite"])
        if g["rule"] == "non_inferiority" and g.get("test") == "mcnemar":
            # McNemar tests "no difference"; a margin needs an interval, and a silent swap would hide that
            raise fail("test 'mcnemar' cannot test a non_inferiority margin: use paired_bootstrap or paired_t "
                       "(or leave test out)", ["gates", i, "test"])
        if "on_unmeasured" in g and g["rule"] != "absolute":
            raise fail("on_unmeasured applies to absolute gates only (an unmeasured paired gate always blocks)",
                       ["gates", i, "on_unmeasured"])
    gate_names = [g["name"] for g in data.get("gates") or []]
    for i, name in enumerate(gate_names):
        if name in gate_names[:i]:
            raise fail(f"gate '{name}' is declared twice", ["gates", i, "name"])
    trigger_names = [t["name"] for t in data.get("rollback_triggers") or []]
    for i, name in enumerate(trigger_names):
        if name in trigger_names[:i]:
            raise fail(f"rollback trigger '{name}' is declared twice", ["rollback_triggers", i, "name"])


def _resolve_options(type_name: str, opts: dict[str, Any], tools: list[dict[str, Any]] | None, resolve: Any,
                     fail: Any, contract_part: Any, where: list[Any]) -> dict[str, Any]:
    """Turns file references into values, injects the prompt's tools, and rejects options the scorer lacks."""
    for key in ("schema_from_contract", "implementation"):  # scorer options are free-form, so unchecked so far
        if key in opts and not isinstance(opts[key], str):
            raise fail(f"{key} must be a file path (a string), not {type(opts[key]).__name__}", key)
    if "schema_from_contract" in opts:
        c = contract_part(opts.pop("schema_from_contract"), [*where, "schema_from_contract"])
        if c.output_schema is None:
            raise fail("the contract has no output schema", "schema_from_contract")
        opts["schema"] = thaw(c.output_schema)
    if type_name == "tool_execution":
        if "tools" in opts:
            raise fail("tools come from the prompt wrapper, not from scorer options", "tools")
        opts["tools"] = tools or []
        if opts.get("implementation"):
            impl = resolve(opts["implementation"])
            if not impl.is_file():
                raise fail(f"tool implementation not found: {impl}", "implementation")
            opts["implementation"] = str(impl)
    from gate.score.scorers import scorer_class

    params = inspect.signature(scorer_class(type_name).__init__).parameters
    for k in opts:
        if k not in params:
            known = [n for n in params if n != "self"]
            hint = difflib.get_close_matches(k, known, n=1)
            raise fail(f"unknown option '{k}' for {type_name}" + (f" (did you mean '{hint[0]}'?)" if hint else ""), k)
    _check_option_types(scorer_class(type_name), opts, fail)
    if type_name == "format" and opts.get("schema") is not None:
        from gate.contract.schemas import SchemaProblem, check_schema

        try:  # draft 2020-12, ECMA-262 patterns, no $ref outside the schema, formats with a checker
            check_schema(opts["schema"], formats=opts.get("formats"))
        except SchemaProblem as exc:
            where = ".".join(map(str, exc.path))
            raise fail(f"{exc.message}" + (f" (at {where})" if where else ""), "schema") from None
    if type_name == "factual_support":  # light to build: bad values (method, judge keys) are refused with the line
        from gate.score.scorers.support import FactualSupport

        try:
            FactualSupport(**opts)
        except (ValueError, TypeError) as exc:
            key = next((k for k in opts if k in str(exc)), next(iter(opts), "method"))
            raise fail(str(exc), key) from None
    if type_name == "refusal":
        from gate.contract.patterns import problem  # matched by RE2: what it cannot run is refused here

        for pat in opts.get("patterns") or []:
            if why := problem(pat):
                raise fail(f"regular expression refused: {why}", "patterns")
    return opts


def _check_option_types(cls: type, opts: dict[str, Any], fail: Any) -> None:
    """The options against the scorer's declared `options_schema` (types, enums, ranges), so a wrong value is the
    scorecard's file:line at load and not an exception on every item while scoring (`max_words: eight`)."""
    schema = getattr(cls, "options_schema", None)
    if not isinstance(schema, dict):
        return
    from gate.contract.schemas import validator  # the one validator factory: nothing is ever retrieved

    errors = sorted(validator(schema, assert_formats=False).iter_errors(opts), key=lambda e: [str(p) for p in e.path])
    if errors:
        err = errors[0]
        key = str(err.path[0]) if err.path else next(iter(opts), "")
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in list(err.path)[1:])
        message = err.message if len(err.message) <= 200 else err.message[:197] + "..."
        raise fail(f"{message}" + (f" (at {key}{where})" if where else ""), key)
