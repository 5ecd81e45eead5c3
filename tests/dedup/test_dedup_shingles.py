"""Normalisation and shingling: what counts as "the same text", pinned against a pure-Python reference."""

from __future__ import annotations

import hashlib
import random
import time
import unicodedata

import numpy as np
import pytest

from gate.dedup import shingles as sh
from gate.dedup.shingles import ShingleConfig, normalize, shingle_batch, shingle_hashes, tokenize

M64 = (1 << 64) - 1


def _fmix64(h: int) -> int:
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & M64
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & M64
    return h ^ (h >> 33)


def _ref_token_hash(token: str, seed: int) -> int:
    data = token.encode("utf-8", "surrogatepass")
    if len(data) > 256:
        return int.from_bytes(hashlib.blake2b(data, digest_size=8, salt=seed.to_bytes(8, "little")).digest(), "little")
    h = _fmix64(((len(data) * 0xD6E8FEB86659FD93) & M64) ^ sh._splitmix64(seed))
    for k in range(0, len(data), 8):
        block = int.from_bytes(data[k : k + 8].ljust(8, b"\0"), "little")
        h = _fmix64(((h ^ block) * 0x9FB21C651E98DF25) & M64)
    return h


def _ref_shingles(text: str, config: ShingleConfig) -> list[int]:
    """The documented algorithm, one token at a time: the vectorised path must match it exactly."""
    words = tokenize(text, config)
    hashes = [_ref_token_hash(t, config.seed) for t in words]
    mult = [sh._splitmix64(k) | 1 for k in range(config.n)]

    def combine(window: list[int]) -> int:
        acc = sum(w * m for w, m in zip(window, mult, strict=False)) & M64
        return _fmix64(acc ^ ((len(window) * 0xD6E8FEB86659FD93) & M64))

    if not hashes:
        return []
    if len(hashes) < config.n:
        return [combine(hashes)]
    return [combine(hashes[i : i + config.n]) for i in range(len(hashes) - config.n + 1)]


def _random_text(rng: random.Random) -> str:
    alphabet = ["a", "b", "c", "É", "ß", "ﬁ", "ا", "ل", "日", "本", "😀", "\u200b", "\u0301", ",", "!",
                " ", " ", "\t", "\n"]
    words = []
    for _ in range(rng.randint(0, 40)):
        words.append("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12))))
    if rng.random() < 0.2:
        words.append("x" * rng.randint(200, 400))  # crosses the long-token (BLAKE2b) limit
    return " ".join(words)


@pytest.mark.parametrize("config", [ShingleConfig(), ShingleConfig(n=3, strip_punct=False, seed=7),
                                    ShingleConfig(n=7, unit="char", strip_accents=True)])
def test_vectorised_shingles_match_reference(config: ShingleConfig) -> None:
    rng = random.Random(42)
    texts = [_random_text(rng) for _ in range(300)]
    batch = shingle_batch(texts, config)
    for i, text in enumerate(texts):
        assert batch.doc(i).tolist() == _ref_shingles(text, config), repr(text)


def test_golden_hashes_are_stable() -> None:
    """Changing these values invalidates every cache: bump SHINGLE_ALGO_VERSION if you must."""
    assert shingle_hashes("The quick brown fox jumps over the lazy dog").tolist() == [
        109857662651513647, 983957154704737173, 6199279160607693767, 9687010437062372458, 16806845863227475586]
    assert str(ShingleConfig()) == (
        f"shingles-v1(n=5,unit=word,strip_punct=1,strip_accents=0,seed=0,unicode={unicodedata.unidata_version})")
    assert str(ShingleConfig(n=3)) != str(ShingleConfig())


def test_batch_is_independent_of_chunking_and_neighbours(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(1)
    texts = [_random_text(rng) for _ in range(200)]
    whole = shingle_batch(texts)
    monkeypatch.setattr(sh, "_FLUSH_BYTES", 50)  # flush every few documents
    chunked = shingle_batch(texts)
    assert np.array_equal(whole.offsets, chunked.offsets)
    assert np.array_equal(whole.hashes, chunked.hashes)
    for i in (0, 17, 199):
        assert np.array_equal(shingle_batch([texts[i]]).hashes, whole.doc(i))


def test_normalisation_rules() -> None:
    assert normalize("  Hello,\tWORLD!! \n") == "hello world"
    assert normalize("ﬁne Ｆｕｌｌｗｉｄｔｈ") == "fine fullwidth"  # NFKC
    assert normalize("Straße") == "strasse"  # casefold
    assert normalize("zero\u200bwidth\u200d join\ufeff bom\u00ad") == "zerowidth join bom"  # Cf removed
    assert normalize("a\u202eb\u2066c\u2069") == "abc"  # bidi controls removed
    assert normalize("e\u0301") == normalize("é") == "é"  # combining mark composed
    assert normalize("café", ShingleConfig(strip_accents=True)) == "cafe"
    assert normalize("a\u3000b\u2028c\u0085d") == "a b c d"  # every Unicode space
    assert normalize("Hi, there", ShingleConfig(strip_punct=False)) == "hi, there"
    assert tokenize("مرحبا بالعالم 👨‍👩‍👧") == ["مرحبا", "بالعالم", "👨👩👧"]


def test_same_text_different_surface_same_shingles() -> None:
    a = "The quick brown fox jumps over the lazy dog"
    b = "  the QUICK, brown\u200b fox — jumps over the lazy dog!  "
    assert np.array_equal(shingle_hashes(a), shingle_hashes(b))
    assert not np.array_equal(shingle_hashes(a), shingle_hashes("the quick brown fox jumps over the lazy cat"))


@pytest.mark.parametrize("text", ["", " ", "\u200b\u200b", "!!! ,,, ...", "\n\t"])
def test_empty_after_normalisation_gives_no_shingles(text: str) -> None:
    assert shingle_hashes(text).size == 0
    batch = shingle_batch([text, "a b c d e f", text])
    assert batch.sizes.tolist() == [0, 2, 0]


def test_short_text_is_one_shingle() -> None:
    assert shingle_hashes("hello").size == 1
    assert shingle_hashes("one two three four").size == 1
    assert shingle_hashes("one two three four five").size == 1
    assert shingle_hashes("one two three four five six").size == 2
    assert shingle_hashes("two words").tolist() != shingle_hashes("words two").tolist()  # order matters


def test_unusual_input_does_not_crash() -> None:
    texts = ["\ud800 lone surrogate", "\x00\x01 control",
             "🏳️‍🌈" * 50, "a" * 100_000, "\u0301" * 10, "ا ل ع ر ب ي ة" * 9]
    batch = shingle_batch(texts)
    assert len(batch) == len(texts)
    assert (batch.sizes > 0).all()
    with pytest.raises(TypeError):
        shingle_batch(["ok", None])  # type: ignore[list-item]


def test_one_megabyte_text_is_fast() -> None:
    rng = np.random.default_rng(0)
    words = np.array(["alpha", "beta", "gamma", "délta", "ε", "日本", "x" * 30])
    text = " ".join(words[rng.integers(0, len(words), 180_000)].tolist())
    assert len(text) > 1_000_000
    start = time.perf_counter()
    hashes = shingle_hashes(text)
    assert time.perf_counter() - start < 5.0
    assert 0 < hashes.size <= 180_000


def test_config_validation() -> None:
    with pytest.raises(ValueError):
        ShingleConfig(n=0)
    with pytest.raises(ValueError):
        ShingleConfig(unit="sentence")  # type: ignore[arg-type]
