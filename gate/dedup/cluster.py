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

import functools
import math
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from gate.dedup._arrays import dense_ids, ranks_within, sorted_unique
from gate.dedup.lsh import LshPlan, band_keys, cross_candidate_pairs, plan_bands, split_candidate_pairs
from gate.dedup.minhash import MinHashConfig, minhash_signatures
from gate.dedup.shingles import ShingleBatch, ShingleConfig, shingle_batch

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
    "union_edges",
    "verify_spanning",
    "exact_jaccard",
    "ShingleSets",
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


# ---------------------------------------------------------------------------------------------------------------
# Building blocks


def _flatten(parent: np.ndarray) -> None:
    """Pointer jumping until every node points at its root (in place)."""
    while True:
        grand = parent[parent]
        if np.array_equal(grand, parent):
            return
        parent[:] = grand


def union_edges(parent: np.ndarray, left: np.ndarray, right: np.ndarray) -> None:
    """Vectorised union-find: merge the components of each (left[k], right[k]) into ``parent`` (flat, in place).

    Min-label hooking with full pointer jumping: each round hooks every edge's larger root under the smaller, then
    flattens; it stops when every edge joins equal roots, so each component ends labelled by its smallest node.
    """
    left, right = np.asarray(left, np.int64), np.asarray(right, np.int64)
    while left.size:
        pl, pr = parent[left], parent[right]
        differ = pl != pr
        if not differ.any():
            return
        pl, pr = pl[differ], pr[differ]
        np.minimum.at(parent, np.maximum(pl, pr), np.minimum(pl, pr))
        _flatten(parent)


