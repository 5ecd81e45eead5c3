"""Small numpy helpers shared by the dedup modules."""

from __future__ import annotations

import numpy as np


def ranks_within(sizes: np.ndarray) -> np.ndarray:
    """[0..s0-1, 0..s1-1, ...] for run lengths ``sizes``: the position of each element inside its run."""
    sizes = np.asarray(sizes, dtype=np.int64)
    total = int(sizes.sum())
    starts = np.zeros(sizes.size, dtype=np.int64)
    np.cumsum(sizes[:-1], out=starts[1:])
    return np.arange(total, dtype=np.int64) - np.repeat(starts, sizes)


def sorted_unique(x: np.ndarray) -> np.ndarray:
    """Distinct values, sorted. numpy 2.x ``np.unique`` hashes instead of sorting when no extra output is asked for,
    which is ~20x slower on millions of random 64-bit values."""
    y = np.sort(np.asarray(x))
    if y.size < 2:
        return y
    return y[np.concatenate(([True], y[1:] != y[:-1]))]


def dense_ids(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sorted distinct values, id of each element among them); sort-based, see :func:`sorted_unique`.

    Millions of 64-bit hashes (the shingles under verification) are first bucketed by their top bits with a radix
    argsort, then sorted, deduplicated and numbered bucket by bucket: each bucket fits in cache, where one argsort
    of all and its gathers and scatters over the whole array miss it at every step (x7 the CPU for x3.3 the values
    on the templated bench). Buckets of top bits are ranges of values, in order, so the result is the same.
    """
    x = np.asarray(x)
    if x.dtype != np.uint64 or x.size < 1 << 17:
        order = np.argsort(x)  # ids do not depend on the order among equal values
        xs = x[order]
        new = np.concatenate(([True], xs[1:] != xs[:-1])) if xs.size else np.zeros(0, bool)
        ids = np.empty(x.size, dtype=np.int64)
        ids[order] = np.cumsum(new) - 1
        return xs[new], ids
    bits = min(16, (x.size >> 14).bit_length())  # ~16k-32k values a bucket
    top = (x >> np.uint64(64 - bits)).astype(np.uint16)
    by_top = np.argsort(top, kind="stable")  # radix sort on 16-bit keys
    xt = x[by_top]
    ids_t = np.empty(x.size, dtype=np.int64)  # ids in by_top order
    parts: list[np.ndarray] = []
    base = s = 0
    for e in np.cumsum(np.bincount(top, minlength=1 << bits)).tolist():
        if e > s:
            seg = xt[s:e]
            order = np.argsort(seg)
            ss = seg[order]
            new = np.empty(ss.size, dtype=bool)
            new[0] = True
            np.not_equal(ss[1:], ss[:-1], out=new[1:])
            local = np.cumsum(new)
            local += base - 1
            ids_t[s + order] = local
            parts.append(ss[new])
            base = int(local[-1]) + 1
        s = e
    ids = np.empty(x.size, dtype=np.int64)
    ids[by_top] = ids_t
    return np.concatenate(parts), ids


def fmix64(h: np.ndarray) -> np.ndarray:
    """MurmurHash3 64-bit finaliser (bijective avalanche) on a uint64 array, in place; returns it."""
    with np.errstate(over="ignore"):
        h ^= h >> np.uint64(33)
        h *= np.uint64(0xFF51AFD7ED558CCD)
        h ^= h >> np.uint64(33)
        h *= np.uint64(0xC4CEB9FE1A85EC53)
        h ^= h >> np.uint64(33)
    return h
