"""What banding needs of a signature matrix (`Sketch`: band keys, a digest of the whole signature, the shingle
count), the b-bit signature prefilter with its bounded miss rate, and groups of identical full signatures.

Computed where the signatures are (a check's workers, an index build) and sent instead of the matrix."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from gate.dedup._arrays import sorted_unique
from gate.dedup.lsh import LshPlan, band_keys


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
