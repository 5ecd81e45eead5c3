"""LSH banding: choosing bands x rows, and candidate pairs from equal band keys.

A pair with Jaccard s becomes a candidate with probability P(s) = 1 - (1 - s^r)^b. "Threshold 0.8" means different
things per tool (datasketch's default 9x13 misses ~60 % of pairs at exactly J = 0.8), so we choose (b, r) to keep
recall high at the threshold, print the curve, and verify every candidate exactly downstream, which makes false
candidates cost only a little time while false negatives would be silent leaks.

Candidate generation is sort-based and vectorised: per band, argsort the bucket keys, find runs of equal keys, and
emit the pairs of each run with ``np.repeat`` arithmetic; no Python loop over documents.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from gate.dedup._arrays import fmix64, ranks_within, sorted_unique

__all__ = [
    "DEFAULT_CURVE_POINTS",
    "LshPlan",
    "band_keys",
    "candidate_pairs",
    "choose_bands",
    "cross_candidate_pairs",
    "detection_curve",
    "detection_probability",
    "implied_threshold",
    "plan_bands",
    "split_candidate_pairs",
]

DEFAULT_CURVE_POINTS: tuple[float, ...] = (0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)


def detection_probability(s: float | np.ndarray, b: int, r: int) -> float | np.ndarray:
    """P(candidate | Jaccard s) = 1 - (1 - s^r)^b."""
    return 1.0 - (1.0 - np.power(s, r)) ** b


def implied_threshold(b: int, r: int) -> float:
    """The s where the S-curve is steepest, ~(1/b)^(1/r); what a tool's (b, r) silently means."""
    return float((1.0 / b) ** (1.0 / r))


def detection_curve(b: int, r: int, points: Sequence[float] = DEFAULT_CURVE_POINTS) -> list[tuple[float, float]]:
    """[(s, P(candidate | s))] for the report, so readers see what the threshold really catches."""
    return [(float(s), float(detection_probability(float(s), b, r))) for s in points]


