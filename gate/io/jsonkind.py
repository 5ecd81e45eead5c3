"""The JSON type a parsed value was written as: one rule for every place that names a value's type.

Why one rule: `bool` is an `int` in Python and an integral float (10.0) compares equal to 10, so a naive test
calls `true` an integer and `10.0` an integer. Both are wrong for JSON data: the writer chose a boolean, or wrote a
decimal point (a Python tool would receive a float). The contract inference (`gate contract init`) and the tool-call
scorer (`wrong_type`) both ask this; each adds only its own refinement on top (see their callers).
"""

from __future__ import annotations

from typing import Any

#: the JSON types a scalar can have (what a typed contract column or a schema `type` of a scalar may be)
SCALAR_KINDS = frozenset({"boolean", "integer", "number", "string"})


def json_kind(v: Any) -> str:
    """boolean | integer | number | string | null | array | object, as JSON Schema names them; an integral float
    is a number, a bool never an integer."""
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    if v is None:
        return "null"
    return "array" if isinstance(v, list | tuple) else "object"
