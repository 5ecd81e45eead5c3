"""Rewrite texts given their PII and secret hits, with presidio-anonymizer and one operator per entity type.

Why presidio-anonymizer rather than string slicing: it resolves overlapping and adjacent hits (a URL inside an
e-mail, "John" + "Smith" as one PERSON) the way presidio users expect, and its `hash` operator is the documented
salted sha256. Why a `drop_row` signal instead of deleting here: this function sees texts; whether a row goes
(and how that is recorded in the scrub manifest) is the caller's decision. Values under a `drop_row` operator are
still replaced by a placeholder, so a caller that ignores the signal cannot leak them.

Why the texts of one conversation are rewritten together (`anonymize_texts`): a detector that finds "Betty" in the
answer may miss her in the question (NER depends on context), and a row whose question keeps the name its answer
hides is both a leak and a broken training example. So every value found in one text of a row is replaced, as
whole words, in every text of that row, and one value always gets one replacement there (its first type's
placeholder, its salted digest, or its pseudonym `<PERSON_1>`, numbered per type in order of first appearance).
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gate.pii.config import ScrubConfig, require
from gate.pii.redact import Span

if TYPE_CHECKING:
    from presidio_anonymizer import AnonymizerEngine


@dataclass(frozen=True)
class ScrubResult:
    """The rewritten text, how many values of each entity type were rewritten, whether to drop the row, the
    finding rules (`pii.PERSON`, `secret.openai_api_key`) of the values rewritten, and of those under `drop_row`."""

    text: str
    counts: dict[str, int] = field(default_factory=dict)
    drop_row: bool = False
    rules: tuple[str, ...] = ()
    drop_rules: tuple[str, ...] = ()


@functools.lru_cache(maxsize=1)
def _engine() -> AnonymizerEngine:
    """presidio's anonymizer (imported on first use; it needs no model)."""
    require("presidio_anonymizer", "presidio-anonymizer")
    from presidio_anonymizer import AnonymizerEngine

    return AnonymizerEngine()


def hit_rule(hit: Span) -> str:
    """The finding rule the `pii`/`secret` checks report a hit under: `pii.<ENTITY>` or `secret.<kind>`."""
    entity = str(getattr(hit, "entity_type", hit.label))
    return f"secret.{hit.label}" if entity == "SECRET" else f"pii.{entity}"


def _key(hit: Span, operators: Mapping[str, str]) -> str:
    """Entity type a hit is scrubbed as: a secret's own kind when configured, else `SECRET`; else its type."""
    entity = str(getattr(hit, "entity_type", hit.label))
    if entity == "SECRET" and (hit.label in operators or f"secret.{hit.label}" in operators):
        return hit.label
    return entity


def hit_operator(hit: Span, operators: Mapping[str, str], default: str) -> str:
    """The one rule for what happens to a hit, shared by `gate scrub` and the `pii`/`secret` checks (a value scrub
    keeps is not a finding): the operator named for its rule (`pii.URL`, `secret.jwt`), its secret kind (`jwt`),
    its entity type (`URL`, `SECRET`), else `default`."""
    entity = str(getattr(hit, "entity_type", hit.label))
    names = [hit_rule(hit)] + ([hit.label] if entity == "SECRET" else []) + [entity]
    for name in names:
        if name in operators:
            return operators[name]
    return default


class _Values:
    """One row's value -> replacement table: the same value gets the same replacement in every text of the row."""

    def __init__(self, config: ScrubConfig) -> None:
        self.config = config
        self.by_value: dict[str, str] = {}
        self.numbers: Counter[str] = Counter()

    def replacement(self, key: str, op: str, value: str) -> str:
        found = self.by_value.get(value)
        if found is None:
            if op == "hash":
                from presidio_anonymizer.operators import Hash

                found = Hash().operate(value, {"hash_type": "sha256", "salt": self.config.salt})
            elif op == "pseudonym":
                self.numbers[key] += 1
                found = f"<{key}_{self.numbers[key]}>"
            else:  # replace, and drop_row (the row goes, but a caller ignoring that must not leak the value)
                found = f"<{key}>"
            self.by_value[value] = found
        return found


