"""The schema of a contract file itself.

Kept as a JSON Schema so that every unknown key, wrong type or missing value in a contract is caught by
one validator and reported with the YAML line it sits on.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

from gate.io.dataset import SPLIT_ORDER

_STR_LIST = {"type": "array", "items": {"type": "string"}}
_OBJ = {"type": "object"}

FIELD = {
    "type": "object",
    "additionalProperties": False,
    "required": ["type"],
    "properties": {
        "type": {"enum": ["string", "integer", "number", "boolean", "datetime"]},
        "required": {"type": "boolean"},
        "unique": {"type": "boolean"},
        "pattern": {"type": "string"},
        "allowed": {"type": "array"},
        "min_length": {"type": "integer", "minimum": 0},
        "max_length": {"type": "integer", "minimum": 0},
        "max_null_rate": {"type": "number", "minimum": 0, "maximum": 1},
        "description": {"type": "string"},
    },
}

TOOL = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name", "parameters"],
    "properties": {
        "name": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_.-]{0,63}$"},
        "description": {"type": "string"},
        "parameters": _OBJ,
    },
}

TOKENIZER = {
    "type": "object",
    "additionalProperties": False,
    "required": ["path"],
    "properties": {
        "path": {"type": "string", "minLength": 1, "description": "tokenizer directory or id in the local HF cache"},
        "revision": {"type": "string", "minLength": 1},
    },
}


def check_options(properties: dict[str, Any]) -> dict[str, Any]:
    """The schema of one `checks.<name>` section: exactly these keys. Each check declares its own (the class
    attribute `options_schema` in gate/data/checks/*.py, next to the code that reads the options), so an option
    is added in one place; `contract_schema` collects them and the loader validates every section with the YAML
    line of the offending key and a "did you mean" hint."""
    return {"type": "object", "additionalProperties": False, "properties": properties}


#: a check that reads no options: any key under its section is a typo
NO_OPTIONS = check_options({})
#: `roles:` of the pii/secret sections: which messages are read
ROLES = {"type": "array", "items": {"enum": ["system", "developer", "user", "assistant", "tool"]}}


CONTRACT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "additionalProperties": False,
    "required": ["name", "version"],
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "version": {"type": ["string", "number"]},
        "description": {"type": "string"},
        "fields": {"type": "object", "additionalProperties": FIELD},
        "allow_extra_fields": {"type": "boolean"},
        "sources": _STR_LIST,
        "languages": _STR_LIST,
        "splits": {"type": "object", "propertyNames": {"enum": list(SPLIT_ORDER)},
                   "additionalProperties": {"type": "array", "items": {"type": "string", "minLength": 1},
                                            "minItems": 1}},
        "messages": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "roles": {"type": "array", "items": {"enum": ["system", "developer", "user", "assistant", "tool"]}},
                "system_prompt": {"enum": ["required", "optional", "forbidden"]},
                "min_messages": {"type": "integer", "minimum": 1},
                "max_messages": {"type": "integer", "minimum": 1},
                "final_role": {"enum": ["assistant", "any"]},
                "allow_empty_assistant": {"type": "boolean"},
            },
        },
        "output": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "format": {"enum": ["json", "text"]},
                "applies_to": {"enum": ["final_assistant", "all_assistant"]},
                "schema": _OBJ,
            },
        },
        "tools": {
            "type": "object",
            "additionalProperties": False,
            "required": ["catalogue"],
            "properties": {
                "catalogue": {"type": "array", "items": TOOL, "minItems": 1},
                "on_missing_required": {"enum": ["ask_user", "allow"]},
                "require_row_tools": {"type": "boolean"},
            },
        },
        "refusal": {
            "type": "object",
            "additionalProperties": False,
            "required": ["when_user_matches"],
            "properties": {
                "description": {"type": "string"},
                "when_user_matches": {**_STR_LIST, "minItems": 1},
                "expect_output": _OBJ,
                "expect_text_matches": {"type": "string"},
                "forbid_tool_calls": {"type": "boolean"},
            },
        },
        "missing_information": {
            "type": "object",
            "additionalProperties": False,
            "required": ["placeholder", "fields"],
            "properties": {
                "description": {"type": "string"},
                "placeholder": {},
                "fields": {**_STR_LIST, "minItems": 1},
                "expect_output": _OBJ,
            },
        },
        "group_key": {"type": "string"},
        "group_fallback_key": {"type": "string"},
        "group_window": {"enum": ["day", "week", "month", "year"]},
        "text": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "roles": {"type": "array", "items": {"enum": ["system", "developer", "user", "assistant", "tool"]}},
                "include_tool_calls": {"type": "boolean"},
            },
        },
        "limits": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "max_row_chars": {"type": "integer", "minimum": 1},
                "max_message_chars": {"type": "integer", "minimum": 1},
                "max_tokens": {"type": "integer", "minimum": 1},
            },
        },
        "thresholds": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "max_duplicate_rate": {"type": "number", "minimum": 0, "maximum": 1},
                "max_findings": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}},
            },
        },
        "checks": {
            "type": "object",
            "description": "per-check options; each check declares and reads its own section",
            "properties": {},  # filled from each check's `options_schema` by contract_schema()
            "additionalProperties": {"type": "object"},
        },
        "tokenizer": TOKENIZER,
        "evaluation_sets": _STR_LIST,
        "rules": {"type": "object", "propertyNames": {"pattern": "^[A-Za-z0-9][A-Za-z0-9_.-]*$"},
                  "additionalProperties": {"type": "string", "minLength": 1}},
        "scrub": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "operators": {"type": "object",
                              "additionalProperties": {"enum": ["replace", "pseudonym", "hash", "drop_row", "keep"]}},
                "default_operator": {"enum": ["replace", "pseudonym", "hash", "drop_row", "keep"]},
                "salt_env": {"type": "string"},
                "drop_duplicates": {"type": "boolean"},
                "drop_leakage": {"type": "boolean"},
            },
        },
    },
}


@functools.cache
def contract_schema() -> dict[str, Any]:
    """CONTRACT_SCHEMA with every registered check's `options_schema` under `checks`. Built on first use: the check
    registry imports the checks, which import this package's Contract (a module-level import would be a cycle)."""
    from gate.data.registry import CHECKS

    schema = copy.deepcopy(CONTRACT_SCHEMA)
    # a plugin that cannot be loaded is left out (named in one warning): its options are then refused as unknown
    schema["properties"]["checks"]["properties"] = {name: copy.deepcopy(CHECKS[name].options_schema)
                                                    for name in CHECKS.usable()}
    return schema
