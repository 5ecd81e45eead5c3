"""Text normalisation and n-gram shingling into 64-bit hashes.

Near-duplicate detection compares *sets of shingles*; whatever we do here decides what "the same text" means, so
the rules are explicit, configurable and part of a stable cache key (``str(ShingleConfig)``).

Hashing is done once per distinct token (a per-batch cache) with stdlib BLAKE2b, so results are stable across
processes, machines and Python versions (no ``PYTHONHASHSEED``) without an extra dependency; n-gram hashes are then
combined with numpy over the whole batch at once.
"""

from __future__ import annotations

import functools
import hashlib
import re
import sys
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

__all__ = [
    "ShingleBatch",
    "ShingleConfig",
    "normalize",
    "shingle_batch",
    "shingle_hashes",
    "tokenize",
]

#: Bumped whenever normalisation or hashing changes, so cached shingles/signatures are invalidated.
SHINGLE_ALGO_VERSION = 1

_MASK64 = (1 << 64) - 1


@dataclass(frozen=True)
class ShingleConfig:
    """How texts become shingle sets.

    n: shingle length in tokens (5 word-grams is the common near-dup default; use ~20+ for ``unit="char"``).
    unit: ``"word"`` (whitespace tokens) or ``"char"`` (characters, for scripts without spaces such as CJK).
    strip_punct: replace Unicode punctuation (categories P*) by spaces, so "Hello, world!" == "hello world".
    strip_accents: drop combining marks after decomposition ("café" == "cafe"); off by default because it merges
        distinct words in many languages.
    seed: salt of the token hash; different seeds give independent shingle hashes.
    """

    n: int = 5
    unit: Literal["word", "char"] = "word"
    strip_punct: bool = True
    strip_accents: bool = False
    seed: int = 0

    def __post_init__(self) -> None:
        if self.n < 1:
            raise ValueError(f"shingle size n must be >= 1, got {self.n}")
        if self.unit not in ("word", "char"):
            raise ValueError(f"unit must be 'word' or 'char', got {self.unit!r}")
        if not 0 <= self.seed < (1 << 64):
            raise ValueError(f"seed must fit in 64 bits, got {self.seed}")

    def __str__(self) -> str:
        """Stable cache key: every field that changes the output, plus algorithm and Unicode versions."""
        return (
            f"shingles-v{SHINGLE_ALGO_VERSION}(n={self.n},unit={self.unit},strip_punct={int(self.strip_punct)},"
            f"strip_accents={int(self.strip_accents)},seed={self.seed},unicode={unicodedata.unidata_version})"
        )


# ---------------------------------------------------------------------------------------------------------------
# Normalisation


def _ranges_class(codepoints: Iterable[int]) -> str:
    """Compact regex character class body for a sorted set of code points."""
    parts: list[str] = []
    cps = sorted(codepoints)
    i = 0
    while i < len(cps):
        j = i
        while j + 1 < len(cps) and cps[j + 1] == cps[j] + 1:
            j += 1
        lo, hi = re.escape(chr(cps[i])), re.escape(chr(cps[j]))
        parts.append(lo if i == j else f"{lo}-{hi}")
        i = j + 1
    return "".join(parts)


@functools.cache
def _char_tables() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """Regexes for (invisible chars to delete, control chars to turn into spaces, punctuation).

    Built once per process from the running ``unicodedata`` (whose version is in the cache key) because Python's
    ``re`` has no ``\\p{..}`` classes.
    """
    invisible: list[int] = []
    control: list[int] = []
    punct: list[int] = []
    for cp in range(sys.maxunicode + 1):
        cat = unicodedata.category(chr(cp))
        if cat == "Cf":  # zero-width space/joiners, bidi marks and isolates, BOM, soft hyphen, tags
            invisible.append(cp)
        elif cat == "Cc":
            control.append(cp)
        elif cat[0] == "P":
            punct.append(cp)
    return (
        re.compile(f"[{_ranges_class(invisible)}]+"),
        re.compile(f"[{_ranges_class(control)}]+"),
        re.compile(f"[{_ranges_class(punct)}]+"),
    )


# ASCII fast path: most fine-tuning text is ASCII, where NFKC, Cf and accent handling are no-ops.
_ASCII_PUNCT_TO_SPACE = str.maketrans({c: " " for c in map(chr, range(128)) if unicodedata.category(c)[0] == "P"})
_ASCII_CTRL_TO_SPACE = str.maketrans({c: " " for c in map(chr, range(128)) if unicodedata.category(c) == "Cc"})
_ASCII_BOTH_TO_SPACE = {**_ASCII_PUNCT_TO_SPACE, **_ASCII_CTRL_TO_SPACE}


