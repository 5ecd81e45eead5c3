"""Writing a derived dataset (split, scrubbed, exported): JSONL per split plus MANIFEST.json, all atomically.

The output directory appears complete or not at all; inputs are only ever opened for reading.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import IO, Any

import orjson

from gate.io.atomic import atomic_dir


class SplitWriter:
    """Use as a context manager; `write(split, row)` appends a row, `manifest` is written last."""

    def __init__(self, out: str | Path, splits: list[str] | None = None) -> None:
        self.out = Path(out)
        self._order = list(splits or [])
        self._files: dict[str, IO[bytes]] = {}
        self._digests: dict[str, Any] = {}
        self.counts: dict[str, int] = {}
        self.manifest: dict[str, Any] = {}
        self._ctx = atomic_dir(self.out)
        self._tmp: Path | None = None

    def __enter__(self) -> SplitWriter:
        self._tmp = self._ctx.__enter__()
        for split in self._order:
            self._open(split)
        return self

    def _open(self, split: str) -> IO[bytes]:
        assert self._tmp is not None
        fh = open(self._tmp / f"{split}.jsonl", "wb")
        self._files[split] = fh
        self._digests[split] = hashlib.sha256()
        self.counts[split] = 0
        if split not in self._order:
            self._order.append(split)
        return fh

    def write(self, split: str, row: dict[str, Any]) -> None:
        fh = self._files.get(split) or self._open(split)
        line = orjson.dumps(row) + b"\n"
        fh.write(line)
        self._digests[split].update(line)
        self.counts[split] += 1

    def write_raw(self, split: str, line: bytes) -> None:
        """Appends one JSONL line exactly as given (a row copied unchanged keeps its bytes: key order, spacing,
        escapes); a trailing newline is added, a leading byte order mark dropped."""
        fh = self._files.get(split) or self._open(split)
        data = line.removeprefix(b"\xef\xbb\xbf").rstrip(b"\n") + b"\n"
        fh.write(data)
        self._digests[split].update(data)
        self.counts[split] += 1

    def files(self) -> list[dict[str, Any]]:
        return [{"split": s, "file": f"{s}.jsonl", "rows": self.counts[s], "sha256": self._digests[s].hexdigest()}
                for s in self._order]

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool | None:
        for fh in self._files.values():
            fh.close()
        if exc_type is None and self._tmp is not None:
            self.manifest.setdefault("files", self.files())
            (self._tmp / "MANIFEST.json").write_text(json.dumps(self.manifest, indent=2, default=str) + "\n")
        return self._ctx.__exit__(exc_type, exc, tb)
