"""The one YAML reader for files people write by hand (contracts, scorecards, training specs).

Each of those files is checked against a JSON Schema, and the schema's error only says *where in the data* the
problem is (a JSON path). A person needs *where in the file*: `read` keeps the composed node tree beside the data,
so `YamlDoc.fail` turns any data path into `file:line: field: message`. The loader also refuses what would make a
file ambiguous or dangerous before anything is built: duplicate keys, non-string keys, recursive aliases and
alias bombs, and tagged values PyYAML itself cannot construct. Every problem is raised as the caller's own
`GateError` subclass, so a contract and a training spec fail the same way but under their own names.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import yaml

from gate.errors import GateError

T = TypeVar("T")

MAX_YAML_NODES = 200_000  # after expanding aliases: a "billion laughs" document is refused, not expanded
_STR_TAG = "tag:yaml.org,2002:str"
_MERGE_TAG = "tag:yaml.org,2002:merge"


class _NodeError(Exception):
    """Raised inside PyYAML's machinery; `read` re-raises it as the caller's error class with the file name."""

    def __init__(self, message: str, node: yaml.Node, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = node.start_mark.line + 1
        self.field = field


def _check_nodes(root: yaml.Node) -> None:
    """Refuses what a JSON-like document cannot be: non-string keys (`1:`, `yes:`, `? [a]`), self-referencing
    aliases, and alias bombs. Runs before construction, so none of them reaches the validators as a traceback."""
    seen = 0
    stack: list[tuple[yaml.Node, frozenset[int]]] = [(root, frozenset())]
    while stack:
        node, above = stack.pop()
        seen += 1
        if seen > MAX_YAML_NODES:
            raise _NodeError(f"document too large (more than {MAX_YAML_NODES:,} values after expanding aliases)",
                             node)
        if id(node) in above:
            raise _NodeError("an alias refers to itself (recursive document)", node)
        if isinstance(node, yaml.MappingNode):
            inner = above | {id(node)}
            for key, value in node.value:
                if key.tag not in (_STR_TAG, _MERGE_TAG):
                    scalar = isinstance(key, yaml.ScalarNode)
                    msg = (f"key {str(key.value)[:40]!r} is not a string (quote it)" if scalar
                           else "a key is a list or mapping; keys must be strings")
                    raise _NodeError(msg, key)
                stack.append((value, inner))
        elif isinstance(node, yaml.SequenceNode):
            inner = above | {id(node)}
            stack.extend((item, inner) for item in node.value)


class _LineLoader(yaml.SafeLoader):
    """A SafeLoader that refuses duplicate keys (the same key twice is ambiguous) and the documents above."""

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
            raise _NodeError(f"cannot read this {node.tag.rsplit(':', 1)[-1]} value ({type(exc).__name__})",
                             node) from None


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise _NodeError(f"duplicate key '{key}'", key_node, field=str(key))
        seen.add(key)
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def node_at(root: yaml.Node | None, path: Sequence[Any], key: str | None = None) -> yaml.Node | None:
    """Walks the node tree along a JSON path (as far as it exists); with `key`, that key's node in the final
    mapping, so an unknown key is reported on its own line rather than on its parent's."""
    node = root
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