def _normalized_tokens(text: str, config: ShingleConfig) -> list[str]:
    """Normalise ``text`` and split it into tokens (words, or characters of the space-joined words)."""
    if text.isascii():
        text = text.translate(_ASCII_BOTH_TO_SPACE if config.strip_punct else _ASCII_CTRL_TO_SPACE).lower()
    else:
        invisible, control, punct = _char_tables()
        text = unicodedata.normalize("NFKC", text)
        text = invisible.sub("", text)
        text = control.sub(" ", text)
        text = text.casefold()
        if config.strip_accents:
            decomposed = unicodedata.normalize("NFKD", text)
            text = unicodedata.normalize("NFC", "".join(c for c in decomposed if not unicodedata.combining(c)))
        if config.strip_punct:
            text = punct.sub(" ", text)
    words = text.split()
    if config.unit == "word":
        return words
    return list(" ".join(words))


def normalize(text: str, config: ShingleConfig | None = None) -> str:
    """The canonical form compared by near-dup detection: NFKC, invisible chars removed, casefolded, optional
    punctuation/accent stripping, whitespace collapsed to single spaces."""
    config = config or ShingleConfig()
    return " ".join(_normalized_tokens(text, ShingleConfig(n=1, unit="word", strip_punct=config.strip_punct,
                                                           strip_accents=config.strip_accents)))


def tokenize(text: str, config: ShingleConfig | None = None) -> list[str]:
    """Tokens of the normalised text (words or characters, per ``config.unit``)."""
    return _normalized_tokens(text, config or ShingleConfig())


# ---------------------------------------------------------------------------------------------------------------
# Hashing


class _TokenHashCache(dict[str, int]):
    """token -> 64-bit BLAKE2b hash, computed once per distinct token (``__missing__`` keeps ``map`` in C)."""

    def __init__(self, seed: int) -> None:
        super().__init__()
        self._salt = seed.to_bytes(8, "little")

    def __missing__(self, token: str) -> int:
        # surrogatepass: lone surrogates (from sloppy JSON) must hash, not crash.
        digest = hashlib.blake2b(token.encode("utf-8", "surrogatepass"), digest_size=8, salt=self._salt).digest()
        value = int.from_bytes(digest, "little")
        self[token] = value
        return value


def _splitmix64(x: int) -> int:
    x = (x + 0x9E3779B97F4A7C15) & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


@functools.cache
def _position_multipliers(n: int) -> np.ndarray:
    """Odd 64-bit multipliers, one per position in the n-gram, so shingles are order-sensitive."""
    return np.array([_splitmix64(k) | 1 for k in range(n)], dtype=np.uint64)


_LENGTH_SALT = np.uint64(0xD6E8FEB86659FD93)
_FLUSH_TOKENS = 1 << 18
_MAX_CACHED_TOKENS = 1 << 21


def _fmix64(h: np.ndarray) -> np.ndarray:
    """MurmurHash3 64-bit finaliser (bijective avalanche), so combined sums look uniformly random."""
    h = h ^ (h >> np.uint64(33))
    h = h * np.uint64(0xFF51AFD7ED558CCD)
    h = h ^ (h >> np.uint64(33))
    h = h * np.uint64(0xC4CEB9FE1A85EC53)
    return h ^ (h >> np.uint64(33))


