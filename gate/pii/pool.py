"""Spreading the fast scan's unique texts over forked worker processes, or scanning them here when that costs more.

Why a module of its own: how many processes to use and how to cut the work is a question of CPUs and sizes, not
of what a scan finds; the scan itself (gate.pii.presidio_engine's `_scan_units`) is passed in, and every piece
gives the same hits in a worker as in this process. The engine is built before the fork, so workers inherit it.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Callable, Sequence
from typing import Any

from gate.io.forking import fork_context
from gate.pii.config import PiiConfig
from gate.pii.spacy_setup import _one_blas_thread

#: Characters of work per worker below which a process pool costs more than it saves (about one second of work:
#: ~300 characters take ~5 ms with NER, ~1 ms without).
_MIN_CHARS_PER_WORKER = {True: 60_000, False: 300_000}

#: A scan of unique chunks: per chunk, its hits, or its hits and entity spans (module level, so a worker can be
#: handed it by name).
ScanUnits = Callable[[Sequence[str], PiiConfig], list[Any]]


def map_units(scan: ScanUnits, units: list[str], config: PiiConfig, *, workers: int | None,
              ner: bool) -> list[Any]:
    """`scan(units, config)`, in `workers` forked processes (None = automatic, 1 = in this process) when there
    are at least two units per worker and fork is safe here; per unit, what `scan` gives, in the order of `units`."""
    n = workers if workers is not None else _auto_workers(sum(map(len, units)), ner)
    # stacklevel 4: a fallback warning names the caller of `scan_texts`, as it did when scan_texts forked itself
    ctx = fork_context("PII scan workers", stacklevel=4) if n > 1 and len(units) >= 2 * n else None
    if ctx is not None:
        size = -(-len(units) // (n * 4))  # 4 pieces per worker balances uneven texts
        pieces = [units[i:i + size] for i in range(0, len(units), size)]
        # the engine and everything else alive now go to the permanent generation first: a collection in a worker
        # would otherwise walk them and copy every page they sit on (15,000 texts, 2 workers: 0.4-0.9 CPU s less)
        gc.freeze()
        try:
            with ctx.Pool(n) as pool:
                parts = pool.map(_worker, [(scan, p, config) for p in pieces], chunksize=1)
        finally:
            gc.unfreeze()
        return [h for part in parts for h in part]
    with _one_blas_thread():
        return scan(units, config)


def _worker(args: tuple[ScanUnits, list[str], PiiConfig]) -> list[Any]:
    """Process-pool entry point (module level so it pickles)."""
    scan, units, config = args
    with _one_blas_thread():
        return scan(units, config)


def _auto_workers(n_chars: int, ner: bool) -> int:
    """Worker count when none is given: the CPUs this process may use, but about a second of work per worker."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, 8, n_chars // _MIN_CHARS_PER_WORKER[ner]))
