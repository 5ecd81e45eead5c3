"""Rewrite a text given its PII and secret hits, with presidio-anonymizer and one operator per entity type.

Why presidio-anonymizer rather than string slicing: it resolves overlapping and adjacent hits (a URL inside an
e-mail, "John" + "Smith" as one PERSON) the way presidio users expect, and its `hash` operator is the documented
salted sha256. Why a `drop_row` signal instead of deleting here: this function sees one text; whether a row goes
(and how that is recorded in the scrub manifest) is the caller's decision. Values under a `drop_row` operator are
still replaced by a placeholder, so a caller that ignores the signal cannot leak them.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gate.pii.config import ScrubConfig, require
from gate.pii.redact import Span

if TYPE_CHECKING:
    from presidio_anonymizer import AnonymizerEngine


@dataclass(frozen=True)
class ScrubResult:
    """The rewritten text, how many values of each entity type were rewritten, and whether to drop the row."""

    text: str
    counts: dict[str, int] = field(default_factory=dict)
    drop_row: bool = False


@functools.lru_cache(maxsize=1)
def _engine() -> AnonymizerEngine:
    """presidio's anonymizer (imported on first use; it needs no model)."""
    require("presidio_anonymizer", "presidio-anonymizer")
    from presidio_anonymizer import AnonymizerEngine

    return AnonymizerEngine()


def _key(hit: Span, config: ScrubConfig) -> str:
    """Entity type a hit is scrubbed as: a secret's own kind when configured, else `SECRET`; else its type."""
    entity = str(getattr(hit, "entity_type", hit.label))
    if entity == "SECRET" and hit.label in dict(config.operators):
        return hit.label
    return entity


def anonymize(text: str, hits: Sequence[Span], config: ScrubConfig | None = None) -> ScrubResult:
    """Apply `config`'s operator to every hit of `text`; see `ScrubConfig` for the operators."""
    config = config or ScrubConfig()
    engine = _engine()
    from presidio_anonymizer.entities import OperatorConfig, RecognizerResult

    results: list[Any] = []
    operators: dict[str, Any] = {}
    drop = False
    for hit in hits:
        if not 0 <= hit.start < hit.end <= len(text):
            raise ValueError(f"hit {hit.label} [{hit.start}, {hit.end}) is outside a text of {len(text)} chars")
        key = _key(hit, config)
        op = config.operator(key)
        if op == "keep":
            continue
        if op == "drop_row":
            drop = True
        if key not in operators:
            if op == "hash":
                operators[key] = OperatorConfig("hash", {"hash_type": "sha256", "salt": config.salt})
            else:
                operators[key] = OperatorConfig("replace", {"new_value": f"<{key}>"})
        results.append(RecognizerResult(entity_type=key, start=hit.start, end=hit.end,
                                        score=float(getattr(hit, "score", 1.0))))
    if not results:
        return ScrubResult(text, {}, drop)
    operators["DEFAULT"] = OperatorConfig("replace", {"new_value": "<PII>"})
    out = engine.anonymize(text=text, analyzer_results=results, operators=operators)
    counts = Counter(item.entity_type for item in out.items)
    return ScrubResult(out.text, dict(sorted(counts.items())), drop)