def _combine_ngrams(tok: np.ndarray, tok_off: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised n-gram hashes over a flat token-hash array with per-document offsets.

    A document with fewer than n tokens (but at least one) yields one shingle over all its tokens; an empty one
    yields none. Returns (flat shingle hashes, offsets), in document order, possibly with repeats within a doc.
    """
    n_docs = len(tok_off) - 1
    sizes = np.diff(tok_off)
    mult = _position_multipliers(n)
    counts = np.where(sizes >= n, sizes - n + 1, np.minimum(sizes, 1))
    out_off = np.zeros(n_docs + 1, dtype=np.int64)
    np.cumsum(counts, out=out_off[1:])
    out = np.empty(int(out_off[-1]), dtype=np.uint64)
    if out.size == 0:
        return out, out_off

    with np.errstate(over="ignore"):
        long_docs = np.flatnonzero(sizes >= n)
        if long_docs.size:
            total = tok.size
            span = total - n + 1
            acc = tok[:span] * mult[0]
            for k in range(1, n):
                acc += tok[k : k + span] * mult[k]
            acc ^= np.uint64(n) * _LENGTH_SALT
            # keep starts i with doc_start <= i <= doc_end - n, i.e. windows entirely inside one document
            doc_of = np.repeat(np.arange(n_docs), sizes)[:span]
            valid = np.arange(span) <= tok_off[doc_of + 1] - n
            dest_docs = np.repeat(np.arange(n_docs), counts)
            is_long = sizes[dest_docs] >= n
            out[is_long] = _fmix64(acc[valid])
        short_docs = np.flatnonzero((sizes > 0) & (sizes < n))
        if short_docs.size:
            # whole (short) document as a single shingle, same positional combination with its own length salt
            s_sizes = sizes[short_docs]
            idx = np.repeat(tok_off[short_docs], s_sizes) + _ranks_within(s_sizes)
            pos = _ranks_within(s_sizes)
            terms = tok[idx] * mult[pos]
            starts = np.zeros(short_docs.size, dtype=np.int64)
            np.cumsum(s_sizes[:-1], out=starts[1:])
            sums = np.add.reduceat(terms, starts)
            sums ^= s_sizes.astype(np.uint64) * _LENGTH_SALT
            out[out_off[short_docs]] = _fmix64(sums)
    return out, out_off


def _ranks_within(sizes: np.ndarray) -> np.ndarray:
    """[0..s0-1, 0..s1-1, ...] for run lengths ``sizes`` (vectorised)."""
    total = int(sizes.sum())
    starts = np.zeros(sizes.size, dtype=np.int64)
    np.cumsum(sizes[:-1], out=starts[1:])
    return np.arange(total, dtype=np.int64) - np.repeat(starts, sizes)


@dataclass(frozen=True, eq=False)
class ShingleBatch:
    """Shingle hashes of many documents, flat: document i owns ``hashes[offsets[i]:offsets[i+1]]``.

    Kept flat (not a list of arrays) so MinHash can run over the whole batch with a few numpy calls. Within a
    document the hashes are in text order and may repeat; use :meth:`doc_set` for set semantics.
    """

    hashes: np.ndarray  # uint64
    offsets: np.ndarray  # int64, len = docs + 1
    config: ShingleConfig

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @property
    def sizes(self) -> np.ndarray:
        """Shingles per document (with repeats)."""
        return np.diff(self.offsets)

    def doc(self, i: int) -> np.ndarray:
        """Shingle hashes of document i in text order (with repeats)."""
        return self.hashes[self.offsets[i] : self.offsets[i + 1]]

    def doc_set(self, i: int) -> frozenset[int]:
        """Distinct shingles of document i; Python sets intersect faster than numpy for ~100s of elements."""
        return frozenset(self.doc(i).tolist())


def shingle_batch(texts: Sequence[str], config: ShingleConfig | None = None) -> ShingleBatch:
    """Shingle many texts at once: one Python pass to tokenise, then vectorised n-gram hashing per chunk of
    documents (so temporaries stay bounded whatever the batch size)."""
    config = config or ShingleConfig()
    cache = _TokenHashCache(config.seed)
    lookup = cache.__getitem__
    hash_parts: list[np.ndarray] = []
    count_parts: list[np.ndarray] = []
    pending: list[int] = []
    sizes: list[int] = []

    def flush() -> None:
        tok_off = np.zeros(len(sizes) + 1, dtype=np.int64)
        np.cumsum(sizes, out=tok_off[1:])
        hashes, offsets = _combine_ngrams(np.array(pending, dtype=np.uint64), tok_off, config.n)
        hash_parts.append(hashes)
        count_parts.append(np.diff(offsets))
        pending.clear()
        sizes.clear()

    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"text at position {i} is {type(text).__name__}, not str")
        tokens = _normalized_tokens(text, config)
        sizes.append(len(tokens))
        pending.extend(map(lookup, tokens))
        if len(pending) >= _FLUSH_TOKENS:
            flush()
            if len(cache) > _MAX_CACHED_TOKENS:  # bound the vocabulary cache on huge, diverse corpora
                cache.clear()
    flush()
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum(np.concatenate(count_parts), out=offsets[1:])
    hashes = np.concatenate(hash_parts) if len(hash_parts) > 1 else hash_parts[0]
    return ShingleBatch(hashes=hashes, offsets=offsets, config=config)


def shingle_hashes(text: str, config: ShingleConfig | None = None) -> np.ndarray:
    """Distinct shingle hashes of one text (sorted uint64); empty text gives an empty array."""
    batch = shingle_batch([text], config)
    return np.unique(batch.hashes)
