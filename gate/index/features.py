"""What the dedup, leakage and uniqueness checks need to know about a row, computed exactly as they compute it.

The index only helps if its entries match what a full check would derive from the same row, so every value here
comes from the same functions the checks use (`row_text`, `normalize`, `compute_signatures`, `band_keys`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from gate.contract import Contract
from gate.data.base import Batch
from gate.data.dedup_text import dedup_texts
from gate.io.dataset import Chunk
from gate.io.rows import parse_chunk


def unique_fields(contract: Contract) -> list[str]:
    return [f.name for f in contract.fields if f.unique]


def unique_value(v: Any) -> str | None:
    """A unique field's value as a comparable string (None when absent: absence is the `required` rule's job)."""
    if v is None:
        return None
    return f"{type(v).__name__}:{v}"


def parse_rows(file: str, items: list[tuple[int, bytes]]) -> list[tuple[int, dict[str, Any]]]:
    """Parses selected lines with the same strict parser (and one-line errors) as a full check."""
    rows = []
    for line, blob in items:
        rows.extend(parse_chunk(Chunk("", file, line, blob=blob)))
    return rows


@dataclass
class Features:
    texts: list[str]
    text_digests: list[bytes]
    ids: list[str | None]
    uniques: dict[str, list[str | None]]
    signatures: np.ndarray
    shingles: np.ndarray
    bands: np.ndarray  # docs x bands uint64


def features(rows: list[dict[str, Any]], contract: Contract, config: Any) -> Features:
    from gate.dedup import compute_signatures
    from gate.dedup.lsh import band_keys

    # the checks' own function: an index entry's text and digest cannot drift from what the checks compute
    texts, digests = dedup_texts(Batch("", "", [(0, r) for r in rows]), contract)
    ids = [r.get("id") if isinstance(r.get("id"), str) else None for r in rows]
    uniques = {f: [unique_value(r.get(f)) for r in rows] for f in unique_fields(contract)}
    sig, counts = compute_signatures(texts, config)
    plan = config.plan()
    bands = band_keys(sig, plan.bands, plan.rows) if len(texts) else np.zeros((0, plan.bands), np.uint64)
    return Features(texts, digests, ids, uniques, sig, counts, bands)
