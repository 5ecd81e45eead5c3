"""Loading a contract: YAML with line numbers (`gate.yamlio`), validated against the contract meta-schema, frozen.

Every mistake a person can make in a contract (a typo in a key, a broken regex, an invalid JSON Schema)
ends the run with one line that names the file, the line and the key.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from gate import yamlio
from gate.contract import schemas
from gate.contract.file_schema import contract_schema
from gate.errors import ContractError, GateError
from gate.names import CHECK_NAMES

#: a Hugging Face Hub shard file name: `{split}-{shard:05d}-of-{shards:05d}`
_HF_SHARD = re.compile(r"(.+)-\d{5}-of-\d{5}")


@dataclass(frozen=True)
class FieldSpec:
    name: str
    type: str
    required: bool = False
    unique: bool = False
    pattern: str | None = None
    allowed: tuple[Any, ...] | None = None
    min_length: int | None = None
    max_length: int | None = None
    max_null_rate: float | None = None


@dataclass(frozen=True)
class ToolSpec:
    name: str
    parameters: MappingProxyType
    description: str = ""

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(self.parameters.get("required", ()))


@dataclass(frozen=True)
class TokenizerRef:
    """The model tokenizer (and its chat template) the data is trained with: a local directory or an id in the
    local Hugging Face cache; `revision` pins a cached snapshot. Nothing is ever downloaded."""

    path: str
    revision: str | None = None


@dataclass(frozen=True)
class Contract:
    """A parsed, validated contract. `sha256` identifies its meaning (comments and key order do not count)."""

    path: str
    name: str
    version: str
    sha256: str
    raw: MappingProxyType
    fields: tuple[FieldSpec, ...] = ()
    allow_extra_fields: bool = True
    sources: tuple[str, ...] | None = None
    languages: tuple[str, ...] | None = None
    roles: tuple[str, ...] = ("system", "user", "assistant", "tool")
    system_prompt: str = "optional"
    min_messages: int = 1
    max_messages: int | None = None
    final_role: str = "assistant"
    allow_empty_assistant: bool = False
    output_format: str = "text"
    output_applies_to: str = "final_assistant"
    output_schema: MappingProxyType | None = None
    tools: tuple[ToolSpec, ...] = ()
    on_missing_required: str = "ask_user"
    require_row_tools: bool = False
    refusal: MappingProxyType | None = None
    missing_information: MappingProxyType | None = None
    group_key: str | None = None
    group_fallback_key: str | None = None
    group_window: str | None = None
    text_roles: tuple[str, ...] = ("user", "assistant")
    include_tool_calls: bool = True
    limits: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))
    max_duplicate_rate: float = 0.0
    max_findings: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))
    check_options: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))
    evaluation_sets: tuple[str, ...] = ()
    tokenizer: TokenizerRef | None = None
    split_globs: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))

    def split_kind(self, split: str) -> str | None:
        """The known split (train, val, test, ...) a split name is: itself when known, else the first `splits`
        rule whose glob matches it; None for a name nothing maps (the reader refuses such a file). A name the
        contract's `checks.contamination` train_splits or eval_splits list is known as itself."""
        from fnmatch import fnmatchcase

        from gate.io.dataset import SPLIT_ORDER

        named = self.options("contamination")
        if split in SPLIT_ORDER or split in (*named.get("train_splits", ()), *named.get("eval_splits", ())):
            return split
        shard = _HF_SHARD.fullmatch(split)  # the Hub's own naming: train-00000-of-00003.parquet is train
        if shard and shard.group(1) in SPLIT_ORDER:
            return shard.group(1)
        for kind, globs in self.split_globs.items():
            if any(fnmatchcase(split, g) for g in globs):
                return str(kind)
        return None

    def split_kinds(self, splits: Any) -> dict[str, str]:
        """{split name: the known split it is} for the names given (an unmapped name is itself)."""
        return {s: self.split_kind(s) or s for s in splits}

    def threshold(self, check: str) -> int:
        """How many error findings a check may have before it fails (0 unless the contract says otherwise)."""
        return int(self.max_findings.get(check, 0))

    def options(self, check: str) -> dict[str, Any]:
        return dict(self.check_options.get(check, {}))

    def tool(self, name: str) -> ToolSpec | None:
        for t in self.tools:
            if t.name == name:
                return t
        return None


def load_contract(path: str | Path) -> Contract:
    """Reads, validates and freezes a contract file."""
    return yamlio.guarded(lambda: _load_contract(Path(path)), path, ContractError)


