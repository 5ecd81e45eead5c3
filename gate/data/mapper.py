"""The map side of a check run: one chunk parsed and passed through every check, in whatever process holds it.

The local engine (gate.data.runner: in-process, or forked pool workers) and the Ray engine (gate.data.ray_engine:
one Ray task per chunk) run exactly this function, so a finding can never depend on the engine. It lives apart from
both because both need it and neither needs the other's machinery.
"""

from __future__ import annotations

import gc
from typing import Any

from gate.data.base import Batch, Check, cpu_seconds
from gate.io.dataset import Chunk
from gate.io.rows import parse_chunk

# per worker process (set by `init_worker`, the pool initializer): the checks this process maps chunks through
_WORKER_CHECKS: list[Check] = []
_WORKER_FIELDS: tuple[str, ...] | None = None

#: what `map_chunk` returns: split, rows parsed, each check's partial result, map seconds, each check's seconds
MapResult = tuple[str, int, list[Any], float, list[float]]


def init_worker(checks: list[Check], fields: tuple[str, ...] | None = None) -> None:
    """Installs the checks (and the row keys to parse) that this process's `map_chunk` calls use."""
    global _WORKER_CHECKS, _WORKER_FIELDS
    _WORKER_CHECKS = checks
    _WORKER_FIELDS = fields


def projection(checks: list[Check]) -> tuple[str, ...] | None:
    """The union of the checks' declared row keys; None (whole rows) as soon as one check reads the whole row."""
    if not checks or any(c.fields is None for c in checks):
        return None
    return tuple(sorted({f for c in checks for f in c.fields or ()}))


def map_chunk(chunk: Chunk) -> MapResult:
    """Maps one chunk through every check; also returns the CPU seconds of the whole map and of each check's own
    map (for `pii` and `secret` the map phase is the whole work, so a check's `seconds` would be 0.0 without them).
    """
    t0 = cpu_seconds()
    # parsed rows are acyclic JSON: the cyclic collector only churns over millions of fresh dicts (2x slower)
    gc_was_on = gc.isenabled()
    gc.disable()
    try:
        chunk = chunk.attached()
        rows = parse_chunk(chunk, _WORKER_FIELDS)
        batch = Batch(chunk.split, chunk.file, rows)
        partials, per_check = [], []
        for c in _WORKER_CHECKS:
            t1 = cpu_seconds()
            partials.append(c.map(batch))
            per_check.append(cpu_seconds() - t1)
    finally:
        if gc_was_on:
            gc.enable()
    return chunk.split, len(rows), partials, cpu_seconds() - t0, per_check
