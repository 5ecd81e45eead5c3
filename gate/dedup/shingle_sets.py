"""Exact Jaccard of shingle sets: every reported near-duplicate pair is verified here, never estimated.

`ShingleSets` holds the shingles of a batch as sorted per-document keys, joins them by prefix filtering (pairs that
can reach a threshold at all) and counts exact overlaps, a slice of whole documents at a time."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from gate.dedup._arrays import dense_ids, ranks_within, sorted_unique
from gate.dedup.shingles import ShingleBatch

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