@functools.cache
def choose_bands(
    threshold: float,
    num_perm: int,
    fn_weight: float = 0.9,
    fp_weight: float = 0.1,
    *,
    min_recall: float | None = 0.99,
) -> tuple[int, int]:
    """Bands x rows (b * r <= num_perm) minimising fp_weight * FP area + fn_weight * FN area.

    The idea of datasketch's ``_optimal_param`` (FP area = integral of P over [0, threshold], FN area = integral of
    1 - P over [threshold, 1]), evaluated for all (b, r) at once with Gauss-Legendre quadrature (exact here: P is a
    polynomial of degree b * r). Weights alone cannot promise recall at the threshold (even 0.01/0.99 gives only
    P(0.8) = 0.986 at 128 perms), so when ``min_recall`` is set, only pairs with P(threshold) >= min_recall are
    eligible; if none is, the most sensitive pair is returned and the curve shows the shortfall.
    """
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold must be in (0, 1], got {threshold}")
    if num_perm < 1:
        raise ValueError("num_perm must be >= 1")
    combos = np.array([(b, r) for b in range(1, num_perm + 1) for r in range(1, num_perm // b + 1)], dtype=np.int64)
    bs, rs = combos[:, 0:1].astype(np.float64), combos[:, 1:2].astype(np.float64)
    nodes, weights = np.polynomial.legendre.leggauss(min(num_perm // 2 + 1, 256))

    def area(lo: float, hi: float, false_negative: bool) -> np.ndarray:
        s = (hi - lo) / 2.0 * nodes + (hi + lo) / 2.0
        p = 1.0 - (1.0 - s[None, :] ** rs) ** bs
        f = 1.0 - p if false_negative else p
        return (f * weights[None, :]).sum(axis=1) * (hi - lo) / 2.0

    error = fp_weight * area(0.0, threshold, False) + fn_weight * area(threshold, 1.0, True)
    recall = detection_probability(threshold, combos[:, 0], combos[:, 1])
    if min_recall is not None:
        eligible = recall >= min_recall
        if eligible.any():
            error = np.where(eligible, error, np.inf)
        else:
            best = int(np.argmax(recall))
            return int(combos[best, 0]), int(combos[best, 1])
    best = int(np.argmin(error))  # first minimum: smallest b, then r, like datasketch's strict '<' scan
    return int(combos[best, 0]), int(combos[best, 1])


@dataclass(frozen=True)
class LshPlan:
    """The banding actually used, with the evidence a report should print."""

    bands: int
    rows: int
    num_perm: int
    threshold: float
    implied_threshold: float
    recall_at_threshold: float
    curve: tuple[tuple[float, float], ...]

    def describe(self) -> str:
        """One line for reports: "b=21 r=6 (126/128 perms) ... P(0.5)=0.31 ..."."""
        curve = " ".join(f"P({s:g})={p:.3f}" for s, p in self.curve)
        return (
            f"LSH b={self.bands} r={self.rows} ({self.bands * self.rows}/{self.num_perm} perms), "
            f"threshold {self.threshold:g} (S-curve midpoint ~{self.implied_threshold:.3f}), "
            f"P(candidate | J={self.threshold:g}) = {self.recall_at_threshold:.4f}; {curve}"
        )


def plan_bands(
    threshold: float,
    num_perm: int,
    fn_weight: float = 0.9,
    fp_weight: float = 0.1,
    *,
    min_recall: float | None = 0.99,
    bands: int | None = None,
    rows: int | None = None,
    points: Sequence[float] = DEFAULT_CURVE_POINTS,
) -> LshPlan:
    """Choose (or accept the given) bands x rows and package it with its detection curve."""
    if bands is None or rows is None:
        bands, rows = choose_bands(threshold, num_perm, fn_weight, fp_weight, min_recall=min_recall)
    points = tuple(sorted(set(points) | {threshold}))
    return LshPlan(
        bands=bands,
        rows=rows,
        num_perm=num_perm,
        threshold=threshold,
        implied_threshold=implied_threshold(bands, rows),
        recall_at_threshold=float(detection_probability(threshold, bands, rows)),
        curve=tuple(detection_curve(bands, rows, points)),
    )


# ---------------------------------------------------------------------------------------------------------------
# Banding


def _band_multipliers(rows: int) -> np.ndarray:
    rng = np.random.RandomState(0x5EED)
    return (rng.randint(0, 1 << 63, rows, dtype=np.uint64) << np.uint64(1)) | np.uint64(1)


def band_keys(signatures: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """(docs x bands) uint64 bucket keys: band j hashes signature columns [j*r, (j+1)*r).

    Equal bands give equal keys; unequal bands collide with probability ~2^-64 per pair, and any such collision is
    only a false candidate that exact verification rejects.
    """
    sig = np.asarray(signatures)
    if sig.ndim != 2 or bands * rows > sig.shape[1]:
        raise ValueError(f"need a 2-D signature matrix with >= {bands * rows} columns, got shape {sig.shape}")
    mult = _band_multipliers(rows)
    keys = np.zeros((sig.shape[0], bands), dtype=np.uint64)
    used = bands * rows
    with np.errstate(over="ignore"):
        for k in range(rows):
            col = sig[:, k:used:rows].astype(np.uint64)  # k-th value of every band
            col ^= col >> np.uint64(29)
            col *= mult[k]
            keys += col
        return fmix64(keys)


def _runs(sorted_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(start, length) of each run of equal values in a sorted array."""
    if sorted_keys.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    change = np.flatnonzero(sorted_keys[1:] != sorted_keys[:-1]) + 1
    starts = np.concatenate(([0], change))
    lengths = np.diff(np.concatenate((starts, [sorted_keys.size])))
    return starts, lengths


def _pairs_in_runs(members: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All (left, right) pairs within each run of ``members`` (runs given by start/length), vectorised."""
    pos = np.repeat(starts, lengths) + ranks_within(lengths)  # position of every run element
    end = np.repeat(starts + lengths, lengths)
    counts = end - pos - 1  # partners to the right within its run
    left = np.repeat(members[pos], counts)
    right_pos = np.repeat(pos + 1, counts) + ranks_within(counts)
    return left, members[right_pos]


def candidate_pairs(keys: np.ndarray, max_bucket: int = 512) -> tuple[np.ndarray, int]:
    """Distinct candidate pairs (i < j, rows of an (m x 2) int64 array, sorted) of documents sharing a band key.

    ``keys`` is (docs x bands), rows indexing documents. Buckets larger than ``max_bucket`` contribute only the chain
    of consecutive members (keeps them connected without k^2 pairs); their count is returned so reports can say so.
    """
    pairs, _, _, oversized = split_candidate_pairs(keys, None, max_bucket)
    return pairs, oversized


def split_candidate_pairs(
    keys: np.ndarray, split_bucket: int | None, max_bucket: int = 512
) -> tuple[np.ndarray, np.ndarray, int, int]:
    """:func:`candidate_pairs`, except that a bucket with more than ``split_bucket`` members emits no pairs: its
    members are returned instead, for the caller to join exactly (see ``ShingleSets.prefix_join``).

    On templated data the buckets that grow with n are those of one template's fixed words (rows at J ~0.5 share a
    band with P ~0.67 under a plan for 0.7), so all-pairs emission costs ~n^2 / templates; handing their members to
    an exact join keeps every pair that can reach the threshold and emits a number that grows with the true pairs.
    Returns (pairs of the small buckets, sorted distinct members of split buckets, split buckets, oversized buckets);
    buckets over ``max_bucket`` stay chains, as in :func:`candidate_pairs`.
    """
    keys = np.asarray(keys)
    shift = max(int(keys.shape[0]).bit_length(), 1)  # pair code lo << shift | hi: same order as (lo, hi), no division
    codes: list[np.ndarray] = []
    split_members: list[np.ndarray] = []
    oversized = split = 0
    columns = np.ascontiguousarray(keys.T)  # one band's keys contiguous: a strided column misses the cache per key
    for j in range(keys.shape[1]):
        order = np.argsort(columns[j], kind="stable")
        starts, lengths = _runs(columns[j][order])
        multi = lengths >= 2
        big = lengths > max_bucket
        oversized += int(big.sum())
        small = multi & ~big
        if split_bucket is not None:
            cut = small & (lengths > split_bucket)
            split += int(cut.sum())
            small &= ~cut
            split_members.append(order[np.repeat(starts[cut], lengths[cut]) + ranks_within(lengths[cut])])
        left, right = _pairs_in_runs(order, starts[small], lengths[small])
        if big.any():
            # chain: members are in ascending document order within a run (stable sort), pair each with the next
            bpos = np.repeat(starts[big], lengths[big]) + ranks_within(lengths[big])
            last = np.repeat(starts[big] + lengths[big] - 1, lengths[big])
            bpos = bpos[bpos < last]
            left = np.concatenate((left, order[bpos]))
            right = np.concatenate((right, order[bpos + 1]))
        lo, hi = np.minimum(left, right), np.maximum(left, right)
        codes.append((lo.astype(np.int64) << shift) | hi)
    members = sorted_unique(np.concatenate(split_members)) if split_members else np.zeros(0, np.int64)
    if not codes:
        return np.zeros((0, 2), dtype=np.int64), members, split, oversized
    code = sorted_unique(np.concatenate(codes))
    pairs = np.empty((code.size, 2), dtype=np.int64)
    np.right_shift(code, shift, out=pairs[:, 0])
    np.bitwise_and(code, (1 << shift) - 1, out=pairs[:, 1])
    return pairs, members.astype(np.int64), split, oversized


def cross_candidate_pairs(
    index_keys: np.ndarray, query_keys: np.ndarray, max_bucket: int = 512
) -> tuple[np.ndarray, int]:
    """Distinct (query_row, index_row) pairs sharing a band key between two key matrices, vectorised.

    Only cross pairs are produced (never query-query or index-index). A bucket whose cross product exceeds
    ``max_bucket**2`` keeps, for each query member, only the first ``max_bucket`` index members; counted as oversized.
    """
    index_keys, query_keys = np.asarray(index_keys), np.asarray(query_keys)
    n_index, n_query = index_keys.shape[0], query_keys.shape[0]
    if index_keys.shape[1] != query_keys.shape[1]:
        raise ValueError("index and query keys must have the same number of bands")
    codes: list[np.ndarray] = []
    oversized = 0
    side = np.concatenate((np.zeros(n_index, np.int8), np.ones(n_query, np.int8)))
    ident = np.concatenate((np.arange(n_index), np.arange(n_query)))
    for j in range(index_keys.shape[1]):
        allk = np.concatenate((index_keys[:, j], query_keys[:, j]))
        order = np.lexsort((side, allk))  # by key, index rows first within a key
        starts, lengths = _runs(allk[order])
        n_left = np.add.reduceat((side[order] == 0).astype(np.int64), starts) if starts.size else starts
        n_right = lengths - n_left
        keep = (n_left > 0) & (n_right > 0)
        starts, n_left, n_right = starts[keep], n_left[keep], n_right[keep]
        big = n_left * n_right > max_bucket * max_bucket
        oversized += int(big.sum())
        n_left_used = np.where(big, np.minimum(n_left, max_bucket), n_left)
        # every query member of a run pairs with the run's (first n_left_used) index members
        qpos = np.repeat(starts + n_left, n_right) + ranks_within(n_right)
        per_q = np.repeat(n_left_used, n_right)
        ipos = np.repeat(np.repeat(starts, n_right), per_q) + ranks_within(per_q)
        q = ident[order[np.repeat(qpos, per_q)]]
        i = ident[order[ipos]]
        codes.append(q.astype(np.int64) * n_index + i)
    if not codes:
        return np.zeros((0, 2), dtype=np.int64), oversized
    code = sorted_unique(np.concatenate(codes))
    if code.size == 0:
        return np.zeros((0, 2), dtype=np.int64), oversized
    return np.stack((code // n_index, code % n_index), axis=1), oversized
