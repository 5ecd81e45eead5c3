"""The JSON Schema of a row's structure (messages, tool calls, tools), derived from a contract.

Only structure lives here; metadata types are checked in Python and column rules (required, allowed
values, uniqueness, patterns, lengths) run through great-expectations, so one problem gives one finding.
"""

from __future__ import annotations

from typing import Any

from gate.contract.model import Contract

_TEXT_PART = {"type": "object", "required": ["type"], "properties": {"type": {"type": "string"},
                                                                     "text": {"type": "string"}}}

TOOL_CALL = {
    "type": "object",
    "required": ["function"],
    "properties": {
        "id": {"type": "string"},
        "type": {"const": "function"},
        "function": {
            "type": "object",
            "required": ["name", "arguments"],
            "properties": {"name": {"type": "string", "minLength": 1},
                           "arguments": {"type": ["string", "object"]}},
        },
    },
}

TOOL_SPEC = {
    "type": "object",
    "required": ["type", "function"],
    "properties": {
        "type": {"const": "function"},
        "function": {"type": "object", "required": ["name"],
                     "properties": {"name": {"type": "string"}, "description": {"type": "string"},
                                    "parameters": {"type": "object"}}},
    },
}


def row_schema(contract: Contract) -> dict[str, Any]:
    message = {
        "type": "object",
        "required": ["role"],
        "properties": {
            "role": {"enum": list(contract.roles)},
            "content": {"anyOf": [{"type": ["string", "null"]}, {"type": "array", "items": _TEXT_PART}]},
            "name": {"type": "string"},
            "tool_call_id": {"type": "string"},
            "reasoning_content": {"type": ["string", "null"]},
            "tool_calls": {"type": "array", "items": TOOL_CALL},
        },
    }
    schema: dict[str, Any] = {
        "type": "object",
        "required": ["messages"],
        "properties": {
            "messages": {"type": "array", "minItems": contract.min_messages, "items": message},
            "tools": {"type": "array", "items": TOOL_SPEC},
        },
    }
    if not contract.allow_extra_fields:
        schema["properties"].update({f.name: {} for f in contract.fields})
        schema["additionalProperties"] = False
    return schema


def fast_row_check(contract: Contract) -> Any:
    """A plain-Python predicate that accepts only rows the row schema accepts.

    jsonschema's generic descent costs ~60 µs per chat row; this costs a few. It may say False for rows that
    are in fact valid (then the precise validator decides and explains), never True for an invalid row:
    a property test holds it to that.
    """
    roles = frozenset(contract.roles)
    min_messages = contract.min_messages
    declared = frozenset(f.name for f in contract.fields) | {"messages", "tools"}
    extra_ok = contract.allow_extra_fields

    def call_ok(call: Any) -> bool:
        if type(call) is not dict:
            return False
        fn = call.get("function")
        if type(fn) is not dict:
            return False
        name, args = fn.get("name", 0), fn.get("arguments", 0)
        if type(name) is not str or not name or type(args) not in (str, dict):
            return False
        if "id" in call and type(call["id"]) is not str:
            return False
        return "type" not in call or call["type"] == "function"

    def message_ok(m: Any) -> bool:
        if type(m) is not dict or m.get("role") not in roles:
            return False
        for key, value in m.items():
            t = type(value)
            if key == "content" or key == "reasoning_content":
                if t is not str and value is not None:
                    return False
            elif key == "name" or key == "tool_call_id":
                if t is not str:
                    return False
            elif key == "tool_calls":
                if t is not list or not all(call_ok(c) for c in value):
                    return False
        return True

    def tool_ok(t: Any) -> bool:
        if type(t) is not dict or t.get("type") != "function":
            return False
        fn = t.get("function")
        if type(fn) is not dict or type(fn.get("name")) is not str:
            return False
        if "description" in fn and type(fn["description"]) is not str:
            return False
        return "parameters" not in fn or type(fn["parameters"]) is dict

    def check(row: dict[str, Any]) -> bool:
        msgs = row.get("messages")
        if type(msgs) is not list or len(msgs) < min_messages:
            return False
        if not all(message_ok(m) for m in msgs):
            return False
        if "tools" in row:
            tools = row["tools"]
            if type(tools) is not list or not all(tool_ok(t) for t in tools):
                return False
        return extra_ok or all(k in declared for k in row)

    return check
