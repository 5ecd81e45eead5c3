"""MinHash signatures must equal datasketch 2.x bit for bit: datasketch is the oracle users trust."""

from __future__ import annotations

import numpy as np
import pytest

datasketch = pytest.importorskip("datasketch")

from gate.dedup.minhash import MinHashConfig, estimate_jaccard, minhash_signatures, permutations  # noqa: E402
from gate.dedup.shingles import shingle_batch  # noqa: E402


def _random_docs(rng: np.random.Generator, n_docs: int, bits: int) -> tuple[np.ndarray, np.ndarray]:
    sizes = rng.integers(0, 60, n_docs)
    sizes[2] = 0
    sizes[5] = 3000  # spans several chunks
    offsets = np.zeros(n_docs + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    values = rng.integers(0, 1 << 62, offsets[-1], dtype=np.uint64) * np.uint64(4) + rng.integers(0, 4, offsets[-1],
                                                                                                   dtype=np.uint64)
    if bits == 32:
        values &= np.uint64(0xFFFFFFFF)
    return values, offsets


def _oracle(values: np.ndarray, num_perm: int, seed: int, scheme: str) -> np.ndarray:
    m = datasketch.MinHash(num_perm=num_perm, seed=seed, hashfunc=lambda v: v, scheme=scheme)
    m.update_batch(values.tolist())
    return m.hashvalues


@pytest.mark.parametrize(("scheme", "bits", "num_perm", "seed"),
                         [("affine32", 32, 128, 1), ("affine32", 32, 64, 12345), ("affine64", 64, 96, 7)])
def test_signatures_equal_datasketch_bit_for_bit(scheme: str, bits: int, num_perm: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    values, offsets = _random_docs(rng, 60, bits)
    config = MinHashConfig(num_perm=num_perm, seed=seed, scheme=scheme, chunk_tokens=500)  # type: ignore[arg-type]
    sig = minhash_signatures(values, offsets, config)
    assert sig.dtype == (np.uint32 if scheme == "affine32" else np.uint64)
    for i in range(len(offsets) - 1):
        expected = _oracle(values[offsets[i] : offsets[i + 1]], num_perm, seed, scheme)
        assert expected.dtype == sig.dtype
        assert np.array_equal(sig[i], expected), i


def test_single_update_path_matches_too() -> None:
    """``update`` one token at a time (the path the datasketch docs show) gives the same state."""
    values = np.array([0, 1, 2**32 - 1, 123456789], dtype=np.uint64)
    m = datasketch.MinHash(num_perm=32, seed=3, hashfunc=lambda v: v)
    for v in values.tolist():
        m.update(v)
    sig = minhash_signatures(values, np.array([0, 4]), MinHashConfig(num_perm=32, seed=3))
    assert np.array_equal(sig[0], m.hashvalues)


def test_uint64_shingles_use_low_32_bits_under_affine32() -> None:
    rng = np.random.default_rng(3)
    values = rng.integers(0, 1 << 63, 200, dtype=np.uint64) | np.uint64(1 << 63)
    sig = minhash_signatures(values, np.array([0, 200]), MinHashConfig())
    assert np.array_equal(sig[0], _oracle(values & np.uint64(0xFFFFFFFF), 128, 1, "affine32"))


def test_permutations_and_empty_doc_match_datasketch() -> None:
    a, b = permutations(128, 1, "affine32")
    ref = datasketch.MinHash(num_perm=128, seed=1)
    assert np.array_equal(a, ref.permutations[0]) and np.array_equal(b, ref.permutations[1])
    sig = minhash_signatures(np.zeros(0, np.uint64), np.array([0, 0]))
    assert np.array_equal(sig[0], ref.hashvalues)  # empty = datasketch's initial state


def test_workers_and_chunking_do_not_change_signatures() -> None:
    rng = np.random.default_rng(9)
    values, offsets = _random_docs(rng, 300, 32)
    base = minhash_signatures(values, offsets, MinHashConfig(chunk_tokens=8192))
    for cfg in (MinHashConfig(chunk_tokens=1), MinHashConfig(chunk_tokens=777, workers=2)):
        assert np.array_equal(minhash_signatures(values, offsets, cfg), base)


def test_estimate_is_close_to_exact_jaccard() -> None:
    rng = np.random.default_rng(5)
    vocab = np.array([f"w{i}" for i in range(3000)])
    errors = []
    texts = []
    for _ in range(40):
        words = vocab[rng.integers(0, 3000, 200)]
        other = words.copy()
        changed = rng.integers(0, 60)
        other[rng.integers(0, 200, changed)] = vocab[rng.integers(0, 3000, changed)]
        texts += [" ".join(words.tolist()), " ".join(other.tolist())]
    batch = shingle_batch(texts)
    sig = minhash_signatures(batch.hashes, batch.offsets, MinHashConfig(num_perm=256))
    for k in range(0, len(texts), 2):
        a, b = batch.doc_set(k), batch.doc_set(k + 1)
        exact = len(a & b) / len(a | b)
        errors.append(abs(float(estimate_jaccard(sig[k], sig[k + 1])) - exact))
    assert max(errors) < 0.12  # 4 sigma at 256 perms
    assert np.mean(errors) < 0.03


def test_config_key_and_validation() -> None:
    assert str(MinHashConfig()) == str(MinHashConfig(workers=4, chunk_tokens=99))  # knobs are not in the key
    assert str(MinHashConfig()) != str(MinHashConfig(threshold=0.7))
    with pytest.raises(ValueError):
        MinHashConfig(bands=4)
    with pytest.raises(ValueError):
        MinHashConfig(bands=20, rows=7)  # 140 > 128
    with pytest.raises(ValueError):
        MinHashConfig(scheme="legacy")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        minhash_signatures(np.zeros(3, np.uint64), np.array([0, 2]))
