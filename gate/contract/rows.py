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
