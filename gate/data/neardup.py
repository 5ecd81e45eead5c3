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

NEAR_DUP_KEYS = {"threshold", "ngram", "num_perm", "seed", "strip_punct", "unit", "keep"}
KEEP_RULES = ("star", "chain")
# evaluation splits are protected: when a cluster spans splits, the copy in the less protected split is the leak
PROTECTED = {"test": 3, "eval": 3, "val": 2, "valid": 2, "validation": 2, "dev": 2}


def keep_rule(contract: Contract) -> str:
    """`checks.near_duplicate.keep`: which rows of a cluster stay (see `within_split_drops`)."""
    keep = contract.options("near_duplicate").get("keep", "star")
    if keep not in KEEP_RULES:
        raise GateError(f"checks.near_duplicate.keep: {keep!r} is not one of {', '.join(KEEP_RULES)}",
                        file=contract.path)
    return str(keep)


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


def cluster(texts: list[str], keys: list[tuple[int, int]], splits: list[str], ids: list[str | None],
            digests: list[bytes], contract: Contract,
            signatures: Any = None, cache: dict[str, Any] | None = None) -> Clustering:
    """Clusters the rows; `cache` is the run's shared context (gate.data.base.RunContext): the second of
    near_duplicate and leakage asking for the same rows gets the first one's clustering. No module memo: two
    runs in one process (the service, tests) share nothing."""
    from gate.dedup import find_near_duplicates

    config = neardup_config(contract)  # once per dataset
    h = hashlib.blake2b(str(config).encode(), digest_size=16)
    h.update(b"".join(digests))  # 16 bytes each: the join is unambiguous
    h.update(np.asarray(keys, dtype=np.int64).tobytes())
    memo_key = f"neardup.cluster:{h.hexdigest()}"
    found = cache.get(memo_key) if cache is not None else None
    if found is None:
        found = Clustering(find_near_duplicates(texts, keys, config, signatures), keys, splits, ids, digests)
        if cache is not None:
            cache[memo_key] = found
    return found


def exact_pair_jaccard(a: str, b: str, config: Any) -> float:
    """Exact Jaccard of two texts' shingle sets under `config` (a NearDupConfig), for the evidence of a finding."""
    from gate.dedup import shingle_hashes

    cfg = config.shingles
    sa, sb = np.unique(shingle_hashes(a, cfg)), np.unique(shingle_hashes(b, cfg))
    union = len(np.union1d(sa, sb))
    return len(np.intersect1d(sa, sb, assume_unique=True)) / union if union else 0.0


@dataclass(frozen=True)
class Drop:
    """A row to drop as a near duplicate inside its split, with its evidence: `partner` (a position) is a row that
    stays or, under `chain`, its verified neighbour; `jaccard` is that pair's exact Jaccard (>= the threshold)."""

    pos: int
    partner: int
    jaccard: float
    cluster: int  # index into clustering.result.clusters
    kept: int  # the first row of its split in the cluster (the one every rule keeps)
    hops: int  # verified pairs between this row and `kept` along the cluster's edges (1 under `star`)


def _hops(result: Any, n: int) -> np.ndarray:
    """Per position: number of verified edges from its cluster's kept row (breadth-first, vectorised); -1 outside."""
    dist = np.full(n, -1, dtype=np.int64)
    if not result.pairs:
        return dist
    left = np.fromiter((p.left for p in result.pairs), dtype=np.int64, count=len(result.pairs))
    right = np.fromiter((p.right for p in result.pairs), dtype=np.int64, count=len(result.pairs))
    src, dst = np.concatenate((left, right)), np.concatenate((right, left))
    dist[[c.kept for c in result.clusters]] = 0
    d = 0
    while True:
        frontier = dist[src] == d
        nxt = dst[frontier]
        nxt = nxt[dist[nxt] < 0]
        if not nxt.size:
            return dist
        d += 1
        dist[nxt] = d


