"""Loading a contract: YAML with line numbers, validated against the contract meta-schema, frozen afterwards.

Every mistake a person can make in a contract (a typo in a key, a broken regex, an invalid JSON Schema)
ends the run with one line that names the file, the line and the key.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from gate.contract.meta import CONTRACT_SCHEMA
from gate.errors import ContractError, GateError
from gate.names import CHECK_NAMES


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


_STR_TAG = "tag:yaml.org,2002:str"
_MERGE_TAG = "tag:yaml.org,2002:merge"
MAX_YAML_NODES = 200_000  # after expanding aliases: a "billion laughs" document is refused, not expanded


def _check_nodes(root: yaml.Node) -> None:
    """Refuses what a JSON-like document cannot be: non-string keys (`1:`, `yes:`, `? [a]`), self-referencing
    aliases, and alias bombs. Runs before construction, so none of them reaches the validators as a traceback."""
    seen = 0
    stack: list[tuple[yaml.Node, frozenset[int]]] = [(root, frozenset())]
    while stack:
        node, above = stack.pop()
        seen += 1
        if seen > MAX_YAML_NODES:
            raise ContractError(f"document too large (more than {MAX_YAML_NODES:,} values after expanding "
                                "aliases)", line=node.start_mark.line + 1)
        if id(node) in above:
            raise ContractError("an alias refers to itself (recursive document)", line=node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            inner = above | {id(node)}
            for key, value in node.value:
                if key.tag not in (_STR_TAG, _MERGE_TAG):
                    scalar = isinstance(key, yaml.ScalarNode)
                    msg = (f"key {str(key.value)[:40]!r} is not a string (quote it)" if scalar
                           else "a key is a list or mapping; keys must be strings")
                    raise ContractError(msg, line=key.start_mark.line + 1)
                stack.append((value, inner))
        elif isinstance(node, yaml.SequenceNode):
            inner = above | {id(node)}
            stack.extend((item, inner) for item in node.value)


class _LineLoader(yaml.SafeLoader):
    """A SafeLoader that refuses duplicate keys: a contract with the same key twice is ambiguous."""

    def compose_document(self) -> yaml.Node:
        node = super().compose_document()
        if node is not None:
            _check_nodes(node)
        return node

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        # PyYAML's own constructors fail with bare errors on some tagged values (`!!timestamp ` empty,
        # `!!bool maybe`, `!!int x`): report the value's line instead
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, TypeError, KeyError, AttributeError, OverflowError) as exc:
            raise ContractError(f"cannot read this {node.tag.rsplit(':', 1)[-1]} value ({type(exc).__name__})",
                                line=node.start_mark.line + 1) from None


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise ContractError(f"duplicate key '{key}'", line=key_node.start_mark.line + 1, field=str(key))
        seen.add(key)
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _node_at(root: yaml.Node, path: list[Any], key: str | None = None) -> yaml.Node | None:
    """Walks the YAML node tree along a JSON path; with `key`, returns that key's node in the final mapping."""
    node: yaml.Node | None = root
    for part in path:
        if isinstance(node, yaml.MappingNode):
            node = next((v for k, v in node.value if k.value == str(part)), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
        else:
            return node
    if key is not None and isinstance(node, yaml.MappingNode):
        return next((k for k, _ in node.value if k.value == key), node)
    return node


def _dotted(path: list[Any]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _known_keys(schema: dict[str, Any], path: list[Any]) -> list[str]:
    node = schema
    for part in path:
        if isinstance(part, int):
            node = node.get("items", {})
        else:
            node = node.get("properties", {}).get(part) or node.get("additionalProperties") or {}
    return sorted(node.get("properties", {}))


def load_contract(path: str | Path) -> Contract:
    """Reads, validates and freezes a contract file."""
    try:
        return _load_contract(Path(path))
    except RecursionError:  # PyYAML and jsonschema descend recursively
        raise ContractError("nested too deeply", file=str(path)) from None
    except ContractError as exc:
        raise one_line(exc) from None


def one_line(exc: GateError) -> GateError:
    """Keys and values quoted in a message come from the file: control characters are escaped and a value
    echoed by the validator is cut short, so the error stays one readable line."""
    def clean(text: str, limit: int) -> str:
        text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
        return text if len(text) <= limit else text[: limit - 1] + "…"

    exc.message = clean(exc.message, 240)
    exc.args = (exc.message,)
    if exc.field is not None:
        exc.field = clean(str(exc.field), 80)
    return exc


def _load_contract(p: Path) -> Contract:
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ContractError("contract file not found", file=str(p)) from None
    except UnicodeDecodeError as exc:
        raise ContractError(f"contract is not UTF-8 (byte {exc.start})", file=str(p)) from None
    except OSError as exc:
        raise ContractError(f"cannot read contract ({exc.strerror})", file=str(p)) from None
    try:
        root = yaml.compose(text, Loader=_LineLoader)
        data = yaml.load(text, Loader=_LineLoader)
    except ContractError as exc:
        exc.file = str(p)
        raise
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ContractError(f"invalid YAML: {problem}", file=str(p),
                            line=mark.line + 1 if mark else None) from None
    if not isinstance(data, dict):
        raise ContractError("a contract must be a YAML mapping", file=str(p), line=1)

    errors = sorted(Draft202012Validator(CONTRACT_SCHEMA).iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        err = errors[0]
        epath = list(err.absolute_path)
        if err.validator == "additionalProperties":
            extra = [k for k in err.instance if k not in err.schema.get("properties", {})]
            key = extra[0] if extra else None
            node = _node_at(root, epath, key)
            hint = difflib.get_close_matches(str(key), _known_keys(CONTRACT_SCHEMA, epath), n=1)
            msg = f"unknown key '{key}'" + (f" (did you mean '{hint[0]}'?)" if hint else "")
            raise ContractError(msg, file=str(p), line=node.start_mark.line + 1 if node else None,
                                field=_dotted([*epath, key]))
        node = _node_at(root, epath)
        raise ContractError(err.message, file=str(p), line=node.start_mark.line + 1 if node else None,
                            field=_dotted(epath))

    def fail(msg: str, fpath: list[Any]) -> ContractError:
        node = _node_at(root, fpath)
        return ContractError(msg, file=str(p), line=node.start_mark.line + 1 if node else None, field=_dotted(fpath))

    def check_regex(rx: str, fpath: list[Any]) -> None:
        try:
            re.compile(rx)
        except re.error as exc:
            raise fail(f"invalid regular expression: {exc}", fpath) from None

    def check_schema(schema: dict[str, Any], fpath: list[Any]) -> None:
        try:
            Draft202012Validator.check_schema(schema)
        except SchemaError as exc:
            raise fail(f"invalid JSON Schema: {exc.message}", [*fpath, *exc.absolute_path]) from None

    fields = []
    for fname, spec in (data.get("fields") or {}).items():
        if spec.get("pattern"):
            check_regex(spec["pattern"], ["fields", fname, "pattern"])
        fields.append(FieldSpec(
            name=fname, type=spec["type"], required=spec.get("required", False), unique=spec.get("unique", False),
            pattern=spec.get("pattern"), allowed=tuple(spec["allowed"]) if "allowed" in spec else None,
            min_length=spec.get("min_length"), max_length=spec.get("max_length"),
            max_null_rate=spec.get("max_null_rate")))
    declared = {f.name for f in fields}

    output = data.get("output") or {}
    if output.get("schema") is not None:
        check_schema(output["schema"], ["output", "schema"])
        if output.get("format", "json") != "json":
            raise fail("an output schema needs format: json", ["output", "format"])
    tools_sec = data.get("tools") or {}
    tools = []
    names: set[str] = set()
    for i, t in enumerate(tools_sec.get("catalogue", [])):
        check_schema(t["parameters"], ["tools", "catalogue", i, "parameters"])
        if t["name"] in names:
            raise fail(f"tool '{t['name']}' is declared twice", ["tools", "catalogue", i, "name"])
        names.add(t["name"])
        tools.append(ToolSpec(name=t["name"], parameters=_freeze(t["parameters"]),
                              description=t.get("description", "")))
    refusal = data.get("refusal")
    if refusal:
        for i, rx in enumerate(refusal["when_user_matches"]):
            check_regex(rx, ["refusal", "when_user_matches", i])
        if refusal.get("expect_text_matches"):
            check_regex(refusal["expect_text_matches"], ["refusal", "expect_text_matches"])
        if not any(refusal.get(k) for k in ("expect_output", "expect_text_matches", "forbid_tool_calls")):
            raise fail("a refusal rule needs expect_output, expect_text_matches or forbid_tool_calls", ["refusal"])
    for check in (data.get("thresholds") or {}).get("max_findings", {}):
        if check not in CHECK_NAMES:
            hint = difflib.get_close_matches(check, CHECK_NAMES, n=1)
            raise fail(f"unknown check '{check}'" + (f" (did you mean '{hint[0]}'?)" if hint else ""),
                       ["thresholds", "max_findings", check])
    for check in data.get("checks") or {}:
        if check not in CHECK_NAMES:
            hint = difflib.get_close_matches(check, CHECK_NAMES, n=1)
            raise fail(f"unknown check '{check}'" + (f" (did you mean '{hint[0]}'?)" if hint else ""),
                       ["checks", check])
    for key in ("group_key", "group_fallback_key"):
        if data.get(key) and declared and data[key] not in declared:
            raise fail(f"'{data[key]}' is not a declared field", [key])
    if (data.get("sources") is not None and declared and "source" not in declared):
        raise fail("sources are listed but no 'source' field is declared", ["sources"])

    msgs = data.get("messages") or {}
    text = data.get("text") or {}
    thresholds = data.get("thresholds") or {}
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)
    evaluation_sets = tuple(str((p.parent / s).resolve()) if not Path(s).is_absolute() else s
                            for s in data.get("evaluation_sets", []))
    tok = data.get("tokenizer")
    tokenizer = None
    if tok:  # a relative path that exists next to the contract is taken from there; else it may be a cache id
        tok_path = tok["path"]
        if not Path(tok_path).is_absolute() and (p.parent / tok_path).exists():
            tok_path = str((p.parent / tok_path).resolve())
        tokenizer = TokenizerRef(path=tok_path, revision=tok.get("revision"))
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
        tokenizer=tokenizer,
    )


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
