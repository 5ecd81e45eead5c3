"""The schema of a scorecard file itself (like gate/contract/file_schema.py for contracts).

One validator catches every unknown key, wrong type or missing value and the loader reports it with its YAML
line. Gates are plain data for the release step: only their shape is checked here.
"""

from __future__ import annotations

from typing import Any

from gate.score.scorers import REGISTRY

_OBJ = {"type": "object"}
_NAME = {"type": "string", "pattern": "^[A-Za-z0-9_.-]{1,64}$"}

SUITE = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name", "path"],
    "properties": {
        "name": _NAME,
        "path": {"type": "string", "minLength": 1},
        "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
        "description": {"type": "string"},
    },
}

PROMPT = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "system": {"type": ["string", "null"]},
        "system_mode": {"enum": ["keep", "replace", "prepend"]},
        "tools": {"type": "array", "items": _OBJ},
        "tools_from_contract": {"type": "string"},
        "tool_choice": {"anyOf": [{"enum": ["auto", "none", "required"]}, _OBJ]},
        "response_format": {
            "type": "object",
            "additionalProperties": False,
            "required": ["type"],
            "properties": {
                "type": {"enum": ["text", "json_object", "json_schema"]},
                "name": {"type": "string"},
                "schema": _OBJ,
                "schema_from_contract": {"type": "string"},
                "strict": {"type": "boolean"},
            },
        },
        "chat_template_kwargs": _OBJ,
    },
}

DECODING = {
    "type": "object",
    "additionalProperties": False,
    "required": ["temperature", "max_tokens"],
    "properties": {
        "temperature": {"type": "number", "minimum": 0},
        "top_p": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
        "max_tokens": {"type": "integer", "minimum": 1},
        "seed": {"type": ["integer", "null"]},
        "stop": {"type": "array", "items": {"type": "string"}},
        "epochs": {"type": "integer", "minimum": 1},
        "logprobs": {"type": "boolean"},
    },
}

SCORER = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name", "type"],
    "properties": {
        "name": _NAME,
        "type": {"enum": sorted(REGISTRY)},
        "description": {"type": "string"},
        "suites": {"type": "array", "items": _NAME, "minItems": 1},
        "options": _OBJ,
    },
}

GATE = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name", "scorer", "metric", "rule"],
    "properties": {
        "name": _NAME,
        "description": {"type": "string"},
        "scorer": _NAME,
        "metric": _NAME,
        "rule": {"enum": ["superiority", "non_inferiority", "absolute", "no_critical_failures"]},
        "suite": _NAME,
        "category": {"type": "string"},
        "margin": {"type": "number", "minimum": 0},
        "threshold": {"type": "number"},
        "direction": {"enum": ["higher_is_better", "lower_is_better"]},
        "alpha": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
        "test": {"enum": ["mcnemar", "paired_bootstrap", "paired_t"]},
        "severity": {"enum": ["block", "warn"]},
        "items": {"type": "array", "items": {"type": "string"}},
        # p95 latency, peak memory: how the per-item values of the metric become one number (absolute gates)
        "aggregate": {"enum": ["mean", "p50", "p95", "p99", "max", "min"]},
        # items sharing a cluster are not independent: auto = the suite rows' `cluster` field when present
        "cluster": {"enum": ["auto", "none", "category"]},
        # an absolute gate that could not be measured (no values in the run): block the release, or only warn
        "on_unmeasured": {"enum": ["block", "warn"]},
    },
    "allOf": [
        {"if": {"properties": {"rule": {"const": "non_inferiority"}}}, "then": {"required": ["margin"]}},
        {"if": {"properties": {"rule": {"const": "absolute"}}}, "then": {"required": ["threshold"]}},
    ],
}

# A rollback trigger watches one production metric (JSONL rows {"metric", "value"}) and fires past its threshold.
ROLLBACK_TRIGGER = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name", "metric"],
    "properties": {
        "name": _NAME,
        "description": {"type": "string"},
        "metric": {"type": "string", "minLength": 1},
        "aggregate": {"enum": ["mean", "p50", "p95", "p99", "max", "min", "sum", "count"]},
        "above": {"type": "number"},
        "below": {"type": "number"},
        "min_samples": {"type": "integer", "minimum": 1},
        # only the last N seconds/minutes/hours/days count (gate/release/watch.py says against which clock)
        "window": {"type": "string", "pattern": "^[1-9][0-9]*(s|m|h|d)$"},
    },
    "oneOf": [{"required": ["above"]}, {"required": ["below"]}],
}

SCORECARD_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "additionalProperties": False,
    "required": ["name", "version", "suites", "decoding", "scorers"],
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "version": {"type": ["string", "number"]},
        "description": {"type": "string"},
        "kind": {"enum": ["quality", "operations"]},
        "suites": {"type": "array", "items": SUITE, "minItems": 1},
        "prompt": PROMPT,
        "decoding": DECODING,
        "scorers": {"type": "array", "items": SCORER, "minItems": 1},
        "gates": {"type": "array", "items": GATE},
        "rollback_triggers": {"type": "array", "items": ROLLBACK_TRIGGER},
    },
    # operations numbers must come from uncached answers, and only `kind: operations` bypasses the response cache
    "if": {"required": ["scorers"],
           "properties": {"scorers": {"contains": {"properties": {"type": {"const": "operations"}}}}}},
    "then": {"required": ["kind"], "properties": {"kind": {"const": "operations"}}},
}