def _load_contract(p: Path) -> Contract:
    doc = yamlio.read(p, what="contract", error=ContractError)
    doc.validate(contract_schema(), hint=_key_hint)  # every check's own options too, with line and "did you mean"
    data, fail = doc.data, doc.fail
    fields = _fields(data, fail)
    declared = {f.name for f in fields}
    output = data.get("output") or {}
    if output.get("schema") is not None:
        _check_schema(output["schema"], ["output", "schema"], fail)
        if output.get("format", "json") != "json":
            raise fail("an output schema needs format: json", ["output", "format"])
    tools_sec = data.get("tools") or {}
    tools = _tools(tools_sec, fail)
    refusal = data.get("refusal")
    if refusal:
        _check_refusal(refusal, fail)
    _check_references(data, declared, fail)
    msgs = data.get("messages") or {}
    text = data.get("text") or {}
    thresholds = data.get("thresholds") or {}
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)
    evaluation_sets = tuple(_inside(p, s, "evaluation set", fail, ["evaluation_sets", i])
                            for i, s in enumerate(data.get("evaluation_sets", [])))
    return Contract(
        path=str(p), name=data["name"], version=str(data["version"]),
        sha256=hashlib.sha256(canonical.encode()).hexdigest(), raw=_freeze(data),
        fields=tuple(fields), allow_extra_fields=data.get("allow_extra_fields", True),
        sources=tuple(data["sources"]) if "sources" in data else None,
        languages=tuple(data["languages"]) if "languages" in data else None,
        roles=tuple(msgs.get("roles", ("system", "user", "assistant", "tool"))),
        system_prompt=msgs.get("system_prompt", "optional"), min_messages=msgs.get("min_messages", 1),
        max_messages=msgs.get("max_messages"), final_role=msgs.get("final_role", "assistant"),
        allow_empty_assistant=msgs.get("allow_empty_assistant", False),
        output_format=output.get("format", "json" if output.get("schema") else "text"),
        output_applies_to=output.get("applies_to", "final_assistant"),
        output_schema=_freeze(output["schema"]) if output.get("schema") is not None else None,
        tools=tuple(tools), on_missing_required=tools_sec.get("on_missing_required", "ask_user"),
        require_row_tools=tools_sec.get("require_row_tools", False),
        refusal=_freeze(refusal) if refusal else None,
        missing_information=_freeze(data["missing_information"]) if data.get("missing_information") else None,
        group_key=data.get("group_key"), group_fallback_key=data.get("group_fallback_key"),
        group_window=data.get("group_window"),
        text_roles=tuple(text.get("roles", ("user", "assistant"))),
        include_tool_calls=text.get("include_tool_calls", True),
        limits=_freeze(data.get("limits") or {}),
        max_duplicate_rate=float(thresholds.get("max_duplicate_rate", 0.0)),
        max_findings=_freeze(thresholds.get("max_findings") or {}),
        check_options=_freeze(data.get("checks") or {}),
        evaluation_sets=evaluation_sets,
        tokenizer=_tokenizer(data, p, fail),
        split_globs=MappingProxyType({k: tuple(v) for k, v in (data.get("splits") or {}).items()}),
    )


def _inside(p: Path, ref: str, what: str, fail: Any, fpath: list[Any]) -> str:
    """A file the contract names, resolved relative to the contract and confined to its repository
    (gate.io.confine): a contract cannot make gate read outside it. A reference to nothing is kept as resolved:
    the check that reads it says it is missing, and confines it again then (gate.data.evalsets)."""
    from gate.io.confine import confine

    target = p.parent / ref
    if not os.path.lexists(target):
        return str(target.resolve())
    try:
        return str(confine(target, anchor=p, what=what))
    except GateError as exc:
        raise fail(exc.message, fpath) from None


def _check_regex(rx: str, fpath: list[Any], fail: Any) -> None:
    """A contract's regular expression is one RE2 runs (gate.contract.patterns): every row is matched by RE2, in
    time linear in the row, so no pattern a pull request writes can make the check backtrack for hours."""
    from gate.contract.patterns import problem

    why = problem(rx)
    if why:
        raise fail(f"regular expression refused: {why}", fpath)


def _check_schema(schema: dict[str, Any], fpath: list[Any], fail: Any) -> None:
    """The one gate for schemas from files: draft 2020-12, ECMA-262 patterns, no $ref outside the document."""
    try:
        schemas.check_schema(schema)
    except schemas.SchemaProblem as exc:
        raise fail(exc.message, [*fpath, *exc.path]) from None


def _fields(data: dict[str, Any], fail: Any) -> list[FieldSpec]:
    fields = []
    for fname, spec in (data.get("fields") or {}).items():
        if spec.get("pattern"):
            _check_regex(spec["pattern"], ["fields", fname, "pattern"], fail)
        fields.append(FieldSpec(
            name=fname, type=spec["type"], required=spec.get("required", False), unique=spec.get("unique", False),
            pattern=spec.get("pattern"), allowed=tuple(spec["allowed"]) if "allowed" in spec else None,
            min_length=spec.get("min_length"), max_length=spec.get("max_length"),
            max_null_rate=spec.get("max_null_rate")))
    return fields