def within_split_drops(cl: Clustering, texts: list[str], config: Any, keep: str) -> list[Drop]:
    """Rows to drop as near duplicates inside their split, by the keep rule; shared by `near_duplicate` and scrub.

    In each cluster only rows of its most protected split(s) are judged (a copy in a less protected split is
    leakage); per split, the first row stays, and exact copies of a judged row are left to `exact_duplicate`.

    - `star` (default): a row is dropped only if its exact Jaccard with a row that stays reaches the threshold;
      otherwise it stays too (and later rows may be dropped against it). Rows are judged in key order, against
      the rows kept so far, in rounds vectorised over all clusters (a dense cluster costs ~1 verification a row).
    - `chain`: every row of the connected component but the first is dropped (union-find closure); on templated
      data a chain of pairs can link rows that are not near each other at all, so each drop cites its verified
      neighbour and reports its hops from the kept row.
    """
    res = cl.result
    groups: list[tuple[int, list[int]]] = []  # (cluster index, member positions in key order: first stays)
    for ci, c in enumerate(res.clusters):
        top = max(PROTECTED.get(cl.splits[cl.keys[p][0]], 1) for p in c.members)
        by_split: dict[int, list[int]] = {}
        seen: set[tuple[int, bytes]] = set()
        for pos in c.members:
            s = cl.keys[pos][0]
            if PROTECTED.get(cl.splits[s], 1) < top or (s, cl.digests[pos]) in seen:
                continue
            seen.add((s, cl.digests[pos]))
            by_split.setdefault(s, []).append(pos)
        groups += [(ci, g) for g in by_split.values() if len(g) > 1]
    drops: list[Drop] = []
    if not groups:
        return drops
    hops = _hops(res, len(texts))
    if keep == "chain":
        dup = {d.index: d for d in res.duplicates}
        for ci, g in groups:
            for pos in g[1:]:
                d = dup[pos]
                drops.append(Drop(pos, d.partner_index, d.jaccard, ci, g[0], int(hops[pos])))
        return drops
    threshold = config.threshold
    dup = {d.index: d for d in res.duplicates}
    pending: list[list[int]] = []
    rep: list[int] = []
    for ci, g in groups:
        if g[0] != res.clusters[ci].kept:
            pending.append(list(g[1:]))
            rep.append(g[0])
            continue
        # the first round against the cluster's kept row was computed by the clustering (exact Jaccard with kept)
        rest = []
        for m in g[1:]:
            j = dup[m].jaccard_with_kept
            if j >= threshold:
                drops.append(Drop(m, g[0], j, ci, g[0], 1))
            else:
                rest.append(m)
        rep.append(rest.pop(0) if rest else g[0])
        pending.append(rest)
    involved = sorted({p for (_, g), ms in zip(groups, pending, strict=True) if ms for p in g})
    if not involved:
        drops.sort(key=lambda d: d.pos)
        return drops
    from gate.dedup import shingle_batch
    from gate.dedup.shingle_sets import ShingleSets

    local = {p: i for i, p in enumerate(involved)}
    sets = ShingleSets(shingle_batch([texts[p] for p in involved], config.shingles))
    # each round touches only the groups that still have rows to judge (a templated cluster can take a hundred
    # rounds, one new representative each, while thousands of small groups finished in the first)
    active = [k for k, ms in enumerate(pending) if ms]
    while active:
        owner = [k for k in active for _ in pending[k]]
        flat = [m for k in active for m in pending[k]]
        jac = sets.jaccard(np.asarray([local[m] for m in flat]),
                           np.asarray([local[rep[k]] for k in owner])).tolist()
        nxt: dict[int, list[int]] = {k: [] for k in active}
        for m, k, j in zip(flat, owner, jac, strict=True):
            if j >= threshold:
                ci, g = groups[k]
                drops.append(Drop(m, rep[k], j, ci, g[0], 1))
            else:
                nxt[k].append(m)
        active = []
        for k, ms in nxt.items():
            if ms:
                rep[k] = ms.pop(0)  # the earliest row near no kept row stays, and is a representative from now on
            pending[k] = ms
            if ms:
                active.append(k)
    drops.sort(key=lambda d: d.pos)
    return drops
