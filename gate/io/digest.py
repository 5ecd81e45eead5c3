"""The content hashes gate keys things by, one function each: a file's (streamed; manifests, model caches, exports
and the probe pin files by it) and a text's (the data checks, the splitter, scrub, the PII and embedding memos key
texts by it). A second copy could drift in chunking, encoding or digest size and make equal inputs differ."""

from __future__ import annotations

import hashlib
from pathlib import Path


def sha256_file(path: str | Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def text_digest(text: str) -> bytes:
    """16-byte BLAKE2b of the text's UTF-8 (lone surrogates kept, as JSON can carry them): what a text is keyed by.

    Why one function: the splitter merges groups whose rows share a digest of the normal form, scrub and the
    dedup checks compare rows by it, and the per-run memos (PII hits, embeddings) look texts up by it; copies
    that differed in encoding or size would silently stop matching. Callers wanting the normal form pass
    `normalize(text)` (gate.data.text). Changing it moves rows between splits: tests/io/test_digest.py pins it.
    """
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
