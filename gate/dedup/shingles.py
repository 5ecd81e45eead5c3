"""Text normalisation and n-gram shingling into 64-bit hashes.

Near-duplicate detection compares *sets of shingles*; whatever we do here decides what "the same text" means, so
the rules are explicit, configurable and part of a stable cache key (``str(ShingleConfig)``).

Each text is normalised with C-speed ``str`` methods; after that the only whitespace left is U+0020, so a chunk of
documents is tokenised and hashed as one UTF-8 byte array with numpy (no Python object per token), and n-gram
hashes are combined over the whole chunk. The hashes are fixed functions of the bytes (no ``PYTHONHASHSEED``,
no optional dependency), so they are stable across processes and machines; a golden-value test pins them.
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

from gate.dedup._arrays import fmix64, ranks_within, sorted_unique

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
    """Regexes for (invisible chars to delete, control chars and non-ASCII whitespace to turn into a plain space,
    punctuation).

    Built once per process from the running ``unicodedata`` (whose version is in the cache key) because Python's
    ``re`` has no ``\\p{..}`` classes. After them, a plain space is the only whitespace left, which lets the tokenizer
    work on UTF-8 bytes.
    """
    invisible: list[int] = []
    spaces: list[int] = []
    punct: list[int] = []
    for cp in range(sys.maxunicode + 1):
        c = chr(cp)
        cat = unicodedata.category(c)
        if cat == "Cf":  # zero-width space/joiners, bidi marks and isolates, BOM, soft hyphen, tags
            invisible.append(cp)
        elif cat == "Cc" or (c.isspace() and c != " "):
            spaces.append(cp)
        elif cat[0] == "P":
            punct.append(cp)
    return (
        re.compile(f"[{_ranges_class(invisible)}]+"),
        re.compile(f"[{_ranges_class(spaces)}]+"),
        re.compile(f"[{_ranges_class(punct)}]+"),
    )


# ASCII fast path: most fine-tuning text is ASCII, where NFKC, Cf and accent handling are no-ops.
_ASCII_PUNCT_TO_SPACE = str.maketrans({c: " " for c in map(chr, range(128)) if unicodedata.category(c)[0] == "P"})
_ASCII_CTRL_TO_SPACE = str.maketrans({c: " " for c in map(chr, range(128)) if unicodedata.category(c) == "Cc"})
_ASCII_BOTH_TO_SPACE = {**_ASCII_PUNCT_TO_SPACE, **_ASCII_CTRL_TO_SPACE}


def _normalize_raw(text: str, config: ShingleConfig) -> str:
    """Normalised text whose only whitespace is U+0020, possibly in runs (the tokenizer collapses them)."""
    if text.isascii():
        return text.translate(_ASCII_BOTH_TO_SPACE if config.strip_punct else _ASCII_CTRL_TO_SPACE).lower()
    invisible, spaces, punct = _char_tables()
    text = unicodedata.normalize("NFKC", text)
    text = invisible.sub("", text)
    text = spaces.sub(" ", text)
    text = text.casefold()
    if config.strip_accents:
        decomposed = unicodedata.normalize("NFKD", text)
        text = unicodedata.normalize("NFC", "".join(c for c in decomposed if not unicodedata.combining(c)))
    if config.strip_punct:
        text = punct.sub(" ", text)
    return text


def normalize(text: str, config: ShingleConfig | None = None) -> str:
    """The canonical form compared by near-dup detection: NFKC, invisible (format) chars removed, casefolded,
    optional punctuation/accent stripping, whitespace collapsed to single spaces."""
    return " ".join(_normalize_raw(text, config or ShingleConfig()).split())


def tokenize(text: str, config: ShingleConfig | None = None) -> list[str]:
    """Tokens of the normalised text (words or characters, per ``config.unit``); for inspection and tests, the
    batch path hashes the same tokens without materialising them."""
    config = config or ShingleConfig()
    words = _normalize_raw(text, config).split()
    return words if config.unit == "word" else list(" ".join(words))


# ---------------------------------------------------------------------------------------------------------------
# Hashing


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
_BLOCK_MULT = np.uint64(0x9FB21C651E98DF25)
_LONG_TOKEN_BYTES = 256  # longer tokens (URLs, base64 blobs) are hashed one by one with BLAKE2b
_FLUSH_BYTES = 1 << 21


def _token_spans(buf: np.ndarray, doc_off: np.ndarray, unit: str) -> tuple[np.ndarray, np.ndarray]:
    """(start, end) byte offsets of every token in a concatenation of normalised UTF-8 documents.

    Words are maximal runs of non-space bytes that do not cross a document boundary; characters start at every
    byte that is not a UTF-8 continuation byte (documents are whole UTF-8 strings, so none is split).
    """
    nb = buf.size
    if unit == "char":
        starts = np.flatnonzero((buf & 0xC0) != 0x80)
        return starts, np.append(starts[1:], nb)
    is_tok = buf != 0x20
    boundary = np.zeros(nb + 1, dtype=bool)
    boundary[doc_off] = True  # a document start (or the end) cuts any token
    prev_tok = np.concatenate(([False], is_tok[:-1])) & ~boundary[:-1]
    next_tok = np.concatenate((is_tok[1:], [False])) & ~boundary[1:]
    starts = np.flatnonzero(is_tok & ~prev_tok)
    ends = np.flatnonzero(is_tok & ~next_tok) + 1
    return starts, ends


def _hash_tokens(padded: bytes, starts: np.ndarray, ends: np.ndarray, seed: int) -> np.ndarray:
    """64-bit hash of each token's bytes, vectorised over all tokens.

    ``padded`` is the chunk's UTF-8 bytes plus 8 zero bytes. A uint64 view with a 1-byte stride reads the 8 bytes
    at any offset in one gather, so block k of every token is ``view[start + 8k]`` masked to the token's length; no
    per-byte index arrays. Each token's state starts from (seed, length) and absorbs its blocks through the
    MurmurHash3 finaliser. Tokens are sorted by block count so iteration k touches only tokens with a k-th block;
    tokens over ``_LONG_TOKEN_BYTES`` (URLs, base64 blobs: rare) are hashed one by one with BLAKE2b instead, which
    bounds the iterations.
    """
    lengths = ends - starts
    out = np.empty(starts.size, dtype=np.uint64)
    long_tok = np.flatnonzero(lengths > _LONG_TOKEN_BYTES)
    salt = seed.to_bytes(8, "little")
    for t in long_tok.tolist():
        digest = hashlib.blake2b(padded[starts[t] : ends[t]], digest_size=8, salt=salt).digest()
        out[t] = int.from_bytes(digest, "little")
    short = np.flatnonzero(lengths <= _LONG_TOKEN_BYTES)
    if short.size == 0:
        return out
    n_blocks = (lengths[short] + 7) >> 3
    by_blocks = np.argsort(-n_blocks, kind="stable")
    order = short[by_blocks]
    s_start, s_len = starts[order], lengths[order]
    neg_blocks = -n_blocks[by_blocks]  # ascending
    words = np.ndarray(shape=(len(padded) - 7,), dtype="<u8", buffer=padded, offset=0, strides=(1,))
    all_ones = np.uint64(_MASK64)
    with np.errstate(over="ignore"):
        h = s_len.astype(np.uint64)
        h *= _LENGTH_SALT
        h ^= np.uint64(_splitmix64(seed))
        fmix64(h)
        for k in range(int(-neg_blocks[0])):
            c = int(np.searchsorted(neg_blocks, -k, side="left"))  # tokens with more than k blocks: a prefix
            block = words[s_start[:c] + 8 * k]
            remaining = np.minimum(s_len[:c] - 8 * k, 8).astype(np.uint64)
            block &= all_ones >> (np.uint64(64) - np.uint64(8) * remaining)
            part = h[:c]
            part ^= block
            part *= _BLOCK_MULT
            fmix64(part)
    out[order] = h
    return out


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
        if (sizes >= n).any():
            span = tok.size - n + 1
            acc = tok[:span] * mult[0]
            for k in range(1, n):
                acc += tok[k : k + span] * mult[k]
            acc ^= np.uint64(n) * _LENGTH_SALT
            # keep starts i with doc_start <= i <= doc_end - n, i.e. windows entirely inside one document
            doc_of = np.repeat(np.arange(n_docs), sizes)[:span]
            valid = np.arange(span) <= tok_off[doc_of + 1] - n
            is_long = np.repeat(sizes >= n, counts)
            out[is_long] = fmix64(acc[valid])
        short_docs = np.flatnonzero((sizes > 0) & (sizes < n))
        if short_docs.size:
            # whole (short) document as a single shingle, same positional combination with its own length salt
            s_sizes = sizes[short_docs]
            pos = ranks_within(s_sizes)
            terms = tok[np.repeat(tok_off[short_docs], s_sizes) + pos] * mult[pos]
            starts = np.zeros(short_docs.size, dtype=np.int64)
            np.cumsum(s_sizes[:-1], out=starts[1:])
            sums = np.add.reduceat(terms, starts)
            sums ^= s_sizes.astype(np.uint64) * _LENGTH_SALT
            out[out_off[short_docs]] = fmix64(sums)
    return out, out_off


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


def _shingle_chunk(normalised: list[bytes], config: ShingleConfig) -> tuple[np.ndarray, np.ndarray]:
    """Shingle hashes and per-document counts of a chunk of normalised, UTF-8 encoded documents."""
    doc_off = np.zeros(len(normalised) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, normalised), dtype=np.int64, count=len(normalised)), out=doc_off[1:])
    padded = b"".join(normalised) + bytes(8)
    buf = np.frombuffer(padded, dtype=np.uint8)[: doc_off[-1]]
    starts, ends = _token_spans(buf, doc_off, config.unit)
    tok = _hash_tokens(padded, starts, ends, config.seed)
    tok_off = np.searchsorted(starts, doc_off, side="left")  # tokens never cross documents
    hashes, offsets = _combine_ngrams(tok, tok_off, config.n)
    return hashes, np.diff(offsets)


def shingle_batch(texts: Sequence[str], config: ShingleConfig | None = None) -> ShingleBatch:
    """Shingle many texts at once: normalise each in Python (C-speed str methods), then tokenise and hash the UTF-8
    bytes of ~2 MB chunks with numpy, so no per-token Python object is ever created."""
    config = config or ShingleConfig()
    hash_parts: list[np.ndarray] = []
    count_parts: list[np.ndarray] = [np.zeros(0, dtype=np.int64)]
    pending: list[bytes] = []
    pending_bytes = 0
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"text at position {i} is {type(text).__name__}, not str")
        norm = _normalize_raw(text, config)
        if config.unit == "char":
            norm = " ".join(norm.split())
        # surrogatepass: lone surrogates (from sloppy JSON) must hash, not crash
        encoded = norm.encode("utf-8", "surrogatepass")
        pending.append(encoded)
        pending_bytes += len(encoded)
        if pending_bytes >= _FLUSH_BYTES:
            hashes, counts = _shingle_chunk(pending, config)
            hash_parts.append(hashes)
            count_parts.append(counts)
            pending, pending_bytes = [], 0
    if pending or not hash_parts:
        hashes, counts = _shingle_chunk(pending, config)
        hash_parts.append(hashes)
        count_parts.append(counts)
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum(np.concatenate(count_parts), out=offsets[1:])
    return ShingleBatch(hashes=np.concatenate(hash_parts), offsets=offsets, config=config)


def ngram_batches(texts: Sequence[str], config: ShingleConfig, ns: Iterable[int]
                  ) -> tuple[np.ndarray, dict[int, ShingleBatch]]:
    """(token count of each text, {n: its n-gram shingles}) for several n, normalising and hashing tokens once.

    Contamination matches items of different lengths with different n (13-grams for long prompts, the whole prompt
    for short ones); re-shingling the training rows once per n would repeat the costly part (normalisation and token
    hashing) for each. The n-gram hash of a window equals the whole-text shingle of a text made of just those
    words under ``ShingleConfig(n=len)``, so a short item's own shingle is comparable to a row's n-grams. A text with
    fewer than n tokens still yields its one whole-text shingle here; callers drop it when they need true n-grams.
    """
    ns = sorted(set(ns))
    counts: list[np.ndarray] = [np.zeros(0, dtype=np.int64)]
    per_n: dict[int, tuple[list[np.ndarray], list[np.ndarray]]] = {n: ([], [np.zeros(0, np.int64)]) for n in ns}

    def flush(pending: list[bytes]) -> None:
        doc_off = np.zeros(len(pending) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, pending), dtype=np.int64, count=len(pending)), out=doc_off[1:])
        padded = b"".join(pending) + bytes(8)
        buf = np.frombuffer(padded, dtype=np.uint8)[: doc_off[-1]]
        starts, ends = _token_spans(buf, doc_off, config.unit)
        tok = _hash_tokens(padded, starts, ends, config.seed)
        tok_off = np.searchsorted(starts, doc_off, side="left")
        counts.append(np.diff(tok_off))
        for n in ns:
            hashes, offsets = _combine_ngrams(tok, tok_off, n)
            per_n[n][0].append(hashes)
            per_n[n][1].append(np.diff(offsets))

    pending: list[bytes] = []
    size = 0
    for text in texts:
        norm = _normalize_raw(text, config)
        if config.unit == "char":
            norm = " ".join(norm.split())
        pending.append(norm.encode("utf-8", "surrogatepass"))
        size += len(pending[-1])
        if size >= _FLUSH_BYTES:
            flush(pending)
            pending, size = [], 0
    if pending or len(counts) == 1:
        flush(pending)
    out: dict[int, ShingleBatch] = {}
    for n in ns:
        offsets = np.zeros(len(texts) + 1, dtype=np.int64)
        np.cumsum(np.concatenate(per_n[n][1]), out=offsets[1:])
        out[n] = ShingleBatch(hashes=np.concatenate(per_n[n][0]) if per_n[n][0] else np.zeros(0, np.uint64),
                              offsets=offsets, config=ShingleConfig(n, config.unit, config.strip_punct,
                                                                    config.strip_accents, config.seed))
    return np.concatenate(counts), out


def shingle_hashes(text: str, config: ShingleConfig | None = None) -> np.ndarray:
    """Distinct shingle hashes of one text (sorted uint64); empty text gives an empty array."""
    batch = shingle_batch([text], config)
    return sorted_unique(batch.hashes)