def connected_components(n: int, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Component label (smallest member position) of each of n nodes, given edges."""
    parent = np.arange(n, dtype=np.int64)
    union_edges(parent, left, right)
    return parent


def verify_spanning(
    n: int,
    left: np.ndarray,
    right: np.ndarray,
    jaccard: Callable[[np.ndarray, np.ndarray], np.ndarray],
    threshold: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, int]:
    """Connected components of the graph of candidate edges whose exact Jaccard >= threshold, verifying as few
    edges as possible.

    An edge whose ends are already connected cannot change the components, so it is skipped. Rounds are Borůvka-like:
    each current component verifies up to K of its untested edges to other components (K doubles per round, so a
    component with many false candidates needs only log rounds); passing edges are united. A dense cluster of k
    near-copies thus costs ~k verifications instead of k^2/2, and the result equals verifying every edge.

    Returns (labels, passed edge indices, their Jaccard, edges tested, edges rejected).
    """
    parent = np.arange(n, dtype=np.int64)
    left, right = np.asarray(left, np.int64), np.asarray(right, np.int64)
    remaining = np.arange(left.size, dtype=np.int64)
    passed: list[np.ndarray] = []
    passed_j: list[np.ndarray] = []
    tested = rejected = 0
    per_component = 1
    while remaining.size:
        lu, lv = parent[left[remaining]], parent[right[remaining]]
        open_ = lu != lv
        remaining, lu, lv = remaining[open_], lu[open_], lv[open_]
        if remaining.size == 0:
            break
        owner = np.minimum(lu, lv)
        order = np.argsort(owner, kind="stable")  # stable: within a component, edges keep their given order
        owner_sorted = owner[order]
        run_start = np.flatnonzero(np.concatenate(([True], owner_sorted[1:] != owner_sorted[:-1])))
        rank = ranks_within(np.diff(np.append(run_start, order.size)))
        pick = np.zeros(remaining.size, dtype=bool)
        pick[order[rank < per_component]] = True
        edges = remaining[pick]
        jac = jaccard(left[edges], right[edges])
        ok = jac >= threshold
        tested += int(edges.size)
        rejected += int((~ok).sum())
        passed.append(edges[ok])
        passed_j.append(jac[ok])
        union_edges(parent, left[edges[ok]], right[edges[ok]])
        remaining = remaining[~pick]
        per_component = min(per_component * 2, 1 << 12)
    edges = np.concatenate(passed) if passed else np.zeros(0, np.int64)
    jac = np.concatenate(passed_j) if passed_j else np.zeros(0, np.float64)
    return parent, edges, jac, tested, rejected


#: keys sorted at once when building or ranking shingle sets: 2 MB of int64, in cache (see `ShingleSets.__init__`)
_SLICE_KEYS = 1 << 18


def _doc_slices(offsets: np.ndarray, step: int) -> Iterator[tuple[int, int]]:
    """(first doc, past last doc) of consecutive slices of whole documents holding about ``step`` keys each."""
    m = offsets.size - 1
    cuts = np.searchsorted(offsets, np.arange(step, int(offsets[-1]), step), side="right") - 1
    bounds = sorted_unique(np.concatenate(([0], np.clip(cuts, 0, m), [m]))).tolist()
    if len(bounds) == 1:
        bounds.append(m)
    for d0, d1 in zip(bounds[:-1], bounds[1:], strict=True):
        if d1 > d0:
            yield d0, d1


def _runs_of(first: np.ndarray, last: np.ndarray) -> np.ndarray:
    """Positions first[k] .. last[k] - 1 of every k, concatenated."""
    lengths = last - first
    return np.repeat(first, lengths) + ranks_within(lengths)


#: bins of the sound shingle-count bound (`ShingleSets.may_reach`): 256 bytes a document under verification
BOUND_BINS = 256


class ShingleSets:
    """The distinct-shingle sets of every document of a batch, laid out for exact overlaps of many pairs at once.

    Shingles are mapped to dense ids and each document's set becomes a sorted run of keys ``doc * V + id``; an overlap
    looks every element of the smaller set of each pair up in the other with one ``searchsorted``, so there is no
    Python loop over pairs. Lookups run in slices of ~4M to bound memory.
    """

    def __init__(self, batch: ShingleBatch) -> None:
        m = len(batch)
        uniq, dense = dense_ids(batch.hashes)
        self._v = np.int64(max(uniq.size, 1))
        if m * int(self._v) >= 1 << 62:
            raise ValueError("too many documents x distinct shingles for one verification batch")
        # keys are doc-major, so sorting slices of whole documents and joining them is the global sort; a slice
        # stays in cache and its temporaries are small, where one sort of every key misses the cache and takes
        # fresh pages from the kernel once the arrays outgrow the allocator's reuse (~32 MB), which made the cost
        # per document rise with n (measured: 25k -> 100k templated rows)
        offsets = batch.offsets
        parts: list[np.ndarray] = []
        sizes = np.zeros(m, dtype=np.int64)
        for d0, d1 in _doc_slices(offsets, _SLICE_KEYS):
            part = np.repeat(np.arange(d0, d1, dtype=np.int64), np.diff(offsets[d0:d1 + 1])) * self._v
            part += dense[offsets[d0]:offsets[d1]]
            part.sort(kind="stable")  # runs of one document each: timsort merges them ~2.5x faster
            if part.size:
                part = part[np.concatenate(([True], part[1:] != part[:-1]))]
                sizes[d0:d1] = np.bincount(part // self._v - d0, minlength=d1 - d0)
            parts.append(part)
        self._keys = np.concatenate(parts) if parts else np.zeros(0, np.int64)
        self.sizes = sizes
        self._start = np.zeros(m + 1, dtype=np.int64)
        np.cumsum(self.sizes, out=self._start[1:])
        self._bins: np.ndarray | None = None

    def overlap(self, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(|A ∩ B|, |A|, |B|) for the document pairs (a[k], b[k]).

        Pairs are looked up ordered by (larger set, smaller set), so the queries of a slice are ascending runs over a
        narrow range of keys: ``searchsorted`` then walks the keys nearly in order (numpy reuses the previous bound
        for ascending queries) and stays in cache, ~40x fewer cache misses than pairs in arbitrary order.
        """
        a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
        sizes, keys, v, start = self.sizes, self._keys, self._v, self._start
        inter_sorted = np.zeros(a.size, dtype=np.int64)
        if a.size == 0 or keys.size == 0:
            return inter_sorted, sizes[a], sizes[b]
        swap = sizes[a] > sizes[b]
        small, big = np.where(swap, b, a), np.where(swap, a, b)
        order = np.argsort(big * np.int64(sizes.size) + small)
        small, big = small[order], big[order]
        lookups = sizes[small]
        step = 1 << 22
        total_lookups = np.cumsum(lookups)
        cuts = np.searchsorted(total_lookups, np.arange(1, int(total_lookups[-1]) // step + 2) * step, "right")
        lo = 0
        for hi in sorted_unique(np.append(cuts, a.size)).tolist():
            if hi <= lo:
                continue
            qn = lookups[lo:hi]
            run = np.zeros(qn.size, dtype=np.int64)  # where each pair's lookups start in this slice
            np.cumsum(qn[:-1], out=run[1:])
            pos = np.repeat(start[small[lo:hi]] - run, qn)
            pos += np.arange(pos.size, dtype=np.int64)  # the smaller set's key positions, pair after pair
            if pos.size:
                query = np.repeat((big[lo:hi] - small[lo:hi]) * v, qn)  # doc * V + id, moved to the bigger doc
                query += keys[pos]
                k0, k1 = int(start[big[lo]]), int(start[big[hi - 1] + 1])  # the bigger sets' keys, contiguous
                window = keys[k0:k1]
                hit = np.searchsorted(window, query)
                np.minimum(hit, window.size - 1, out=hit)
                found = np.concatenate(([0], np.cumsum(window[hit] == query)))
                inter_sorted[lo:hi] = found[run + qn] - found[run]
            lo = hi
        inter = np.empty(a.size, dtype=np.int64)
        inter[order] = inter_sorted
        return inter, sizes[a], sizes[b]

    def may_reach(self, a: np.ndarray, b: np.ndarray, threshold: float) -> np.ndarray:
        """Mask of the pairs whose Jaccard *can* reach ``threshold``: a sound filter (never drops a pair that does).

        Shingle ids are split into ``BOUND_BINS`` bins; in each bin A and B share at most min(|A_k|, |B_k|) shingles,
        so |A ∩ B| <= sum_k min(|A_k|, |B_k|) = U and J <= U / (|A| + |B| - U). Rows of one template share most
        shingles, but their differing shingles (slot fills) rarely meet in a bin: on templated data U is within a few
        shingles of |A ∩ B|, so ~97 % of the candidates that the signatures could not reject are rejected here at
        the cost of a byte vector per pair, exactly (no recall is spent), before any lookup.
        """
        a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
        bins = self._bin_counts()
        total = np.uint16 if bins.dtype == np.uint8 else np.int64  # 256 bins x 255 fits 16 bits: 3x faster sums
        keep = np.ones(a.size, dtype=bool)
        step = 1 << 15
        for s in range(0, a.size, step):
            aa, bb = a[s:s + step], b[s:s + step]
            common = bins[aa]
            np.minimum(common, bins[bb], out=common)
            bound = common.sum(axis=1, dtype=total).astype(np.int64)
            keep[s:s + step] = _ratio(bound, self.sizes[aa] + self.sizes[bb] - bound) >= threshold
        return keep

    def prefix_join(self, docs: np.ndarray, threshold: float) -> tuple[np.ndarray, np.ndarray]:
        """Pairs (a < b) of ``docs`` that pass the prefix filter of AllPairs/PPJoin: a superset of every pair of them
        with Jaccard >= ``threshold`` (exact: no pair that reaches it is lost), in time that grows with the pairs
        sharing rare shingles instead of with all pairs.

        Why it holds. J(A, B) >= t means |A ∩ B| >= o = ceil(t / (1 + t) (|A| + |B|)), and then |B| >= |A| >= t |B|.
        Order all shingles by one global order; two prefixes of lengths >= |A| - o + 1 and >= |B| - o + 1 share a
        shingle (if they did not, and A's prefix ends no later than B's, a shared shingle inside A's prefix would
        rank inside B's too, so all shared shingles lie outside A's prefix: at most o - 1 of them). For |A| <= |B|,
        o >= ceil(2t / (1 + t) |A|) and o >= ceil(t |B|), so A's short prefix (|A| - ceil(2t / (1 + t) |A|) + 1
        shingles, ~18 % at t = 0.7) and B's long prefix (|B| - ceil(t |B|) + 1, ~30 %) suffice: each pair is found
        from its smaller set's short prefix. The order is rarest first (counted over ``docs``), so on templated data
        a short prefix holds a row's slot fills, shared by few rows, and not its template's fixed words. Pairs whose
        sizes differ by more than the threshold allows (|A| < t |B|) cannot reach it and are not returned.
        """
        docs = sorted_unique(np.asarray(docs, dtype=np.int64))
        if docs.size < 2:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        v = int(self._v)
        sizes = self.sizes[docs]
        first, last = self._start[docs], self._start[docs + 1]
        slices = list(_doc_slices(np.concatenate(([0], np.cumsum(sizes))), _SLICE_KEYS))
        id_dtype = np.int32 if v < 1 << 31 else np.int64
        slice_ids = [(self._keys[_runs_of(first[d0:d1], last[d0:d1])] % v).astype(id_dtype) for d0, d1 in slices]
        counts = np.bincount(np.concatenate(slice_ids), minlength=v)
        # rarest first; ties by id (any fixed total order is sound); 32 bits: half the cache misses of the lookups
        rank = np.empty(v, dtype=id_dtype)
        # a stable sort of counts below 2^16 as uint16 is numpy's radix sort: the same order, ~5x faster
        rank[np.argsort(counts.astype(np.uint16) if counts.max() < 1 << 16 else counts, kind="stable")] = np.arange(
            v, dtype=id_dtype)
        # ranks below `lone` are shingles of at most one of the docs: they fill prefixes but can pair no one
        lone = int((counts <= 1).sum())
        # the required overlaps are computed 1e-9 low, so a float error can only lengthen a prefix (still sound)
        long_len = np.clip(sizes - np.ceil(threshold * sizes - 1e-9).astype(np.int64) + 1, 1, sizes)
        short_len = np.clip(sizes - np.ceil(2 * threshold / (1 + threshold) * sizes - 1e-9).astype(np.int64) + 1,
                            1, long_len)
        toks: list[np.ndarray] = []
        whos: list[np.ndarray] = []
        shorts: list[np.ndarray] = []
        for (d0, d1), ids in zip(slices, slice_ids, strict=True):
            # each doc's shingles by global rank, a slice of docs at a time (see __init__): only the prefixes stay
            part_sizes = sizes[d0:d1]
            order = np.repeat(np.arange(d0, d1, dtype=np.int64), part_sizes) * v
            order += rank[ids]
            order.sort(kind="stable")
            within = ranks_within(part_sizes)
            take = within < np.repeat(long_len[d0:d1], part_sizes)
            short = within < np.repeat(short_len[d0:d1], part_sizes)
            entry = order[take]
            tok = entry % v
            useful = tok >= lone
            toks.append(tok[useful])
            whos.append(entry[useful] // v)
            shorts.append(short[take][useful])
        tok, who, short = np.concatenate(toks), np.concatenate(whos), np.concatenate(shorts)
        seq = np.empty(docs.size, dtype=np.int64)  # docs by (size, position): the "smaller set" of a pair comes first
        seq[np.lexsort((np.arange(docs.size), sizes))] = np.arange(docs.size)
        by_tok = np.argsort(tok * docs.size + seq[who])
        tok, who, short = tok[by_tok], who[by_tok], short[by_tok]
        end = np.flatnonzero(np.append(tok[1:] != tok[:-1], True)) + 1  # one past each group's last entry
        group_end = np.repeat(end, np.diff(np.concatenate(([0], end))))
        src = np.flatnonzero(short)
        counts = group_end[src] - src - 1  # a short-prefix entry pairs with every later (larger) entry of its group
        a = np.repeat(who[src], counts)
        b = who[np.repeat(src + 1, counts) + ranks_within(counts)]
        lo, hi = np.minimum(a, b), np.maximum(a, b)
        code = sorted_unique(lo * docs.size + hi)
        a, b = code // docs.size, code % docs.size
        sa, sb = sizes[a], sizes[b]
        fits = np.minimum(sa, sb) >= threshold * np.maximum(sa, sb) - 1e-9
        return docs[a[fits]], docs[b[fits]]

    def _bin_counts(self) -> np.ndarray:
        """(docs x BOUND_BINS) distinct shingles per document and bin (bin = dense id mod BOUND_BINS), built once in
        slices of documents (the int64 counts of a slice only); uint8 unless a bin holds more than 255 shingles of
        one document, then widened (never saturated: a saturated count would make the bound unsound)."""
        if self._bins is None:
            m, keys, v, start = self.sizes.size, self._keys, self._v, self._start
            bins = np.zeros((m, BOUND_BINS), dtype=np.uint8)
            step = 1 << 11  # 4 MB of int64 counts a slice: 16k documents (32 MB) made it 12x slower at 78k documents
            for d0 in range(0, m, step):
                d1 = min(d0 + step, m)
                part = keys[start[d0]:start[d1]]
                flat = np.bincount((part // v - d0) * BOUND_BINS + part % v % BOUND_BINS,
                                   minlength=(d1 - d0) * BOUND_BINS)
                top = int(flat.max()) if flat.size else 0
                if top > np.iinfo(bins.dtype).max:
                    bins = bins.astype(np.uint16 if top <= 0xFFFF else np.int64)
                bins[d0:d1] = flat.reshape(d1 - d0, BOUND_BINS)
            self._bins = bins
        return self._bins

    def jaccard(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Exact Jaccard for the pairs (a[k], b[k]); two empty sets give 0 (never a duplicate)."""
        inter, size_a, size_b = self.overlap(a, b)
        return _ratio(inter, size_a + size_b - inter)


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    out = np.zeros(num.size, dtype=np.float64)
    np.divide(num, den, out=out, where=den > 0)
    return out


def exact_jaccard(batch: ShingleBatch, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Exact Jaccard of the shingle sets of documents a[k] and b[k] of ``batch`` (see :class:`ShingleSets`)."""
    return ShingleSets(batch).jaccard(a, b)


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


@dataclass(frozen=True)
class Sketch:
    """What banding needs of a signature matrix: each document's band keys, a 128-bit digest of its whole
    signature and its shingle count. Computed where the signatures are (a check's workers), it is what they send
    back: 8 to 16 times smaller than the signatures, so less to pickle, ship and hold for millions of rows."""

    bands: np.ndarray  # docs x bands, uint64
    digest: np.ndarray  # docs x 2, uint64
    counts: np.ndarray  # shingles per document (0: empty, never a candidate)
    # docs x num_perm uint8: the low byte of every MinHash value (b-bit MinHash), so a candidate pair far below the
    # threshold is rejected before exact verification (see `signature_floor`); None: every candidate is verified
    low: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.counts.size)

    @staticmethod
    def concat(parts: Sequence[Sketch], bands: int) -> Sketch:
        if not parts:
            return Sketch(np.zeros((0, bands), np.uint64), np.zeros((0, 2), np.uint64), np.zeros(0, np.int64))
        low = np.concatenate([p.low for p in parts]) if all(p.low is not None for p in parts) else None
        return Sketch(np.concatenate([p.bands for p in parts]), np.concatenate([p.digest for p in parts]),
                      np.concatenate([p.counts for p in parts]), low)


def sketch_signatures(sig: np.ndarray, counts: np.ndarray, plan: LshPlan) -> Sketch:
    """The sketch of a signature matrix. The digest is two independent 64-bit hashes of all columns (forward and
    reversed), so identical-signature grouping can only merge different signatures with probability ~2^-128."""
    n, docs = sig.shape[1], sig.shape[0]
    bands = np.empty((docs, plan.bands), dtype=np.uint64)
    digest = np.empty((docs, 2), dtype=np.uint64)
    low = np.empty((docs, n), dtype=np.uint8)
    # a block of rows at a time (1 MB of signatures, in cache): the keys read the matrix column by column, ~290
    # strided passes over it, which from 25k to 100k rows (13 -> 51 MB, out of cache) cost x10 the CPU for x4 rows
    step = max(1, (1 << 20) // max(sig.itemsize * n, 1))
    for s in range(0, docs, step):
        part = sig[s:s + step]
        digest[s:s + step, 0] = band_keys(part, 1, n)[:, 0]
        digest[s:s + step, 1] = band_keys(part[:, ::-1], 1, n)[:, 0]
        bands[s:s + step] = band_keys(part, plan.bands, plan.rows)
        low[s:s + step] = part & 0xFF
    return Sketch(bands, digest, np.asarray(counts), low)


#: least chance, for a pair at exactly the threshold, that the b-bit prefilter may reject it (see `prefilter_miss`)
PREFILTER_MISS = 1e-6


def prefilter_miss(plan: LshPlan, min_recall: float | None) -> float:
    """The prefilter's miss budget at the threshold: the slack the banding has above ``min_recall``.

    Detection at the threshold is then P(candidate) x (1 - miss) >= min_recall, the promise the plan was chosen
    for (e.g. 17x4 at 0.7 detects 0.9906, so the prefilter may miss 6e-4 of the pairs at exactly 0.7; pairs above
    the threshold far fewer). Without slack it falls back to ``PREFILTER_MISS``.
    """
    if min_recall is None or plan.recall_at_threshold <= min_recall:
        return PREFILTER_MISS
    return max(PREFILTER_MISS, 1.0 - min_recall / plan.recall_at_threshold)


@functools.cache
def signature_floor(threshold: float, num_perm: int, miss: float = PREFILTER_MISS) -> int:
    """Fewest equal low bytes (of ``num_perm``) a pair must share to be verified exactly.

    Two documents with Jaccard J have equal MinHash values with probability J, and unequal values share their low
    byte with probability ~1/256, so each byte matches with p = J + (1 - J) / 256 independently per permutation. The
    floor is the largest m with P(Binomial(num_perm, p_threshold) < m) <= ``miss``: a pair at or above the threshold
    is rejected with probability <= ``miss``, while on templated data (rows of one template at J ~0.3-0.5 sharing
    LSH buckets) almost every false candidate falls below it and costs one byte comparison instead of re-shingling
    and an exact overlap. Non-uniform low bytes only add matches, so the bound stays conservative.
    """
    p = threshold + (1.0 - threshold) / 256.0
    if p >= 1.0:
        return num_perm
    log_p, log_q = math.log(p), math.log1p(-p)
    cdf, floor = 0.0, 0
    for m in range(num_perm + 1):
        cdf += math.exp(math.lgamma(num_perm + 1) - math.lgamma(m + 1) - math.lgamma(num_perm - m + 1)
                        + m * log_p + (num_perm - m) * log_q)
        if cdf > miss:
            break
        floor = m + 1
    return floor


_HIGH7 = np.uint64(0x7F7F7F7F7F7F7F7F)


def _prefilter(low: np.ndarray, left: np.ndarray, right: np.ndarray, floor: int) -> np.ndarray:
    """Mask of the pairs whose low-byte signatures share >= ``floor`` values (chunked: bounded memory).

    Eight bytes are compared at once: in x = a ^ b a byte is zero iff the bytes are equal, and
    ~(((x & 0x7F..) + 0x7F..) | x | 0x7F..) has the high bit of exactly the zero bytes set (no carry crosses a
    byte), so a popcount per word counts the equal bytes."""
    keep = np.ones(left.size, dtype=bool)
    m = low.shape[1]
    if m % 8:
        low = np.pad(low, ((0, 0), (0, -m % 8)))  # equal zero bytes on both sides, subtracted below
    words = np.ascontiguousarray(low).view(np.uint64)
    pad = words.shape[1] * 8 - m
    step = 1 << 15
    for s in range(0, left.size, step):
        x = words[left[s:s + step]]
        x ^= words[right[s:s + step]]
        y = x & _HIGH7
        y += _HIGH7
        y |= x
        y |= _HIGH7
        np.invert(y, out=y)
        keep[s:s + step] = np.bitwise_count(y).sum(axis=1, dtype=np.int64) - pad >= floor
    return keep


def _full_signature_groups(digest: np.ndarray, docs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For documents with identical signatures: (representative of each doc, sorted list of representatives).

    Exact (and template-heavy) duplicates would otherwise fill single LSH buckets with k^2 pairs; their identical
    signatures give identical band keys anyway, so banding the representative loses nothing.
    """
    rep = docs.copy()
    if docs.size < 2:
        return rep, docs
    h = digest[docs, 0]
    order = np.argsort(h, kind="stable")
    sh = h[order]
    same_as_prev = np.concatenate(([False], sh[1:] == sh[:-1]))
    run_start = np.maximum.accumulate(np.where(same_as_prev, 0, np.arange(docs.size)))
    cand_rep = order[run_start]  # first doc (lowest position) of its hash run
    equal = digest[docs[order], 1] == digest[docs[cand_rep], 1]  # the second hash must agree too
    rep[order[equal]] = docs[cand_rep[equal]]
    reps = sorted_unique(rep)
    return rep, reps


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
