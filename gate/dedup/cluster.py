"""Near-duplicate detection end to end: signatures, LSH candidates, exact verification, clusters, keep rule.

Every reported pair is verified by exact Jaccard on shingle sets (never an estimate), so a report never names a false
pair; recall is governed by the LSH plan, whose detection curve is part of the result. Clusters are the connected
components of verified pairs; in each, the member with the smallest caller-given key (e.g. (split priority, row)) is
kept and every other member is a duplicate naming that key as its cluster id, with evidence.

Memory stays bounded by the signature matrix (docs x num_perm x 4 B): texts are shingled in chunks and shingles are
discarded after hashing; only documents that appear in candidate pairs are re-shingled for verification.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
import numpy as np

from gate.dedup.lsh import LshPlan, band_keys, candidate_pairs, cross_candidate_pairs, plan_bands
from gate.dedup.minhash import MinHashConfig, minhash_signatures
from gate.dedup.shingles import ShingleConfig, shingle_batch

__all__ = [
    "Cluster",
    "CrossPair",
    "CrossResult",
    "DuplicateAssignment",
    "NearDupConfig",
    "NearDupCounters",
    "NearDupIndex",
    "NearDupResult",
    "VerifiedPair",
    "connected_components",
    "find_near_duplicates",
]

Key = Hashable  # caller's orderable row key, typically a tuple such as (split_priority, row)


@dataclass(frozen=True)
class NearDupConfig:
    """Shingling + MinHash/LSH settings; ``str()`` is the stable cache key of the whole detector."""

    shingles: ShingleConfig = field(default_factory=ShingleConfig)
    minhash: MinHashConfig = field(default_factory=MinHashConfig)
    chunk_docs: int = 4096  # documents shingled per batch (memory knob only)

    def __str__(self) -> str:
        return f"near-dup[{self.shingles};{self.minhash}]"

    @property
    def threshold(self) -> float:
        return self.minhash.threshold

    def plan(self) -> LshPlan:
        """The banding this config implies, with its detection curve."""
        m = self.minhash
        return plan_bands(m.threshold, m.num_perm, m.fn_weight, m.fp_weight, min_recall=m.min_recall,
                          bands=m.bands, rows=m.rows)


@dataclass(frozen=True)
class VerifiedPair:
    """Two documents whose exact shingle Jaccard is >= threshold (positions and keys, ``left`` has the smaller key)."""

    left: int
    right: int
    left_key: Key
    right_key: Key
    jaccard: float


@dataclass(frozen=True)
class Cluster:
    """A connected component of verified pairs; ``id`` is the kept member's key."""

    id: Key
    kept: int
    members: tuple[int, ...]  # positions, ordered by key (kept first)
    member_keys: tuple[Key, ...]
    min_jaccard_with_kept: float  # how far the component stretches from the row that stays

    @property
    def size(self) -> int:
        return len(self.members)


@dataclass(frozen=True)
class DuplicateAssignment:
    """A row to drop: it belongs to cluster ``cluster`` (kept member's key); ``partner``/``jaccard`` is the evidence:
    the kept row itself when their exact Jaccard reaches the threshold, else its most similar verified neighbour."""

    index: int
    key: Key
    cluster: Key
    partner: Key
    partner_index: int
    jaccard: float
    jaccard_with_kept: float


@dataclass(frozen=True)
class NearDupCounters:
    """Per-step counts, so a report can say exactly what "duplicate" meant (rows dropped vs rows in clusters)."""

    docs: int
    empty_docs: int  # no shingles after normalisation: never near-duplicates (exact-dup checks own them)
    identical_signature_docs: int  # collapsed onto a representative before banding (star pairs, still verified)
    candidate_pairs: int
    verified_pairs: int
    false_candidates_rejected: int
    oversized_buckets: int  # buckets reduced to a chain of pairs (see MinHashConfig.max_bucket)
    clusters: int
    rows_in_clusters: int
    duplicates: int  # rows to drop = rows_in_clusters - clusters


