"""Banding parameters and candidate generation."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from gate.dedup.lsh import (
    band_keys,
    candidate_pairs,
    choose_bands,
    cross_candidate_pairs,
    detection_curve,
    detection_probability,
    plan_bands,
)


@pytest.mark.parametrize("threshold", [0.5, 0.7, 0.8, 0.85, 0.9, 0.95])
@pytest.mark.parametrize("num_perm", [128, 256])
def test_default_choice_keeps_recall_at_threshold(threshold: float, num_perm: int) -> None:
    b, r = choose_bands(threshold, num_perm)
    assert b * r <= num_perm
    curve = dict(detection_curve(b, r, points=(threshold, 0.99)))
    assert curve[threshold] >= 0.99
    plan = plan_bands(threshold, num_perm)
    assert (plan.bands, plan.rows) == (b, r)
    assert plan.recall_at_threshold >= 0.99
    assert f"b={b} r={r}" in plan.describe()


def test_weights_only_reproduce_datasketch_optimal_param() -> None:
    lsh = pytest.importorskip("datasketch.lsh")
    for threshold, (fp, fn) in itertools.product((0.5, 0.8, 0.9), ((0.5, 0.5), (0.1, 0.9))):
        expected = lsh._optimal_param(threshold, 128, fp, fn)
        assert choose_bands(threshold, 128, fn_weight=fn, fp_weight=fp, min_recall=None) == expected


def test_detection_curve_is_the_s_curve() -> None:
    curve = detection_curve(16, 8)
    probs = [p for _, p in curve]
    assert probs == sorted(probs)
    assert dict(curve)[0.8] == pytest.approx(1 - (1 - 0.8**8) ** 16)
    assert detection_probability(0.0, 16, 8) == 0.0
    assert detection_probability(1.0, 16, 8) == 1.0


def test_band_keys_equal_exactly_when_bands_equal() -> None:
    rng = np.random.default_rng(0)
    sig = rng.integers(0, 1 << 32, (6, 12), dtype=np.uint64).astype(np.uint32)
    sig[1] = sig[0]
    sig[2, :4] = sig[0, :4]  # shares band 0 only (r=4)
    keys = band_keys(sig, 3, 4)
    assert keys.shape == (6, 3) and keys.dtype == np.uint64
    assert (keys[0] == keys[1]).all()
    assert keys[0, 0] == keys[2, 0] and (keys[0, 1:] != keys[2, 1:]).all()
    assert len({int(k) for k in keys[3:, 0]}) == 3


def _brute_pairs(keys: np.ndarray) -> set[tuple[int, int]]:
    return {(i, j) for i, j in itertools.combinations(range(keys.shape[0]), 2) if (keys[i] == keys[j]).any()}


def test_candidate_pairs_match_brute_force() -> None:
    rng = np.random.default_rng(1)
    keys = rng.integers(0, 6, (80, 5)).astype(np.uint64)  # dense collisions
    pairs, oversized = candidate_pairs(keys, max_bucket=1000)
    assert oversized == 0
    got = [tuple(p) for p in pairs.tolist()]
    assert got == sorted(set(got))  # distinct, ordered
    assert set(got) == _brute_pairs(keys)
    assert all(i < j for i, j in got)


def test_oversized_bucket_becomes_a_chain() -> None:
    keys = np.zeros((50, 1), dtype=np.uint64)
    pairs, oversized = candidate_pairs(keys, max_bucket=10)
    assert oversized == 1
    assert [tuple(p) for p in pairs.tolist()] == [(i, i + 1) for i in range(49)]


def test_cross_candidate_pairs_match_brute_force() -> None:
    rng = np.random.default_rng(2)
    index = rng.integers(0, 8, (40, 4)).astype(np.uint64)
    query = rng.integers(0, 8, (25, 4)).astype(np.uint64)
    pairs, _ = cross_candidate_pairs(index, query, max_bucket=1000)
    expected = {(q, i) for q in range(25) for i in range(40) if (query[q] == index[i]).any()}
    assert {tuple(p) for p in pairs.tolist()} == expected
    assert len(pairs) == len(expected)


def test_empty_inputs() -> None:
    empty = np.zeros((0, 4), dtype=np.uint64)
    assert candidate_pairs(empty)[0].shape == (0, 2)
    assert cross_candidate_pairs(empty, np.ones((3, 4), np.uint64))[0].shape == (0, 2)
    assert cross_candidate_pairs(np.ones((3, 4), np.uint64), empty)[0].shape == (0, 2)
