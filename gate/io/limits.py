"""Ceilings on the work one input can cause, with documented defaults and overrides.

Why: a pull request's files are untrusted, and small files can ask for unbounded work: a 3 KB `.jsonl.gz` that
inflates to a million rows, a 131 KB `.zst` of 4 GiB of newlines, one 200 MB line, a 60 MB YAML of 3M keys, a
million findings written into report.json. Each ceiling turns that into one line naming the file, exit 1, within
seconds. Every limit can be raised (or lowered) without editing code:

- the environment: `GATE_LIMIT_<NAME>=<int>` (e.g. `GATE_LIMIT_MAX_LINE_BYTES=67108864`);
- the command line: `gate check --limit name=value` (repeatable), which wins over the environment.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass

from gate.errors import GateError, InputError

MIB = 1 << 20


@dataclass(frozen=True)
class Limits:
    """The defaults are far above any real dataset file and far below what hurts a CI runner."""

    #: bytes one compressed split may inflate to
    max_decompressed_bytes: int = 16 << 30
    #: inflated/stored bytes of a compressed split, once it has inflated past `ratio_floor_bytes` (JSONL text
    #: compresses 4-20x; gzip's ceiling is ~1000x, reached only by degenerate input such as `{}` rows or newlines)
    max_compression_ratio: int = 100
    ratio_floor_bytes: int = 1 * MIB
    #: bytes of one JSON Lines line (a 50 MB row is still read, and reported as too long by the length check)
    max_line_bytes: int = 64 * MIB
    #: lines (JSON Lines) or rows (Parquet, Arrow) of one split file
    max_rows_per_file: int = 20_000_000
    #: bytes of one contract, scorecard or spec YAML
    max_yaml_bytes: int = 4 * MIB
    #: findings per check written into report.json and junit.xml (all of them still go to DuckDB)
    max_report_findings: int = 10_000
    #: findings per check embedded in the static check report (`gate report-html --check-run`): every check shows
    #: its count and its first N, the page stays a few MB; all of them are in DuckDB and on the live dashboard
    max_html_findings: int = 1_000


_current: ContextVar[Limits | None] = ContextVar("gate_limits", default=None)


def _from_env() -> Limits:
    values = {}
    for f in dataclasses.fields(Limits):
        raw = os.environ.get(f"GATE_LIMIT_{f.name.upper()}")
        if raw is not None and raw.strip():
            values[f.name] = _positive(f.name, raw, f"environment GATE_LIMIT_{f.name.upper()}")
    return Limits(**values)


def _positive(name: str, raw: str, where: str) -> int:
    try:
        value = int(raw.replace("_", ""))
    except ValueError:
        raise GateError(f"limit {name} must be a positive integer, not {raw[:40]!r} ({where})") from None
    if value <= 0:
        raise GateError(f"limit {name} must be a positive integer, not {value} ({where})")
    return value


def current() -> Limits:
    """The limits in force: `override` in effect, else the environment's over the defaults."""
    forced = _current.get()
    return forced if forced is not None else _from_env()


def parse_overrides(items: list[str]) -> dict[str, int]:
    """`["max_line_bytes=1024", ...]` from the command line; an unknown name or a bad value is one line."""
    known = {f.name for f in dataclasses.fields(Limits)}
    out: dict[str, int] = {}
    for item in items:
        name, sep, value = item.partition("=")
        name = name.strip().replace("-", "_")
        if not sep or name not in known:
            raise GateError(f"--limit {item[:60]!r}: expected NAME=INTEGER with NAME one of "
                            f"{', '.join(sorted(known))}")
        out[name] = _positive(name, value, "--limit")
    return out


def set_for_command(values: dict[str, int]) -> None:
    """The command line's `--limit` values, for the rest of this context (the CLI runs each command in its own)."""
    if values:
        _current.set(dataclasses.replace(current(), **values))


@contextlib.contextmanager
def override(**values: int) -> Iterator[Limits]:
    """Within the block, the given limits replace the ones in force (the others stay)."""
    token = _current.set(dataclasses.replace(current(), **values))
    try:
        yield _current.get()  # type: ignore[misc]
    finally:
        _current.reset(token)


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= MIB and n % MIB == 0 else f"{n:,} bytes"


def check_inflation(file: str, inflated: int, stored: int, line: int | None = None,
                    lim: Limits | None = None) -> None:
    """Every reader of a compressed split calls this as the bytes arrive: one that inflates past
    `max_decompressed_bytes`, or by more than `max_compression_ratio` once past `ratio_floor_bytes`, is a bomb."""
    lim = lim or current()
    if inflated > lim.max_decompressed_bytes:
        raise InputError(f"inflates to more than {_size(lim.max_decompressed_bytes)} (limit max_decompressed_bytes)",
                         file=file, line=line)
    if inflated > lim.ratio_floor_bytes and inflated > lim.max_compression_ratio * max(stored, 1):
        raise InputError(f"inflates more than {lim.max_compression_ratio}x ({stored:,} stored bytes to over "
                         f"{inflated:,}; limit max_compression_ratio): a decompression bomb?", file=file, line=line)
