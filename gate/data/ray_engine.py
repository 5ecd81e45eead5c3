"""The `ray` engine: the same Check.map code as the local engine, run as Ray tasks on a Ray cluster.

Findings must not depend on where a chunk was mapped, so nothing check-specific lives here: each Ray worker
builds the checks from the contract once (as a forked worker of the local pool does), maps the chunks it is
given, and the driver folds the partials in input order with the very same `reduce`/`finish` as the local
engine. Equality with the local engine is therefore structural, not re-implemented.

The driver streams the split files (hashing them for the run fingerprint, cutting whole lines); parsing,
contract row rules, shingling, MinHash signatures, PII and secrets run on the cluster. A bounded window of
tasks in flight keeps the driver's memory and the object store flat, as the local pool's window does.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from gate import install_hint
from gate.data.mapper import MapResult, init_worker, map_chunk, projection
from gate.errors import GateError
from gate.io.dataset import Chunk

# per Ray worker process: the checks built for one (contract, check names) pair, reused by every task of a run
_WORKER_CACHE: dict[str, list[Any]] = {}


def _worker_checks(token: str, contract: Any, names: list[str]) -> list[Any]:
    checks = _WORKER_CACHE.get(token)
    if checks is None:
        from gate.data.registry import CHECKS

        _WORKER_CACHE.clear()  # one run at a time per worker: a long-lived cluster must not pile up checks
        checks = _WORKER_CACHE[token] = [CHECKS[n](contract) for n in names]
    return checks


def map_chunk_task(token: str, contract: Any, names: list[str], chunk: Chunk) -> MapResult:
    """The body of one Ray task: exactly the local engine's worker function, on checks built in this worker."""
    checks = _worker_checks(token, contract, names)
    init_worker(checks, projection(checks))
    return map_chunk(chunk)


def connect(address: str | None, num_cpus: int | None) -> bool:
    """Joins the cluster at `address` ("auto", "ray://host:port", "host:port") or starts a local one.

    Returns True when this call started Ray (so the caller shuts it down again). An already initialised Ray
    (a notebook, a test module) is used as it is.
    """
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        import ray
    except ImportError:
        raise GateError(f"--engine ray needs the 'ray' extra ({install_hint('ray')})") from None
    if ray.is_initialized():
        return False
    kw: dict[str, Any] = {"log_to_driver": False, "logging_level": "ERROR", "configure_logging": True}
    try:
        if address:
            ray.init(address=address, **kw)
        else:
            ray.init(num_cpus=num_cpus or os.cpu_count() or 1, include_dashboard=False, **kw)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        where = address or "a local Ray instance"
        raise GateError(f"cannot connect to {where}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
                        ) from None
    return True


def _unwrap(exc: BaseException) -> BaseException:
    """A task's GateError (a bad line in a chunk) comes back wrapped; the user must see its one line only."""
    cause = getattr(exc, "cause", None)
    return cause if isinstance(cause, GateError) else exc


def _single_host(ray: Any) -> bool:
    """True when every live Ray node is this machine, so a worker can open the split files by path."""
    me = ray.util.get_node_ip_address()
    return all(n.get("NodeManagerAddress") == me for n in ray.nodes() if n.get("Alive"))


def map_chunks(chunks: Iterator[Chunk], contract: Any, names: list[str], checks: list[Any],
               fold: Callable[[MapResult, int], None], *,
               address: str | None = None, workers: int | None = None) -> dict[str, float]:
    """Maps every chunk as a Ray task and folds the results in input order; returns engine timings."""
    t0 = time.perf_counter()
    started_here = connect(address, workers)
    import ray

    t_start = time.perf_counter() - t0
    try:
        token = hashlib.sha256(pickle.dumps((contract.sha256, str(contract.tokenizer), names, os.getpid(),
                                             time.time_ns()))).hexdigest()[:16]
        slots = max(int(ray.cluster_resources().get("CPU", 1)), 1)
        remote = ray.remote(num_cpus=1, max_retries=0)(map_chunk_task)
        contract_ref = ray.put(contract)
        # on one host the workers read their byte range themselves (checksummed); across hosts the bytes travel
        local = _single_host(ray)
        warm = threading.Thread(target=lambda: [c.warm_up() for c in checks], daemon=True)
        warm.start()
        window: deque[tuple[Any, int]] = deque()
        try:
            for chunk in chunks:
                task_chunk = chunk.detached() if local else chunk
                window.append((remote.remote(token, contract_ref, names, task_chunk), chunk.nbytes))
                if len(window) >= 2 * slots:
                    ref, nbytes = window.popleft()
                    fold(ray.get(ref), nbytes)
            while window:
                ref, nbytes = window.popleft()
                fold(ray.get(ref), nbytes)
        except ray.exceptions.RayTaskError as exc:
            for ref, _ in window:
                ray.cancel(ref)
            raise _unwrap(exc) from None
        warm.join()
        return {"ray_startup": round(t_start, 4), "ray_slots": float(slots)}
    finally:
        if started_here:
            ray.shutdown()
