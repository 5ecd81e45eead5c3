"""Drives the checks over a dataset: read in chunks, map in worker processes, reduce in order.

Chunks are submitted with a bounded window (never the whole file at once), so peak memory stays flat as
files grow; results are folded in input order, so findings and "first occurrence" rules are deterministic
whatever the number of workers.
"""

from __future__ import annotations

import hashlib
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from gate import __version__
from gate.contract import Contract
from gate.data.base import CheckResult, cpu_seconds, finish_all
from gate.data.mapper import MapResult, init_worker, map_chunk, projection
from gate.data.ray_engine import map_chunks
from gate.data.registry import instantiate, plan, resolve
from gate.io.dataset import Chunk, SplitStats, discover, iter_chunks, refuse_unmapped_splits
from gate.io.forking import fork_context

SMALL_INPUT_BYTES = 8 << 20


@dataclass
class CheckRun:
    """Everything one `gate check` produced; reports and the DuckDB record are rendered from this alone."""

    run_id: str
    dataset: str
    contract: Contract
    splits: list[SplitStats]
    results: list[CheckResult]
    started_at: datetime
    seconds: float
    fingerprint: str
    gate_version: str = __version__
    options: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def verdict(self) -> str:
        return "fail" if any(r.status == "fail" for r in self.results) else "pass"

    @property
    def rows(self) -> int:
        return sum(s.rows for s in self.splits)


def _progress(total_bytes: int, enabled: bool) -> tuple[Callable[[int], None], Callable[[], None]]:
    if not enabled:
        return (lambda n: None), (lambda: None)
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

    bar = Progress(TextColumn("checking"), BarColumn(), DownloadColumn(), TimeRemainingColumn(), transient=True)
    task = bar.add_task("read", total=total_bytes)
    bar.start()
    return (lambda n: bar.advance(task, n)), bar.stop


def show_progress() -> bool:
    """Progress bars on a terminal only; CI logs stay quiet."""
    return sys.stderr.isatty() and not os.environ.get("CI")


def run_checks(dataset: str, contract: Contract, *, checks: list[str] | None = None, workers: int | None = None,
               progress: bool | None = None, chunk_bytes: int | None = None,
               min_parallel_bytes: int = SMALL_INPUT_BYTES, engine: str = "local",
               address: str | None = None, snippets: bool = True) -> CheckRun:
    """Runs the named checks (default: all registered) and returns their results; raises GateError on bad input.

    `engine="ray"` maps the chunks as Ray tasks (at `address`, or on a local Ray) with the same checks.
    `snippets=False` (`--snippets none`): the checks build no snippet (`RunContext.snippets`). Timings:
    `read_and_map` is wall time; `map_cpu` and each check's `seconds` are CPU seconds (process time of the
    process that mapped, summed over workers; see `gate.data.base.cpu_seconds`)."""
    started = datetime.now(UTC)
    t0 = time.perf_counter()
    sources = discover(dataset)
    refuse_unmapped_splits(dataset, sources, contract.split_kind)
    names = resolve(checks)
    planned = plan(contract, names)  # what runs: the same answer `gate contract lint` gives
    instances = instantiate(names, contract)  # one run: its peers and one shared context (no module state)
    for check in instances:  # one shared context; set before any worker forks, so the workers see it
        check.context.snippets = snippets
    total_bytes = sum(s.path.stat().st_size if s.path.is_file() else 0 for s in sources)
    n_workers = workers if workers is not None else (os.cpu_count() or 1)
    if total_bytes < min_parallel_bytes:  # forking workers costs more than it saves on small inputs
        n_workers = min(n_workers, 1)
    stats = {s.split: SplitStats(s.split, s.display, s.format) for s in sources}
    rows_seen = dict.fromkeys(stats, 0)
    ctx = fork_context("check workers") if engine != "ray" and n_workers > 1 else None
    pool = (ctx.Pool(n_workers, initializer=init_worker, initargs=(instances, projection(instances)))
            if ctx is not None else None)  # forked before any thread of ours starts (the bar's, the warm-up's)
    if pool is None and engine != "ray":
        n_workers = 1
    advance, stop = _progress(total_bytes, show_progress() if progress is None else progress)
    map_seconds = 0.0

    def chunks() -> Iterator[Chunk]:
        for src in sources:
            kw = {"chunk_bytes": chunk_bytes} if chunk_bytes else {}
            yield from iter_chunks(src, stats[src.split], **kw)

    def fold(result: MapResult, nbytes: int) -> None:
        nonlocal map_seconds
        split, nrows, partials, secs, per_check = result
        rows_seen[split] += nrows
        map_seconds += secs
        for check, partial, check_secs in zip(instances, partials, per_check, strict=True):
            t1 = cpu_seconds()
            check.reduce(partial)
            check.seconds += check_secs + cpu_seconds() - t1
        advance(nbytes)

    engine_timings: dict[str, float] = {}
    try:
        if engine == "ray":
            engine_timings = map_chunks(chunks(), contract, names, instances, fold, address=address, workers=workers)
        elif pool is None:
            init_worker(instances, projection(instances))
            for chunk in chunks():
                fold(map_chunk(chunk), chunk.nbytes)
        else:
            with pool:
                # started only after the workers are forked, and joined before anything forks again (the PII
                # check's own pool): forking while a thread imports is unsafe
                warm = threading.Thread(target=lambda: [c.warm_up() for c in instances], daemon=True)
                warm.start()
                window: deque[tuple[Any, int]] = deque()
                for chunk in chunks():
                    window.append((pool.apply_async(map_chunk, (chunk.detached(),)), chunk.nbytes))
                    if len(window) >= 2 * n_workers:
                        res, nbytes = window.popleft()
                        fold(res.get(), nbytes)
                while window:
                    res, nbytes = window.popleft()
                    fold(res.get(), nbytes)
                warm.join()
    finally:
        stop()
        if pool is not None:
            pool.terminate()
    for split, n in rows_seen.items():
        stats[split].rows = n
    t_read = time.perf_counter() - t0
    timings = {"read_and_map": round(t_read, 4), "map_cpu": round(map_seconds, 4), **engine_timings}
    finish_all(instances, timings)  # a check that leaves rows to another finishes after it, with its findings
    results = [c.result() for c in instances]
    for res in results:
        if planned[res.name] is not None and not res.findings:
            res.status, res.summary = "skipped", str(planned[res.name])
    fingerprint = hashlib.sha256("".join(f"{s.split}:{s.sha256};" for s in stats.values()).encode()).hexdigest()
    run_id = hashlib.sha256(f"{started.isoformat()}{fingerprint}{contract.sha256}{os.getpid()}".encode()).hexdigest()
    return CheckRun(run_id=run_id[:16], dataset=str(dataset), contract=contract, splits=list(stats.values()),
                    results=results, started_at=started, seconds=time.perf_counter() - t0,
                    fingerprint=fingerprint, timings=timings,
                    options={"checks": names, "engine": engine,
                             "workers": int(engine_timings.get("ray_slots", n_workers))})
