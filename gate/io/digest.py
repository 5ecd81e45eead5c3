"""The content hash of a file, streamed: manifests, model caches, exports and the probe all pin files by it, so
one function computes it (a second copy could drift in chunking or encoding and make equal files differ)."""

from __future__ import annotations

import hashlib
from pathlib import Path


def sha256_file(path: str | Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()