def _tools(tools_sec: dict[str, Any], fail: Any) -> list[ToolSpec]:
    """The tool catalogue: each parameters schema through the schema gate, each name once."""
    tools = []
    names: set[str] = set()
    for i, t in enumerate(tools_sec.get("catalogue", [])):
        _check_schema(t["parameters"], ["tools", "catalogue", i, "parameters"], fail)
        if t["name"] in names:
            raise fail(f"tool '{t['name']}' is declared twice", ["tools", "catalogue", i, "name"])
        names.add(t["name"])
        tools.append(ToolSpec(name=t["name"], parameters=_freeze(t["parameters"]),
                              description=t.get("description", "")))
    return tools


def _check_refusal(refusal: dict[str, Any], fail: Any) -> None:
    for i, rx in enumerate(refusal["when_user_matches"]):
        _check_regex(rx, ["refusal", "when_user_matches", i], fail)
    if refusal.get("expect_text_matches"):
        _check_regex(refusal["expect_text_matches"], ["refusal", "expect_text_matches"], fail)
    if not any(refusal.get(k) for k in ("expect_output", "expect_text_matches", "forbid_tool_calls")):
        raise fail("a refusal rule needs expect_output, expect_text_matches or forbid_tool_calls", ["refusal"])


def _check_references(data: dict[str, Any], declared: set[str], fail: Any) -> None:
    """Names that point elsewhere exist: checks (in thresholds and options), PII entities, group keys, sources."""
    for check in (data.get("thresholds") or {}).get("max_findings", {}):
        if check not in CHECK_NAMES:
            raise fail(unknown_check(check), ["thresholds", "max_findings", check])
    for check in data.get("checks") or {}:
        if check not in CHECK_NAMES:
            raise fail(unknown_check(check), ["checks", check])
    from gate.pii.config import contract_problem  # stdlib only: no presidio at load time

    pii_problem = contract_problem(data.get("checks") or {})
    if pii_problem:  # an entity name the scan cannot look for (a typo, a pattern entity under ner_entities)
        raise fail(*pii_problem)
    from gate.data.operator_keys import operator_key_problem

    for key in ((data.get("scrub") or {}).get("operators") or {}):
        problem = operator_key_problem(key)
        if problem:  # a typo would drop or rewrite nothing, silently
            raise fail(problem, ["scrub", "operators", key])
    for key in ("group_key", "group_fallback_key"):
        if data.get(key) and declared and data[key] not in declared:
            raise fail(f"'{data[key]}' is not a declared field", [key])
    if (data.get("sources") is not None and declared and "source" not in declared):
        raise fail("sources are listed but no 'source' field is declared", ["sources"])


def _tokenizer(data: dict[str, Any], p: Path, fail: Any) -> TokenizerRef | None:
    """A relative path that exists next to the contract is taken from there; else it may be a cache id. A path
    that names a file (absolute, `./`, `../`, or present next to the contract) is confined to the repository."""
    tok = data.get("tokenizer")
    if not tok:
        return None
    tok_path = tok["path"]
    local = Path(tok_path).is_absolute() or tok_path.startswith(".") or os.path.lexists(p.parent / tok_path)
    if local:
        tok_path = _inside(p, tok_path, "tokenizer", fail, ["tokenizer", "path"])
    return TokenizerRef(path=tok_path, revision=tok.get("revision"))


def unknown_check(name: str) -> str:
    """`unknown check 'x'` with the likely one, or every valid name: the fix without reading the source."""
    hint = difflib.get_close_matches(name, CHECK_NAMES, n=1)
    if hint:
        return f"unknown check '{name}' (did you mean '{hint[0]}'?)"
    return f"unknown check '{name}' (the checks are: {', '.join(CHECK_NAMES)})"


def _key_hint(path: list[Any], key: str) -> str | None:
    """A check's name under `thresholds:` is a finding limit written one level too high."""
    if path == ["thresholds"] and key in CHECK_NAMES:
        return (f"a check's limit goes under max_findings: `thresholds: {{max_findings: {{{key}: N}}}}`; "
                "thresholds takes: max_duplicate_rate, max_findings")
    return None


def _freeze(obj: Any) -> Any:
    """Read-only views so a loaded contract cannot be changed by a check by accident."""
    if isinstance(obj, dict):
        return MappingProxyType({k: _freeze(v) for k, v in obj.items()})
    if isinstance(obj, list):
        return tuple(_freeze(v) for v in obj)
    return obj


def thaw(obj: Any) -> Any:
    """Plain dicts and lists again (for jsonschema, which wants mutable JSON-like values)."""
    if isinstance(obj, MappingProxyType | dict):
        return {k: thaw(v) for k, v in obj.items()}
    if isinstance(obj, tuple | list):
        return [thaw(v) for v in obj]
    return obj