@dataclass(frozen=True)
class NearDupResult:
    """Everything a ``near_duplicate`` check needs to judge and to show its evidence."""

    config_key: str
    plan: LshPlan
    counters: NearDupCounters
    clusters: tuple[Cluster, ...]  # ordered by cluster id
    duplicates: tuple[DuplicateAssignment, ...]  # ordered by key
    pairs: tuple[VerifiedPair, ...]  # every verified pair, ordered by (left key, right key)


@dataclass(frozen=True)
class CrossPair:
    """A query document and an index document with exact Jaccard >= threshold.

    ``containment`` = |Q ∩ I| / |Q| is extra evidence for contamination (how much of the query item appears)."""

    query_index: int
    query_key: Key
    index_index: int
    index_key: Key
    jaccard: float
    containment: float


@dataclass(frozen=True)
class CrossResult:
    """Verified cross pairs of a query set against an index, with counters."""

    config_key: str
    plan: LshPlan
    pairs: tuple[CrossPair, ...]  # ordered by (query key, index key)
    query_docs: int
    query_empty_docs: int
    candidate_pairs: int
    verified_pairs: int
    false_candidates_rejected: int
    oversized_buckets: int

    @property
    def matched_query_indices(self) -> tuple[int, ...]:
        """Query positions with at least one verified match (e.g. contaminated evaluation items)."""
        return tuple(sorted({p.query_index for p in self.pairs}))

    @property
    def matched_index_indices(self) -> tuple[int, ...]:
        """Index positions matched by some query document (e.g. training rows leaking an evaluation item)."""
        return tuple(sorted({p.index_index for p in self.pairs}))


# ---------------------------------------------------------------------------------------------------------------
# Building blocks


