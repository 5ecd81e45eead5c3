"""The numpy helpers shared by the dedup modules."""

from __future__ import annotations

import numpy as np
import pytest

from gate.dedup._arrays import dense_ids


@pytest.mark.parametrize("size", [1000, 1 << 17, 600_000])
def test_dense_ids_equal_numpy_unique_at_every_size(size: int) -> None:
    """Large uint64 arrays take the bucketed path (top bits, then per-bucket argsorts); small ones one argsort.
    Both must give numpy's sorted distinct values and inverse, with repeats, values in one bucket only, and the
    extremes of the range (bucket edges)."""
    rng = np.random.default_rng(size)
    pool = rng.integers(0, 1 << 63, size // 3, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    x = pool[rng.integers(0, pool.size, size)]
    x[:50] = np.uint64(2**64 - 1)
    x[50:100] = np.uint64(0)
    x[100:size // 10] = np.uint64(7) + rng.integers(0, 1000, size // 10 - 100, dtype=np.uint64)  # one crowded bucket
    uniq, ids = dense_ids(x)
    ref_u, ref_ids = np.unique(x, return_inverse=True)
    assert uniq.dtype == np.uint64
    assert np.array_equal(uniq, ref_u) and np.array_equal(ids, ref_ids.ravel())


def test_dense_ids_bucketed_in_many_slices_equal_numpy_unique(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 19 s2 (linear growth): the top-bits bucketing runs a slice of values at a time and copies each
    (slice, bucket) run to its place; with slices of 1,000 values (hundreds of runs, most buckets spread over many
    slices, some slices without a value of a bucket) the result is numpy's, ids as int32."""
    import gate.dedup._arrays as arrays

    monkeypatch.setattr(arrays, "_SLICE", 1000)
    rng = np.random.default_rng(11)
    pool = rng.integers(0, 1 << 63, 20_000, dtype=np.uint64) * np.uint64(2)
    x = pool[rng.integers(0, pool.size, 1 << 17)]
    x[::7] = np.uint64(2**64 - 1)
    uniq, ids = dense_ids(x)
    ref_u, ref_ids = np.unique(x, return_inverse=True)
    assert ids.dtype == np.int32
    assert np.array_equal(uniq, ref_u) and np.array_equal(ids, ref_ids.ravel())
