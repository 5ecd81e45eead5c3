"""The scorer registry: a scorecard names a scorer `type`; this maps it to its class.

Imports are lazy so loading a scorecard does not import jsonschema or the sandbox until a scorer is built.
"""

from __future__ import annotations

import importlib
from typing import Any

REGISTRY: dict[str, str] = {
    "field_match": "gate.score.scorers.task:FieldMatch",
    "exact_match": "gate.score.scorers.task:ExactMatch",
    "format": "gate.score.scorers.format:FormatValidity",
    "tool_execution": "gate.score.scorers.tools:ToolExecution",
    "refusal": "gate.score.scorers.refusal:Refusal",
    "factual_support": "gate.score.scorers.support:FactualSupport",
    "multiple_choice": "gate.score.scorers.regression:MultipleChoice",
    "operations": "gate.score.scorers.operations:Operations",
}

# the metric keys each type can emit (gates may only reference these); kept here so validation needs no import
KEYS: dict[str, tuple[str, ...]] = {
    "field_match": ("strict", "flexible", "strict_fields", "flexible_fields"),
    "exact_match": ("strict", "flexible"),
    "format": ("strict_parse", "extractable", "schema_valid", "schema_valid_flexible", "truncated"),
    "tool_execution": ("correct", "parsed", "function", "arguments", "executed", "server_parsed"),
    "refusal": ("correct", "refused", "over_refusal", "under_refusal"),
    "factual_support": ("supported", "support_rate", "contradiction"),
    "multiple_choice": ("correct", "loglik", "loglik_norm", "generation_strict", "generation_flexible"),
    "operations": ("latency_s", "ttft_s", "output_tokens_per_s", "error", "peak_rss_mb"),
}


def scorer_class(type_name: str) -> type:
    module, _, cls = REGISTRY[type_name].partition(":")
    return getattr(importlib.import_module(module), cls)


def build(type_name: str, options: dict[str, Any]) -> Any:
    return scorer_class(type_name)(**options)