def connected_components(n: int, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Component label (smallest member position) for each of n nodes, from edges, vectorised union-find.

    Min-label hooking with full pointer jumping: each round hooks every edge's larger root under the smaller, then
    flattens; it stops when every edge joins equal roots, which is exactly the union-find answer.
    """
    parent = np.arange(n, dtype=np.int64)
    left, right = np.asarray(left, np.int64), np.asarray(right, np.int64)
    while left.size:
        pl, pr = parent[left], parent[right]
        differ = pl != pr
        if not differ.any():
            break
        pl, pr = pl[differ], pr[differ]
        lo, hi = np.minimum(pl, pr), np.maximum(pl, pr)
        np.minimum.at(parent, hi, lo)
        while True:  # pointer jumping until every node points at a root
            grand = parent[parent]
            if np.array_equal(grand, parent):
                break
            parent = grand
    return parent


class _ShingleSets:
    """Distinct-shingle sets of selected documents, computed on demand in one batch (re-shingling is cheaper than
    holding every document's shingles in memory)."""

    def __init__(self, texts: Sequence[str], config: ShingleConfig) -> None:
        self._texts = texts
        self._config = config
        self._sets: dict[int, frozenset[int]] = {}

    def load(self, indices: np.ndarray) -> None:
        need = [int(i) for i in np.unique(indices) if int(i) not in self._sets]
        for s in range(0, len(need), 8192):
            part = need[s : s + 8192]
            batch = shingle_batch([self._texts[i] for i in part], self._config)
            for k, i in enumerate(part):
                self._sets[i] = batch.doc_set(k)

    def __getitem__(self, i: int) -> frozenset[int]:
        return self._sets[i]


def _jaccards(sets_a: _ShingleSets, a: np.ndarray, sets_b: _ShingleSets, b: np.ndarray) -> np.ndarray:
    """Exact Jaccard of each (a[k], b[k]) pair; a Python loop over *pairs* (few), C set intersection inside."""
    sets_a.load(a)
    sets_b.load(b)
    out = np.empty(len(a), dtype=np.float64)
    for k, (i, j) in enumerate(zip(a.tolist(), b.tolist())):
        x, y = sets_a[i], sets_b[j]
        inter = len(x & y) if len(x) <= len(y) else len(y & x)
        union = len(x) + len(y) - inter
        out[k] = inter / union if union else 0.0
    return out


def _check_keys(keys: Sequence[Key] | None, n: int, what: str) -> list[Key]:
    if keys is None:
        return [(i,) for i in range(n)]
    keys = list(keys)
    if len(keys) != n:
        raise ValueError(f"{what}: got {len(keys)} keys for {n} texts")
    if len(set(keys)) != n:
        raise ValueError(f"{what}: keys must be unique")
    return keys


def _key_ranks(keys: list[Key], indices: np.ndarray) -> np.ndarray:
    """Rank of each listed document's key among the listed ones (keys compared once, by Python ordering)."""
    idx = indices.tolist()
    order = sorted(range(len(idx)), key=lambda k: keys[idx[k]])
    ranks = np.empty(len(idx), dtype=np.int64)
    ranks[order] = np.arange(len(idx))
    return ranks


def _full_signature_groups(sig: np.ndarray, docs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For documents with byte-identical signatures: (representative of each doc, sorted list of representatives).

    Exact (and template-heavy) duplicates would otherwise fill single LSH buckets with k^2 pairs; their identical
    signatures give identical band keys anyway, so banding the representative loses nothing.
    """
    rep = docs.copy()
    if docs.size < 2:
        return rep, docs
    h = band_keys(sig[docs], 1, sig.shape[1])[:, 0]
    order = np.argsort(h, kind="stable")
    sh = h[order]
    same_as_prev = np.concatenate(([False], sh[1:] == sh[:-1]))
    run_start = np.maximum.accumulate(np.where(same_as_prev, 0, np.arange(docs.size)))
    cand_rep = order[run_start]  # first doc (lowest position) of its hash run
    equal = np.all(sig[docs[order]] == sig[docs[cand_rep]], axis=1)  # confirm; a 64-bit collision stays separate
    rep[order[equal]] = docs[cand_rep[equal]]
    reps = np.unique(rep)
    return rep, reps


# ---------------------------------------------------------------------------------------------------------------
# Index and top-level API


class NearDupIndex:
    """Signatures and LSH keys of a document set, queried for its own near-duplicates or against another set.

    Build once (e.g. over training rows), then :meth:`find_duplicates` for ``near_duplicate`` and :meth:`query` with
    evaluation items for ``leakage``/``contamination``. ``texts`` is kept by reference for verification.
    """

    def __init__(self, texts: Sequence[str], keys: Sequence[Key] | None = None, config: NearDupConfig | None = None):
        self.config = config or NearDupConfig()
        self.texts = texts
        self.keys = _check_keys(keys, len(texts), "index")
        self.plan = self.config.plan()
        self.signatures, self.shingle_counts = _signatures(texts, self.config)
        docs = np.flatnonzero(self.shingle_counts > 0)
        self._rep, self._reps = _full_signature_groups(self.signatures, docs)
        self._rep_of = np.full(len(texts), -1, dtype=np.int64)
        self._rep_of[docs] = self._rep
        self._band_keys = band_keys(self.signatures[self._reps], self.plan.bands, self.plan.rows)
        self._sets = _ShingleSets(texts, self.config.shingles)

    def __len__(self) -> int:
        return len(self.texts)

    @property
    def empty_docs(self) -> int:
        return int((self.shingle_counts == 0).sum())

    def find_duplicates(self) -> NearDupResult:
        """Near-duplicate clusters within the index, with the keep rule applied."""
        cfg = self.config
        threshold = cfg.minhash.threshold
        n = len(self.texts)
        pairs, oversized = candidate_pairs(self._band_keys, cfg.minhash.max_bucket)
        left, right = self._reps[pairs[:, 0]], self._reps[pairs[:, 1]]
        # members of identical-signature groups are candidates with their representative
        members = np.flatnonzero((self._rep_of >= 0) & (self._rep_of != np.arange(n)))
        left = np.concatenate((left, self._rep_of[members]))
        right = np.concatenate((right, members))
        n_candidates = int(left.size)
        jac = _jaccards(self._sets, left, self._sets, right)
        ok = jac >= threshold
        left, right, jac = left[ok], right[ok], jac[ok]

        labels = connected_components(n, left, right)
        in_cluster = np.zeros(n, dtype=bool)
        in_cluster[left] = True
        in_cluster[right] = True
        nodes = np.flatnonzero(in_cluster)
        ranks = np.full(n, -1, dtype=np.int64)
        ranks[nodes] = _key_ranks(self.keys, nodes)
        # order cluster members by (label, key rank): the first of each label is the kept row
        order = nodes[np.lexsort((ranks[nodes], labels[nodes]))]
        starts = np.flatnonzero(np.concatenate(([True], labels[order][1:] != labels[order][:-1]))) if order.size else order
        kept_of_label = np.full(n, -1, dtype=np.int64)
        kept_of_label[labels[order[starts]]] = order[starts]
        kept = kept_of_label[labels]  # per node (valid where in_cluster)

        dups = nodes[kept[nodes] != nodes]
        jac_kept = _jaccards(self._sets, dups, self._sets, kept[dups])
        best_partner, best_jac = _best_neighbours(n, left, right, jac, ranks)

        duplicates = []
        for d, jk in zip(dups.tolist(), jac_kept.tolist()):
            k = int(kept[d])
            partner, pj = (k, jk) if jk >= threshold else (int(best_partner[d]), float(best_jac[d]))
            duplicates.append(DuplicateAssignment(index=d, key=self.keys[d], cluster=self.keys[k],
                                                  partner=self.keys[partner], partner_index=partner,
                                                  jaccard=pj, jaccard_with_kept=jk))
        duplicates.sort(key=lambda a: ranks[a.index])

        min_jk = {int(k): 1.0 for k in order[starts].tolist()}
        for a in duplicates:
            k = int(kept[a.index])
            min_jk[k] = min(min_jk[k], a.jaccard_with_kept)
        bounds = np.append(starts, order.size).tolist()
        spans = sorted(zip(bounds[:-1], bounds[1:]), key=lambda se: ranks[order[se[0]]])
        clusters = tuple(
            Cluster(id=self.keys[int(order[s])], kept=int(order[s]), members=tuple(order[s:e].tolist()),
                    member_keys=tuple(self.keys[i] for i in order[s:e].tolist()),
                    min_jaccard_with_kept=min_jk[int(order[s])])
            for s, e in spans
        )
        vpairs = []
        for i, j, v in zip(left.tolist(), right.tolist(), jac.tolist()):
            if ranks[i] > ranks[j]:
                i, j = j, i
            vpairs.append(VerifiedPair(left=i, right=j, left_key=self.keys[i], right_key=self.keys[j], jaccard=v))
        vpairs.sort(key=lambda p: (ranks[p.left], ranks[p.right]))

        counters = NearDupCounters(
            docs=n,
            empty_docs=self.empty_docs,
            identical_signature_docs=int(members.size),
            candidate_pairs=n_candidates,
            verified_pairs=len(vpairs),
            false_candidates_rejected=n_candidates - len(vpairs),
            oversized_buckets=oversized,
            clusters=len(clusters),
            rows_in_clusters=int(nodes.size),
            duplicates=len(duplicates),
        )
        return NearDupResult(config_key=str(cfg), plan=self.plan, counters=counters, clusters=clusters,
                             duplicates=tuple(duplicates), pairs=tuple(vpairs))

    def query(self, texts: Sequence[str], keys: Sequence[Key] | None = None) -> CrossResult:
        """Verified near-duplicate pairs between ``texts`` (e.g. evaluation items) and this index."""
        cfg = self.config
        qkeys = _check_keys(keys, len(texts), "query")
        qsig, qcounts = _signatures(texts, cfg)
        qdocs = np.flatnonzero(qcounts > 0)
        qband = band_keys(qsig[qdocs], self.plan.bands, self.plan.rows)
        pairs, oversized = cross_candidate_pairs(self._band_keys, qband, cfg.minhash.max_bucket)
        q = qdocs[pairs[:, 0]]
        rep = self._reps[pairs[:, 1]]
        # expand each representative to its identical-signature group (all share its band keys)
        group_order = np.argsort(self._rep_of, kind="stable")
        grouped = self._rep_of[group_order]
        lo = np.searchsorted(grouped, rep, side="left")
        hi = np.searchsorted(grouped, rep, side="right")
        sizes = hi - lo
        q = np.repeat(q, sizes)
        idx = group_order[np.repeat(lo, sizes) + _ranks_within(sizes)]
        n_candidates = int(q.size)

        qsets = _ShingleSets(texts, cfg.shingles)
        jac = _jaccards(qsets, q, self._sets, idx)
        ok = jac >= cfg.minhash.threshold
        q, idx, jac = q[ok], idx[ok], jac[ok]
        out = []
        for a, b, v in zip(q.tolist(), idx.tolist(), jac.tolist()):
            qs, xs = qsets[a], self._sets[b]
            out.append(CrossPair(query_index=a, query_key=qkeys[a], index_index=b, index_key=self.keys[b],
                                 jaccard=v, containment=len(qs & xs) / len(qs)))
        qrank = _rank_array(qkeys, q)
        irank = _rank_array(self.keys, idx)
        out.sort(key=lambda p: (qrank[p.query_index], irank[p.index_index]))
        return CrossResult(
            config_key=str(cfg), plan=self.plan, pairs=tuple(out), query_docs=len(texts),
            query_empty_docs=int((qcounts == 0).sum()), candidate_pairs=n_candidates, verified_pairs=len(out),
            false_candidates_rejected=n_candidates - len(out), oversized_buckets=oversized,
        )


def _ranks_within(sizes: np.ndarray) -> np.ndarray:
    total = int(sizes.sum())
    starts = np.zeros(sizes.size, dtype=np.int64)
    np.cumsum(sizes[:-1], out=starts[1:])
    return np.arange(total, dtype=np.int64) - np.repeat(starts, sizes)


def _rank_array(keys: list[Key], indices: np.ndarray) -> np.ndarray:
    """Array over all positions holding the key rank of each distinct listed position (-1 elsewhere)."""
    ranks = np.full(len(keys), -1, dtype=np.int64)
    uniq = np.unique(indices)
    if uniq.size:
        ranks[uniq] = _key_ranks(keys, uniq)
    return ranks


def _best_neighbours(
    n: int, left: np.ndarray, right: np.ndarray, jac: np.ndarray, ranks: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per node: its most similar verified neighbour (ties -> smallest key) and that Jaccard."""
    src = np.concatenate((left, right))
    dst = np.concatenate((right, left))
    jj = np.concatenate((jac, jac))
    order = np.lexsort((ranks[dst], -jj, src))
    src, dst, jj = src[order], dst[order], jj[order]
    first = np.concatenate(([True], src[1:] != src[:-1])) if src.size else np.zeros(0, bool)
    partner = np.full(n, -1, dtype=np.int64)
    best = np.zeros(n, dtype=np.float64)
    partner[src[first]] = dst[first]
    best[src[first]] = jj[first]
    return partner, best


def _signatures(texts: Sequence[str], config: NearDupConfig) -> tuple[np.ndarray, np.ndarray]:
    """Signature matrix and shingle counts, shingling ``chunk_docs`` texts at a time (bounded memory)."""
    n = len(texts)
    m = config.minhash
    dtype = np.uint32 if m.scheme == "affine32" else np.uint64
    sig = np.empty((n, m.num_perm), dtype=dtype)
    counts = np.zeros(n, dtype=np.int64)
    for s in range(0, n, config.chunk_docs):
        e = min(s + config.chunk_docs, n)
        batch = shingle_batch([texts[i] for i in range(s, e)], config.shingles)
        sig[s:e] = minhash_signatures(batch.hashes, batch.offsets, m)
        counts[s:e] = batch.sizes
    return sig, counts


def find_near_duplicates(
    texts: Sequence[str], keys: Sequence[Key] | None = None, config: NearDupConfig | None = None
) -> NearDupResult:
    """Near-duplicate clusters of ``texts``; in each, the row with the smallest key is kept.

    ``keys`` (unique, mutually orderable; default ``(position,)``) define both the keep rule and the cluster ids,
    e.g. ``(split_priority, row)`` so that a test item is kept over its training copy.
    """
    return NearDupIndex(texts, keys, config).find_duplicates()
