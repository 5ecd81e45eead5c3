"""The JSONL metrics source of `gate watch`: rows read incrementally, release selection (gate.release.watch judges).

Why apart: reading a file that a writer appends to (half-written last lines, rotation) is its own job, and the
Prometheus source shares none of it.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from gate.errors import InputError
from gate.io.rows import parse_line
from gate.release.watch import Sample


def parse_ts(value: Any, *, file: str, line: int) -> float:
    """ISO 8601 with a time zone, or Unix seconds: a naive time would be read in whatever zone this machine is in."""
    if isinstance(value, bool):
        raise InputError("ts must be an ISO 8601 time or Unix seconds, got bool", file=file, line=line, field="ts")
    if isinstance(value, (int, float)):
        if not math.isfinite(value):
            raise InputError("ts must be finite", file=file, line=line, field="ts")
        return float(value)
    if not isinstance(value, str):
        raise InputError(f"ts must be an ISO 8601 time or Unix seconds, got {type(value).__name__}", file=file,
                         line=line, field="ts")
    try:
        t = datetime.fromisoformat(value)
    except ValueError:
        raise InputError(f"ts {value[:40]!r} is not an ISO 8601 time", file=file, line=line, field="ts") from None
    if t.tzinfo is None:
        raise InputError("ts has no time zone (write Z or +00:00)", file=file, line=line, field="ts")
    return t.timestamp()


def parse_row(raw: bytes, *, file: str, line: int) -> Sample | None:
    """One JSONL line -> Sample (None for a blank line); anything else is one InputError naming file:line: field."""
    if not raw.strip():
        return None
    row = parse_line(raw, file, line)
    metric = row.get("metric")
    if not isinstance(metric, str) or not metric.strip():
        raise InputError("missing or empty metric name", file=file, line=line, field="metric")
    value = row.get("value")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"value must be a number, got {type(value).__name__ if 'value' in row else 'nothing'}",
                         file=file, line=line, field="value")
    if not math.isfinite(value):
        raise InputError("value must be finite", file=file, line=line, field="value")
    ts = parse_ts(row["ts"], file=file, line=line) if row.get("ts") is not None else None
    release = row.get("release")
    if release is not None and (not isinstance(release, str) or not release.strip()):
        raise InputError("release must be a non-empty string", file=file, line=line, field="release")
    return Sample(metric, float(value), ts, release, line)


class JsonlSource:
    """A metrics file read incrementally: each `poll()` returns the complete rows appended since the last one.

    A last line without its newline is kept back until it is complete (a writer may be half-way through it); a file
    that shrank was rotated or truncated and is read again from its start.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.offset = 0
        self.lines = 0
        self.pending = b""
        self.digest = hashlib.sha256()

    @property
    def label(self) -> str:
        return self.path

    def sha256(self) -> str:
        return self.digest.hexdigest()

    def poll(self, *, final: bool = False) -> list[Sample]:
        p = Path(self.path)
        try:
            size = p.stat().st_size
            if size < self.offset:
                self.offset, self.lines, self.pending = 0, 0, b""
            with p.open("rb") as fh:
                fh.seek(self.offset)
                data = fh.read()
        except FileNotFoundError:
            raise InputError("metrics file not found", file=self.path) from None
        except OSError as exc:
            raise InputError(f"cannot read metrics file ({exc.strerror or exc})", file=self.path) from None
        self.offset += len(data)
        self.digest.update(data)
        data = self.pending + data
        parts = data.split(b"\n")
        self.pending = b"" if final else parts.pop()
        out = []
        for part in parts:
            self.lines += 1
            s = parse_row(part, file=self.path, line=self.lines)
            if s is not None:
                out.append(s)
        return out


def read_metrics(path: str) -> tuple[list[Sample], str]:
    """Every row of a metrics file (a last line without newline included) and the file's sha256."""
    src = JsonlSource(path)
    rows = src.poll(final=True)
    if not rows:
        raise InputError("metrics file has no rows", file=path)
    return rows, src.sha256()


def select_release(rows: Sequence[Sample], release_id: str | None, *, file: str) -> tuple[list[Sample], int]:
    """The rows about `release_id` (rows naming no release count for it) and how many were about another one.

    With no release known (no record, no --release), rows that name two releases cannot be judged together."""
    if release_id is None:
        named = sorted({r.release for r in rows if r.release is not None})
        if len(named) > 1:
            raise InputError(f"rows are about several releases ({', '.join(named[:5])}): name one with --release",
                             file=file)
        return list(rows), 0
    kept = [r for r in rows if r.release is None or r.release == release_id]
    return kept, len(rows) - len(kept)
