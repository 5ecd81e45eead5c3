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
    """(sorted distinct values, id of each element among them: int32 below 2^31 elements); sort-based, see
    :func:`sorted_unique`.

    Millions of 64-bit hashes (the shingles under verification) are bucketed by their top bits, then sorted,
    deduplicated and numbered bucket by bucket: each bucket fits in cache, where one argsort of all and its gathers
    and scatters over the whole array miss it at every step. Buckets of top bits are ranges of values, in order, so
    the result is the same. The bucketing itself is done a slice of ~256k values at a time (a radix argsort in cache,
    then each (slice, bucket) run copied to its place): one global argsort of the top bits, its gather and the final
    scatter were the part that grew faster than n, x14 from 1.2M to 6.4M values (measured).
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
    shift = np.uint64(64 - bits)
    starts = range(0, x.size, _SLICE)
    counts = np.empty((len(starts), 1 << bits), dtype=np.int64)  # values of each slice in each bucket
    for k, s in enumerate(starts):
        counts[k] = np.bincount((x[s:s + _SLICE] >> shift).astype(np.intp), minlength=1 << bits)
    flat = counts.T.ravel()  # bucket-major: where each (bucket, slice) run starts in the bucketed array
    base = (np.cumsum(flat) - flat).reshape(1 << bits, len(starts)).T
    # few large arrays: past ~32 MB each one is fresh memory from the kernel (page faults, huge-page compaction),
    # which cost as much system time as the sorting itself at 6.7M values; slice positions fit in 32 bits
    xt = np.empty(x.size, dtype=x.dtype)
    moves: list[np.ndarray] = []
    for k, s in enumerate(starts):
        seg = x[s:s + _SLICE]
        by_top = np.argsort((seg >> shift).astype(np.uint16), kind="stable").astype(np.uint32)  # radix, in cache
        xt[_dest(base[k], counts[k])] = seg[by_top]
        moves.append(by_top)
    id_dtype = np.int32 if x.size < 1 << 31 else np.int64
    ids_t = xt.view(np.int64)  # ids in bucketed order, written over the values once a bucket is sorted
    parts: list[np.ndarray] = []
    ident = s = 0
    for e in np.cumsum(counts.sum(axis=0)).tolist():
        if e > s:
            order = np.argsort(xt[s:e], kind="stable")  # timsort: 2x quicksort's speed on templated shingles
            ss = xt[s:e][order]
            new = np.empty(ss.size, dtype=bool)
            new[0] = True
            np.not_equal(ss[1:], ss[:-1], out=new[1:])
            local = np.cumsum(new)
            local += ident - 1
            ids_t[s + order] = local
            parts.append(ss[new])
            ident = int(local[-1]) + 1
        s = e
    ids = np.empty(x.size, dtype=id_dtype)
    for k, (by_top, s) in enumerate(zip(moves, starts, strict=True)):
        ids[s + by_top.astype(np.intp)] = ids_t[_dest(base[k], counts[k])]
    return np.concatenate(parts), ids


def _dest(base: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Bucketed positions of a slice's values in bucket order: the run of bucket b starts at base[b]."""
    return np.repeat(base, counts) + ranks_within(counts)


#: values bucketed at once by :func:`dense_ids` (2 MB of uint64: in cache)
_SLICE = 1 << 18


def fmix64(h: np.ndarray) -> np.ndarray:
    """MurmurHash3 64-bit finaliser (bijective avalanche) on a uint64 array, in place; returns it."""
    with np.errstate(over="ignore"):
        h ^= h >> np.uint64(33)
        h *= np.uint64(0xFF51AFD7ED558CCD)
        h ^= h >> np.uint64(33)
        h *= np.uint64(0xC4CEB9FE1A85EC53)
        h ^= h >> np.uint64(33)
    return h
