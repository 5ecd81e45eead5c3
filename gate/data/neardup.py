"""Near-duplicate clustering of a whole dataset, shared by the `near_duplicate` and `leakage` checks.

Both checks ask the same question of the same rows (which rows are near copies of each other), so the
clustering runs once per dataset and configuration and both read it. Configuration comes from the
contract's `checks.near_duplicate` section; its string form is the cache key.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from gate.contract import Contract
from gate.errors import GateError

NEAR_DUP_KEYS = {"threshold", "ngram", "num_perm", "seed", "strip_punct", "unit"}
# evaluation splits are protected: when a cluster spans splits, the copy in the less protected split is the leak
PROTECTED = {"test": 3, "eval": 3, "val": 2, "valid": 2, "validation": 2, "dev": 2}


def neardup_config(contract: Contract) -> Any:
    from gate.dedup import MinHashConfig, NearDupConfig, ShingleConfig

    opts = contract.options("near_duplicate")
    unknown = set(opts) - NEAR_DUP_KEYS
    if unknown:
        raise GateError(f"unknown option(s) {sorted(unknown)} in checks.near_duplicate "
                        f"(known: {sorted(NEAR_DUP_KEYS)})", file=contract.path)
    try:
        return NearDupConfig(
            shingles=ShingleConfig(n=int(opts.get("ngram", 5)), unit=opts.get("unit", "word"),
                                   strip_punct=bool(opts.get("strip_punct", True))),
            minhash=MinHashConfig(num_perm=int(opts.get("num_perm", 128)), seed=int(opts.get("seed", 1)),
                                  threshold=float(opts.get("threshold", 0.8))))
    except ValueError as exc:
        raise GateError(f"checks.near_duplicate: {exc}", file=contract.path) from None


@dataclass
class Clustering:
    result: Any  # gate.dedup.NearDupResult
    keys: list[tuple[int, int]]  # (split index, row)
    splits: list[str]
    ids: list[str | None]
    digests: list[bytes]  # exact (normalised) text digests, to leave exact copies to exact_duplicate


_MEMO: dict[str, Clustering] = {}


def cluster(texts: list[str], keys: list[tuple[int, int]], splits: list[str], ids: list[str | None],
            digests: list[bytes], contract: Contract,
            signatures: Any = None) -> Clustering:
    from gate.dedup import find_near_duplicates

    config = neardup_config(contract)  # once per dataset
    h = hashlib.blake2b(str(config).encode(), digest_size=16)
    h.update(b"".join(digests))  # 16 bytes each: the join is unambiguous
    h.update(np.asarray(keys, dtype=np.int64).tobytes())
    memo_key = h.hexdigest()
    if memo_key not in _MEMO:
        _MEMO.clear()  # one dataset at a time: the memo only spares the second of the two checks
        _MEMO[memo_key] = Clustering(find_near_duplicates(texts, keys, config, signatures), keys, splits, ids,
                                     digests)
    return _MEMO[memo_key]


def exact_pair_jaccard(a: str, b: str, config: Any) -> float:
    """Exact Jaccard of two texts' shingle sets under `config` (a NearDupConfig), for the evidence of a finding."""
    from gate.dedup import shingle_hashes

    cfg = config.shingles
    sa, sb = np.unique(shingle_hashes(a, cfg)), np.unique(shingle_hashes(b, cfg))
    union = len(np.union1d(sa, sb))
    return len(np.intersect1d(sa, sb, assume_unique=True)) / union if union else 0.0
