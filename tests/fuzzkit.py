"""Shared pieces of the fuzz tests: example budgets, the "clear error" oracle, JSON and YAML generators.

The budget is one number for the whole fuzz suite (GATE_FUZZ_EXAMPLES, in-process cases in total), shared
out by weight, so CI can ask for 100,000 cases and a developer gets a quick run by default.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from gate.errors import GateError

DEFAULT_TOTAL = 3000  # a quick developer run; CI sets GATE_FUZZ_EXAMPLES=100000


def total_examples() -> int:
    return int(os.environ.get("GATE_FUZZ_EXAMPLES", DEFAULT_TOTAL))


def fuzz_settings(weight: float) -> settings:
    """Derandomized by default so a CI failure reproduces; GATE_FUZZ_RANDOM=1 explores new ground."""
    return settings(max_examples=max(20, int(total_examples() * weight)), deadline=None, database=None,
                    derandomize=not os.environ.get("GATE_FUZZ_RANDOM"), print_blob=True,
                    suppress_health_check=list(HealthCheck))


def assert_clear_error(exc: BaseException, path: Path | str, max_len: int = 400) -> None:
    """A clear error: a GateError naming the file, one line, short, no Python internals."""
    assert isinstance(exc, GateError), f"{type(exc).__name__}: {exc}"
    text = str(exc)
    assert text.strip(), "empty message"
    assert "\n" not in text and "\r" not in text, f"multi-line message: {text!r}"
    assert len(text) <= max_len, f"message too long ({len(text)} chars): {text[:200]!r}"
    assert exc.file is not None and str(exc.file) == str(path), f"message does not name {path}: {text!r}"
    assert text.startswith(str(path)), text
    assert "Traceback" not in text and "object at 0x" not in text, text
    if exc.line is not None:
        assert exc.line >= 1, text


# JSON-like values, as a dataset row or a YAML document can hold them (integers within orjson's 64-bit range:
# orjson reads a smaller negative integer as a float, a known limit noted in docs/SECURITY-AUDIT.md)
json_scalars = (st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1)
                | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20))
json_values = st.recursive(json_scalars, lambda c: st.lists(c, max_size=3)
                           | st.dictionaries(st.text(max_size=6), c, max_size=3), max_leaves=6)

# YAML scalars beyond JSON: keys and values of other types (ints, bools, nulls, dates) as people write them
yaml_scalars = json_scalars | st.dates() | st.datetimes() | st.binary(max_size=8)
yaml_keys = st.text(max_size=12) | st.integers(-5, 5) | st.booleans() | st.none() | st.floats(allow_nan=False)
yaml_values = st.recursive(yaml_scalars, lambda c: st.lists(c, max_size=3)
                           | st.dictionaries(yaml_keys, c, max_size=3), max_leaves=6)

# pieces of YAML syntax that exercise the parser itself (anchors, aliases, tags, flow and block styles)
YAML_TOKENS = ["name", "version", "fields", "type", "string", "required", "true", "null", "~", ":", ": ", "-", "- ",
               "\n", "\n  ", "\n    ", "\t", "{", "}", "[", "]", ",", "?", "? ", "&a ", "*a", "*b", "&b ", "!!str ",
               "!!binary ", "!!python/object:os.system ", "!!set ", "!!omap ", "!!timestamp ", "'", '"', "|", ">",
               "#", "---", "...", "%YAML 1.1", "<<: *a", "0x1F", "1e9", ".inf", ".nan", "2026-01-01", "\\u0000",
               "\x00", "\ufeff", "é", "\U0001f600", "\ud800", "pattern", "'(unclosed'", "catalogue", "parameters",
               "messages", "roles", "output", "schema", "suites", "scorers", "gates", "path"]
yaml_token_text = st.lists(st.sampled_from(YAML_TOKENS) | st.text(max_size=4), max_size=40).map("".join)


def _paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*prefix, i))
    return out


def mutate(doc: Any, data: st.DataObject, known_keys: list[str]) -> Any:
    """Up to three random edits of a parsed YAML document: delete, replace, add, rename or wrap a node."""
    doc = copy.deepcopy(doc)
    for _ in range(data.draw(st.integers(1, 3))):
        paths = [p for p in _paths(doc) if p]
        if not paths:
            break
        path = data.draw(st.sampled_from(paths))
        parent = doc
        for part in path[:-1]:
            parent = parent[part]
        last = path[-1]
        op = data.draw(st.sampled_from(["delete", "replace", "replace", "add_key", "rename", "wrap"]))
        if op == "delete":
            del parent[last]
        elif op == "replace":
            parent[last] = data.draw(yaml_values | st.sampled_from(["(unclosed", "[a-", "*", "", None, -1, 0, 2**40,
                                                                    {"type": "nope"}, {"$ref": "#/nowhere"}]))
        elif op == "add_key" and isinstance(parent, dict):
            parent[data.draw(st.sampled_from(known_keys) | st.text(max_size=6))] = data.draw(yaml_values)
        elif op == "rename" and isinstance(parent, dict):
            parent[data.draw(st.sampled_from(known_keys) | st.integers(0, 3))] = parent.pop(last)
        elif op == "wrap":
            parent[last] = data.draw(st.sampled_from([[parent[last]], {"x": parent[last]}]))
    return doc
