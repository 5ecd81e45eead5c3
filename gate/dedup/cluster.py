"""Near-duplicate detection end to end: signatures, LSH candidates, exact verification, clusters, keep rule.

Every reported pair is verified by exact Jaccard on shingle sets (never an estimate), so a report never names a false
pair; recall is governed by the LSH plan, whose detection curve is part of the result. Clusters are the connected
components of the candidate pairs whose exact Jaccard reaches the threshold; a candidate whose two ends are already
connected is not verified (it cannot change a cluster), which keeps dense clusters of k near-copies at ~k
verifications instead of k^2/2. In each cluster the member with the smallest caller-given key (e.g. (split priority,
row)) is kept; every other member is a duplicate naming that key as its cluster id, with evidence.

Memory is the signature matrix (docs x num_perm x 4 B) plus the shingles of documents that have candidates: texts
are shingled in chunks and shingles discarded after hashing; candidate documents are re-shingled for verification.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

import numpy as np

from gate.dedup._arrays import ranks_within, sorted_unique
from gate.dedup.components import verify_spanning
from gate.dedup.lsh import LshPlan, band_keys, cross_candidate_pairs, plan_bands, split_candidate_pairs
from gate.dedup.minhash import MinHashConfig, minhash_signatures
from gate.dedup.shingle_sets import ShingleSets, _ratio
from gate.dedup.shingles import ShingleBatch, ShingleConfig, shingle_batch
from gate.dedup.sketch import (
    Sketch,
    _full_signature_groups,
    _prefilter,
    prefilter_miss,
    signature_floor,
    sketch_signatures,
)

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
    "compute_signatures",
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
        """The rows verified pairs join: a lower bound of the true component, never an estimate of it. LSH may
        propose none of a member's pairs (79 of 80 rows on GPTeacher at 0.7), so reports say
        "at least" (gate.data.checks.near_duplicate)."""
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
    candidate_pairs: int  # distinct pairs sharing a band (plus identical-signature members with their representative)
    skipped_already_connected: int  # candidates not verified because their ends were already in one cluster
    verified_pairs: int  # candidates verified with exact Jaccard >= threshold (the edges behind the clusters)
    false_candidates_rejected: int  # candidates verified with exact Jaccard < threshold
    oversized_buckets: int  # buckets reduced to a chain of pairs (see MinHashConfig.max_bucket)
    clusters: int
    rows_in_clusters: int
    duplicates: int  # rows to drop = rows_in_clusters - clusters
    # of false_candidates_rejected: rejected by the b-bit signature prefilter (`signature_floor`), not re-shingled
    rejected_by_signature: int = 0
    # of false_candidates_rejected: rejected by the exact shingle-count bound (`ShingleSets.may_reach`), no lookups
    rejected_by_bound: int = 0
    # buckets over MinHashConfig.split_bucket whose members were joined by the exact prefix filter instead of all
    # pairs (`ShingleSets.prefix_join`); candidate_pairs then counts only the candidates that filter kept
    split_buckets: int = 0


@dataclass(frozen=True)
class NearDupResult:
    """Everything a ``near_duplicate`` check needs to judge and to show its evidence."""

    config_key: str
    plan: LshPlan
    counters: NearDupCounters
    clusters: tuple[Cluster, ...]  # ordered by cluster id
    duplicates: tuple[DuplicateAssignment, ...]  # ordered by key
    # the verified edges that built the clusters, ordered by (left key, right key); candidates whose ends were already
    # connected are not verified, so this is not every pair above the threshold (clusters are the same either way)
    pairs: tuple[VerifiedPair, ...]


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


class _Subset:
    """Shingles of selected documents from one or two text sources, re-computed for verification (cheaper than
    holding every document's shingles), addressed by (source, original position)."""

    def __init__(self, config: ShingleConfig, *sources: tuple[Sequence[str], np.ndarray]) -> None:
        self._positions: list[np.ndarray] = []
        self._base: list[int] = []
        hashes: list[np.ndarray] = []
        sizes: list[np.ndarray] = []
        base = 0
        for texts, positions in sources:
            pos = sorted_unique(np.asarray(positions, dtype=np.int64))
            batch = shingle_batch([texts[i] for i in pos.tolist()], config)
            self._positions.append(pos)
            self._base.append(base)
            hashes.append(batch.hashes)
            sizes.append(batch.sizes)
            base += pos.size
        offsets = np.zeros(base + 1, dtype=np.int64)
        np.cumsum(np.concatenate(sizes), out=offsets[1:])
        # one source (find_duplicates): its hashes as they are, no copy of ~50 MB per 100k rows
        flat = hashes[0] if len(hashes) == 1 else np.concatenate(hashes)
        self.sets = ShingleSets(ShingleBatch(hashes=flat, offsets=offsets, config=config))

    def local(self, source: int, positions: np.ndarray) -> np.ndarray:
        return self._base[source] + np.searchsorted(self._positions[source], positions)

    def position(self, source: int, local: np.ndarray) -> np.ndarray:
        """Inverse of :meth:`local`: original positions of local documents of ``source``."""
        return self._positions[source][np.asarray(local, dtype=np.int64) - self._base[source]]


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


# ---------------------------------------------------------------------------------------------------------------
# Index and top-level API


class NearDupIndex:
    """Signatures and LSH keys of a document set, queried for its own near-duplicates or against another set.

    Build once (e.g. over training rows), then :meth:`find_duplicates` for ``near_duplicate`` and :meth:`query` with
    evaluation items for ``leakage``/``contamination``. ``texts`` is kept by reference for verification.
    """

    def __init__(
        self, texts: Sequence[str], keys: Sequence[Key] | None = None, config: NearDupConfig | None = None,
        signatures: tuple[np.ndarray, np.ndarray] | Sketch | None = None,
    ) -> None:
        """`signatures`: precomputed (signature matrix, shingle counts), or their `Sketch` for this config's plan."""
        self.config = config or NearDupConfig()
        self.texts = texts
        self.keys = _check_keys(keys, len(texts), "index")
        self.plan = self.config.plan()
        if signatures is None:
            signatures = compute_signatures(texts, self.config)
        if isinstance(signatures, Sketch):
            if signatures.bands.shape != (len(texts), self.plan.bands) or signatures.digest.shape != (len(texts), 2):
                raise ValueError("precomputed sketch does not match the texts and the LSH plan")
            sk = signatures
        else:
            if signatures[0].shape != (len(texts), self.config.minhash.num_perm) or len(signatures[1]) != len(texts):
                raise ValueError("precomputed signatures do not match the texts and num_perm")
            sk = sketch_signatures(signatures[0], signatures[1], self.plan)
        self.shingle_counts = sk.counts
        m = self.config.minhash.num_perm
        self._low = sk.low if sk.low is not None and sk.low.shape == (len(texts), m) else None
        docs = np.flatnonzero(self.shingle_counts > 0)
        self._rep, self._reps = _full_signature_groups(sk.digest, docs)
        self._rep_of = np.full(len(texts), -1, dtype=np.int64)
        self._rep_of[docs] = self._rep
        self._band_keys = sk.bands[self._reps]

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
        pairs, split_reps, split, oversized = split_candidate_pairs(
            self._band_keys, cfg.minhash.split_bucket, cfg.minhash.max_bucket)
        left, right = self._reps[pairs[:, 0]], self._reps[pairs[:, 1]]
        # members of identical-signature groups are candidates with their representative (tried first: they pass)
        members = np.flatnonzero((self._rep_of >= 0) & (self._rep_of != np.arange(n)))
        floor = 0
        if self._low is not None:
            floor = signature_floor(threshold, cfg.minhash.num_perm, prefilter_miss(self.plan, cfg.minhash.min_recall))
        prefiltered = 0
        if floor and left.size:
            keep = _prefilter(self._low, left, right, floor)
            prefiltered = int(left.size - keep.sum())
            left, right = left[keep], right[keep]
        split_docs = self._reps[split_reps]
        subset = _Subset(cfg.shingles, (self.texts, np.concatenate((left, right, self._rep_of[members], members,
                                                                split_docs))))
        if split_docs.size:
            # the pairs of split buckets: LSH candidates (they share a band) that the prefix filter keeps, i.e.
            # every candidate of theirs that can reach the threshold; the same filters follow as for the others
            sa, sb = subset.sets.prefix_join(subset.local(0, split_docs), threshold)
            sa, sb = subset.position(0, sa), subset.position(0, sb)
            ra, rb = np.searchsorted(self._reps, sa), np.searchsorted(self._reps, sb)
            shares = (self._band_keys[ra] == self._band_keys[rb]).any(axis=1)
            ra, rb = ra[shares], rb[shares]
            shift = max(int(self._reps.size).bit_length(), 1)
            small_codes = (pairs[:, 0] << shift) | pairs[:, 1]
            codes = (ra << shift) | rb  # ra < rb: reps ascend with documents
            hit = np.searchsorted(small_codes, codes)
            np.minimum(hit, max(small_codes.size - 1, 0), out=hit)
            new = small_codes[hit] != codes if small_codes.size else np.ones(codes.size, bool)
            sa, sb = self._reps[ra[new]], self._reps[rb[new]]
            if floor and sa.size:
                keep = _prefilter(self._low, sa, sb, floor)
                prefiltered += int(sa.size - keep.sum())
                sa, sb = sa[keep], sb[keep]
            left, right = np.concatenate((left, sa)), np.concatenate((right, sb))
        left = np.concatenate((self._rep_of[members], left))
        right = np.concatenate((members, right))
        # exact and sound: drops only pairs whose Jaccard cannot reach the threshold (see ShingleSets.may_reach)
        reach = subset.sets.may_reach(subset.local(0, left), subset.local(0, right), threshold)
        bounded = int(left.size - reach.sum())
        left, right = left[reach], right[reach]
        labels, passed, jac, tested, rejected = verify_spanning(
            n, left, right, lambda a, b: subset.sets.jaccard(subset.local(0, a), subset.local(0, b)), threshold
        )
        skipped = int(left.size) - tested
        left, right = left[passed], right[passed]

        in_cluster = np.zeros(n, dtype=bool)
        in_cluster[left] = True
        in_cluster[right] = True
        nodes = np.flatnonzero(in_cluster)
        ranks = np.full(n, -1, dtype=np.int64)
        ranks[nodes] = _key_ranks(self.keys, nodes)
        # order cluster members by (label, key rank): the first of each label is the kept row
        order = nodes[np.lexsort((ranks[nodes], labels[nodes]))]
        ordered_labels = labels[order]
        starts = np.flatnonzero(np.concatenate(([True], ordered_labels[1:] != ordered_labels[:-1])))[: order.size]
        kept_of_label = np.full(n, -1, dtype=np.int64)
        kept_of_label[labels[order[starts]]] = order[starts]
        kept = kept_of_label[labels]  # per node (valid where in_cluster)

        dups = nodes[kept[nodes] != nodes]
        jac_kept = subset.sets.jaccard(subset.local(0, dups), subset.local(0, kept[dups]))
        best_partner, best_jac = _best_neighbours(n, left, right, jac, ranks)

        duplicates = []
        for d, jk in zip(dups.tolist(), jac_kept.tolist(), strict=True):
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
        spans = sorted(zip(bounds[:-1], bounds[1:], strict=True), key=lambda se: ranks[order[se[0]]])
        clusters = tuple(
            Cluster(id=self.keys[int(order[s])], kept=int(order[s]), members=tuple(order[s:e].tolist()),
                    member_keys=tuple(self.keys[i] for i in order[s:e].tolist()),
                    min_jaccard_with_kept=min_jk[int(order[s])])
            for s, e in spans
        )
        vpairs = []
        for i, j, v in zip(left.tolist(), right.tolist(), jac.tolist(), strict=True):
            if ranks[i] > ranks[j]:
                i, j = j, i
            vpairs.append(VerifiedPair(left=i, right=j, left_key=self.keys[i], right_key=self.keys[j], jaccard=v))
        vpairs.sort(key=lambda p: (ranks[p.left], ranks[p.right]))

        counters = NearDupCounters(
            docs=n,
            empty_docs=self.empty_docs,
            identical_signature_docs=int(members.size),
            candidate_pairs=tested + skipped + prefiltered + bounded,
            skipped_already_connected=skipped,
            verified_pairs=len(vpairs),
            false_candidates_rejected=rejected + prefiltered + bounded,
            rejected_by_signature=prefiltered,
            rejected_by_bound=bounded,
            oversized_buckets=oversized,
            split_buckets=split,
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
        qsig, qcounts = compute_signatures(texts, cfg)
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
        idx = group_order[np.repeat(lo, sizes) + ranks_within(sizes)]
        n_candidates = int(q.size)

        subset = _Subset(cfg.shingles, (texts, q), (self.texts, idx))
        q_local, i_local = subset.local(0, q), subset.local(1, idx)
        reach = subset.sets.may_reach(q_local, i_local, cfg.minhash.threshold)  # sound: the same pairs pass
        q, idx, q_local, i_local = q[reach], idx[reach], q_local[reach], i_local[reach]
        inter, q_sizes, i_sizes = subset.sets.overlap(q_local, i_local)
        jac = _ratio(inter, q_sizes + i_sizes - inter)
        ok = jac >= cfg.minhash.threshold
        q, idx, jac, containment = q[ok], idx[ok], jac[ok], inter[ok] / np.maximum(q_sizes[ok], 1)
        out = [
            CrossPair(query_index=a, query_key=qkeys[a], index_index=b, index_key=self.keys[b], jaccard=v,
                      containment=c)
            for a, b, v, c in zip(q.tolist(), idx.tolist(), jac.tolist(), containment.tolist(), strict=True)
        ]
        qrank = _rank_array(qkeys, q)
        irank = _rank_array(self.keys, idx)
        out.sort(key=lambda p: (qrank[p.query_index], irank[p.index_index]))
        return CrossResult(
            config_key=str(cfg), plan=self.plan, pairs=tuple(out), query_docs=len(texts),
            query_empty_docs=int((qcounts == 0).sum()), candidate_pairs=n_candidates, verified_pairs=len(out),
            false_candidates_rejected=n_candidates - len(out), oversized_buckets=oversized,
        )


def _rank_array(keys: list[Key], indices: np.ndarray) -> np.ndarray:
    """Array over all positions holding the key rank of each distinct listed position (-1 elsewhere)."""
    ranks = np.full(len(keys), -1, dtype=np.int64)
    uniq = sorted_unique(indices)
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


def compute_signatures(texts: Sequence[str], config: NearDupConfig) -> tuple[np.ndarray, np.ndarray]:
    """Signature matrix and shingle counts, shingling ``chunk_docs`` texts at a time (bounded memory).

    Public so callers can compute them in parallel over batches (rows are independent) and hand the stacked
    result to :class:`NearDupIndex`; the result is identical to computing them in one go.
    """
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
    texts: Sequence[str], keys: Sequence[Key] | None = None, config: NearDupConfig | None = None,
    signatures: tuple[np.ndarray, np.ndarray] | Sketch | None = None,
) -> NearDupResult:
    """Near-duplicate clusters of ``texts``; in each, the row with the smallest key is kept.

    ``keys`` (unique, mutually orderable; default ``(position,)``) define both the keep rule and the cluster ids,
    e.g. ``(split_priority, row)`` so that a test item is kept over its training copy.
    """
    return NearDupIndex(texts, keys, config, signatures).find_duplicates()