def dotted(path: Sequence[Any]) -> str:
    """`fields.id.type`, `suites[0].path`: how a person names a place in the file."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def known_keys(schema: dict[str, Any], path: Sequence[Any]) -> list[str]:
    """The keys the schema allows at `path`: the candidates for a 'did you mean' hint."""
    node = schema
    for part in path:
        if isinstance(part, int):
            node = node.get("items", {})
        else:
            node = node.get("properties", {}).get(part) or node.get("additionalProperties") or {}
    return sorted(node.get("properties", {}))


@dataclass(frozen=True)
class YamlDoc:
    """A loaded file: its data (a mapping), the node tree that knows every value's line, and the error class
    its problems are raised as."""

    path: Path
    data: dict[str, Any]
    root: yaml.Node
    error: type[GateError]

    def line(self, path: Sequence[Any], key: str | None = None) -> int | None:
        node = node_at(self.root, path, key)
        return node.start_mark.line + 1 if node is not None else None

    def fail(self, message: str, path: Sequence[Any], key: str | None = None) -> GateError:
        """The error for the value at `path` (or its key `key`), to be raised by the caller."""
        return self.error(message, file=str(self.path), line=self.line(path, key),
                          field=dotted([*path, key] if key is not None else path))

    def validate(self, schema: dict[str, Any], hint: Callable[[list[Any], str], str | None] | None = None) -> None:
        """Raises the first schema violation in file order, worded so the reader knows the fix: an unknown key
        names the closest known one (`unknown key 'thresold' (did you mean 'thresholds'?)`), the section it
        belongs to when it is a key elsewhere (`roles` -> `messages.roles`), a synonym's real name (`enum` ->
        `allowed`), or else the keys the section takes; `hint(path, key)` lets the caller add a file-specific
        hint for an unknown key. A scalar where a mapping is needed shows the mapping form."""
        from gate.contract.schemas import validator  # the one validator factory: nothing is ever retrieved

        errors = sorted(validator(schema, assert_formats=False).iter_errors(self.data),
                        key=lambda e: list(e.absolute_path))
        if not errors:
            return
        err = errors[0]
        epath = list(err.absolute_path)
        if err.validator == "additionalProperties":
            extra = [k for k in err.instance if k not in err.schema.get("properties", {})]
            if extra:
                key = str(extra[0])
                raise self.fail(unknown_key_message(schema, epath, key, hint), epath, key)
        if err.validator == "type" and err.validator_value == "object" and not isinstance(err.instance, dict):
            raise self.fail(_not_a_mapping(err.instance, err.schema, epath), epath)
        if err.validator in ("anyOf", "oneOf"):
            shapes = "; ".join(describe(s) for s in err.validator_value)
            raise self.fail(f"{_short(err.instance)} matches none of the allowed shapes: {shapes}", epath)
        raise self.fail(err.message, epath)


#: keys people write from other tools' vocabularies, and the key gate reads instead
SYNONYMS = {"enum": "allowed", "choices": "allowed", "values": "allowed", "one_of": "allowed", "regex": "pattern",
            "minLength": "min_length", "maxLength": "max_length", "optional": "required", "nullable": "max_null_rate"}


def _places(schema: dict[str, Any], key: str, prefix: str = "", depth: int = 0) -> list[str]:
    """Every dotted place in the schema where `key` is a known key (`messages.roles`, `text.roles`): where a key
    written at the wrong level belongs."""
    out: list[str] = []
    if depth > 4 or not isinstance(schema, dict):
        return out
    for name, sub in (schema.get("properties") or {}).items():
        here = f"{prefix}{name}"
        if name == key and prefix:
            out.append(here)
        out += _places(sub, key, here + ".", depth + 1)
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        out += _places(extra, key, prefix + "<name>.", depth + 1)
    return out


def unknown_key_message(schema: dict[str, Any], path: Sequence[Any], key: str,
                        hint: Callable[[list[Any], str], str | None] | None = None) -> str:
    """`unknown key 'k'` plus the one most likely fix (see `YamlDoc.validate`)."""
    known = known_keys(schema, path)
    msg = f"unknown key '{key}'"
    custom = hint(list(path), key) if hint else None
    if custom:
        return f"{msg} ({custom})"
    if SYNONYMS.get(key) in known:
        return f"{msg} (gate calls it '{SYNONYMS[key]}')"
    here = dotted(path)
    places = [p for p in _places(schema, key) if not p.startswith(f"{here}.{key}")]
    close = difflib.get_close_matches(key, known, n=1)
    if places and not (close and close[0] != key and difflib.SequenceMatcher(None, key, close[0]).ratio() > 0.85):
        also = f" it is also read as {', '.join(places[1:4])}" if len(places) > 1 else ""
        return f"{msg} here (did you mean '{places[0]}'?{also})"
    if close:
        return f"{msg} (did you mean '{close[0]}'?)"
    if known:
        return f"{msg} ({here if path else 'the top level'} takes: {', '.join(known)})"
    return msg


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


def describe(schema: Any) -> str:
    """One JSON Schema in a few words (`string or null`, `array of object`, `one of ['a', 'b']`, `object with
    keys type, text`): what a value may look like, for messages that list the allowed shapes."""
    if not isinstance(schema, dict):
        return "anything" if schema is True else "nothing"
    if "enum" in schema:
        return f"one of {list(schema['enum'])}"
    if "const" in schema:
        return f"exactly {schema['const']!r}"
    kinds = schema.get("type")
    kinds = [kinds] if isinstance(kinds, str) else list(kinds or [])
    parts = []
    if not kinds and schema.get("required"):  # a branch that only says which keys must be there
        keys = list(map(str, schema["required"]))
        return f"a mapping with key{'s' if len(keys) > 1 else ''} {', '.join(keys)}"
    for kind in kinds or ["any value"]:
        if kind == "array" and isinstance(schema.get("items"), dict):
            parts.append(f"array of ({describe(schema['items'])})")
        elif kind == "object" and (schema.get("required") or schema.get("properties")):
            keys = schema.get("required") or sorted(schema.get("properties", {}))
            parts.append(f"object with keys {', '.join(map(str, keys))}")
        else:
            parts.append(kind)
    if "anyOf" in schema or "oneOf" in schema:
        parts = [" or ".join(describe(s) for s in schema.get("anyOf") or schema.get("oneOf"))]
    return " or ".join(parts)


def _not_a_mapping(value: Any, schema: dict[str, Any], path: Sequence[Any]) -> str:
    """`fields.dialect: string` is the short form people guess; the message shows the mapping form instead."""
    name = str(path[-1]) if path else "value"
    props = schema.get("properties") or {}
    for key in schema.get("required") or []:
        allowed = (props.get(key) or {}).get("enum") or []
        if isinstance(value, str) and value in allowed:
            return f"{_short(value)} is not a mapping: write `{name}: {{{key}: {value}}}`"
    if schema.get("required"):
        example = ", ".join(f"{k}: ..." for k in schema["required"])
        return f"{_short(value)} is not a mapping: write `{name}: {{{example}}}`"
    return f"{_short(value)} is not a mapping (key: value pairs)"


def read(path: Path, *, what: str, error: type[GateError], not_found: str | None = None) -> YamlDoc:
    """Reads `path` as one YAML mapping; `what` names the kind of file in messages ("a contract must be a YAML
    mapping"). Every problem, from a missing file to a duplicate key, is one `error` naming the file and line."""
    from gate.io.limits import current

    file = str(path)
    cap = current().max_yaml_bytes
    try:
        with open(path, "rb") as fh:  # read at most one byte past the cap: a 60 MB YAML is refused, not parsed
            raw = fh.read(cap + 1)
        if len(raw) > cap:
            raise error(f"{what} is larger than {cap:,} bytes (limit max_yaml_bytes)", file=file)
        text = raw.decode("utf-8")
    except FileNotFoundError:
        raise error(not_found or f"{what} file not found", file=file) from None
    except UnicodeDecodeError as exc:
        raise error(f"{what} is not UTF-8 (byte {exc.start})", file=file) from None
    except OSError as exc:
        raise error(f"cannot read {what} ({exc.strerror})", file=file) from None
    loader: _LineLoader | None = None
    try:  # one parse: the node tree for lines, the data built from the same tree
        loader = _LineLoader(text)  # the reader already refuses control characters here
        root = loader.get_single_node()
        data = loader.construct_document(root) if root is not None else None
    except _NodeError as exc:
        raise error(exc.message, file=file, line=exc.line, field=exc.field) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise error(f"invalid YAML: {problem}", file=file, line=mark.line + 1 if mark else None) from None
    finally:
        if loader is not None:
            loader.dispose()
    if not isinstance(data, dict):
        raise error(f"a {what} must be a YAML mapping", file=file, line=1)
    return YamlDoc(path=path, data=data, root=root, error=error)


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


def guarded(load: Callable[[], T], path: str | Path, error: type[GateError]) -> T:
    """Runs a loader so that whatever it raises is one clean line: PyYAML and jsonschema descend recursively, so
    a deeply nested file would otherwise end in a RecursionError traceback."""
    try:
        return load()
    except RecursionError:
        raise error("nested too deeply", file=str(path)) from None
    except GateError as exc:
        raise one_line(exc) from None