#: Shortest value copied to the other texts of a row: shorter ones ("Al", "NY") match too much by accident.
MIN_PROPAGATED_CHARS = 3


def anonymize_texts(texts: Sequence[str], hits: Sequence[Sequence[Span]],
                    config: ScrubConfig | None = None) -> list[ScrubResult]:
    """Apply `config`'s operator to every hit of the texts of one row (one conversation), consistently: see the
    module docstring. `hits[i]` are the hits of `texts[i]`; the result holds one ScrubResult per text."""
    config = config or ScrubConfig()
    ops = dict(config.operators)
    # (start, end, key, op, rule, score) per text; keep hits are left alone and never spread
    spans: list[list[tuple[int, int, str, str, str, float]]] = []
    for text, text_hits in zip(texts, hits, strict=True):
        mine = []
        for hit in text_hits:
            if not 0 <= hit.start < hit.end <= len(text):
                raise ValueError(f"hit {hit.label} [{hit.start}, {hit.end}) is outside a text of {len(text)} chars")
            op = hit_operator(hit, ops, config.default_operator)
            if op != "keep":
                mine.append((hit.start, hit.end, _key(hit, ops), op, hit_rule(hit),
                             float(getattr(hit, "score", 1.0))))
        spans.append(sorted(mine))
    table = _Values(config)
    first: dict[str, tuple[str, str, str, float]] = {}  # value -> (key, op, rule, score) of its first hit
    for text, mine in zip(texts, spans, strict=True):
        for s, e, key, op, rule, score in mine:
            value = text[s:e]
            if value not in first:
                first[value] = (key, op, rule, score)
                table.replacement(key, op, value)  # numbers pseudonyms in order of first appearance
    spread = [v for v in first if len(v.strip()) >= MIN_PROPAGATED_CHARS]
    if spread:
        pattern = re.compile("|".join(rf"(?<!\w){re.escape(v)}(?!\w)" for v in sorted(spread, key=len, reverse=True)))
        for text, mine in zip(texts, spans, strict=True):
            taken = [(s, e) for s, e, *_ in mine]
            extra = [(m.start(), m.end(), *first[m.group(0)]) for m in pattern.finditer(text)
                     if not any(m.start() < e and s < m.end() for s, e in taken)]
            mine.extend(extra)
            mine.sort()
    return [_apply(text, mine, table) for text, mine in zip(texts, spans, strict=True)]


def _apply(text: str, mine: list[tuple[int, int, str, str, str, float]], table: _Values) -> ScrubResult:
    """One text through presidio's anonymizer, each key's values replaced through the row's table."""
    if not mine:
        return ScrubResult(text)
    from presidio_anonymizer.entities import OperatorConfig, RecognizerResult

    operators: dict[str, Any] = {}
    for _, _, key, op, _, _ in mine:
        if key not in operators:
            operators[key] = OperatorConfig(
                "custom", {"lambda": functools.partial(lambda k, o, v: table.replacement(k, o, v), key, op)})
    operators["DEFAULT"] = OperatorConfig("replace", {"new_value": "<PII>"})
    results = [RecognizerResult(entity_type=key, start=s, end=e, score=score) for s, e, key, _, _, score in mine]
    out = _engine().anonymize(text=text, analyzer_results=results, operators=operators)
    counts = Counter(item.entity_type for item in out.items)
    rules = tuple(sorted({rule for _, _, _, _, rule, _ in mine}))
    drops = tuple(sorted({rule for _, _, _, op, rule, _ in mine if op == "drop_row"}))
    return ScrubResult(out.text, dict(sorted(counts.items())), bool(drops), rules, drops)


def anonymize(text: str, hits: Sequence[Span], config: ScrubConfig | None = None) -> ScrubResult:
    """Apply `config`'s operator to every hit of one `text`; see `ScrubConfig` for the operators."""
    return anonymize_texts([text], [hits], config)[0]
