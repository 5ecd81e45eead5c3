"""The `ray` engine: the same Check.map code as the local engine, run as Ray tasks on a Ray cluster.

Findings must not depend on where a chunk was mapped, so nothing check-specific lives here: each Ray worker
builds the checks from the contract once (as a forked worker of the local pool does), maps the chunks it is
given, and the driver folds the partials in input order with the very same `reduce`/`finish` as the local
engine. Equality with the local engine is therefore structural, not re-implemented.

The driver streams the split files (hashing them for the run fingerprint, cutting whole lines); parsing,
contract row rules, shingling, MinHash signatures, PII and secrets run on the cluster. A bounded window of
tasks in flight keeps the driver's memory and the object store flat, as the local pool's window does.

A lost node or worker must not end a long check: a map task is a pure function of its byte range, so Ray may run it
again elsewhere (`max_retries`, which also rebuilds a result object lost with its node), and the driver still takes
exactly one result per chunk, in input order, from the task's one ObjectRef. When the retries run out, or no node is
left with a CPU to run them on, the run ends with one line naming the cluster problem (a GateError), not a Ray
traceback.
"""

from __future__ import annotations

import hashlib
import logging
import os
import pickle
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from gate import install_hint
from gate.data.mapper import MapResult, init_worker, map_chunk, projection
from gate.errors import GateError
from gate.io.dataset import Chunk
from gate.settings import count, positive_seconds

# Ray's own default: enough for a preempted node or two in one run, few enough that a chunk that kills every worker
# it lands on (out of memory) fails the run in minutes, not hours
DEFAULT_MAX_RETRIES = 3
# An autoscaling cluster (KubeRay with min replicas 0) needs minutes to bring a worker pod up; waiting that long
# costs a broken cluster five minutes, failing early costs a healthy one the whole run
DEFAULT_CAPACITY_WAIT_S = 300.0
_POLL_S = 1.0  # how often a waiting driver looks at the cluster; one GCS call each time

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


def _quiet_cluster_events() -> Callable[[], None]:
    """Routes the cluster events Ray's driver prints to the `ray` logger (debug) while gate's own driver runs; returns
    the undo.

    Ray's driver prints every cluster event (a node that died, with the last 20 lines of its raylet's log) to stdout
    from a thread of its own, and no option turns that off. gate's stdout is its summary and CI annotations and its
    stderr one line per error; what such an event means for the run is in the run itself (`ray_nodes_lost` in the
    timings) or in the one-line error. Only the events are rerouted, and only while gate's own connection lasts: a
    Ray the caller initialised prints as the caller expects. A Ray without this hook prints as before."""
    try:
        from ray._private import worker
    except ImportError:
        return lambda: None
    original = getattr(worker, "print_to_stdstream", None)
    if original is None:
        return lambda: None
    log = logging.getLogger("ray")

    def to_log(data: dict[str, Any], ignore_prefix: bool) -> None:
        if data.get("pid") == "raylet":  # the event listener's mark; a task's own output keeps its way
            log.debug("ray cluster event: %s", " | ".join(str(x) for x in data.get("lines", [])))
        else:
            original(data, ignore_prefix)

    worker.print_to_stdstream = to_log
    return lambda: setattr(worker, "print_to_stdstream", original)


def _unwrap(exc: BaseException) -> BaseException:
    """A task's GateError (a bad line in a chunk) comes back wrapped; the user must see its one line only."""
    cause = getattr(exc, "cause", None)
    return cause if isinstance(cause, GateError) else exc


def _cluster_error(ray: Any, exc: BaseException, where: str, retries: int) -> BaseException:
    """A failed task as the user must see it: its own GateError (a bad line in a chunk) as it is; a system failure
    that outlived the retries (a node, a worker or an object lost once too often) as one line naming the cluster
    problem; an application error from inside a check (a bug) unchanged, so the CLI reports it as one."""
    if isinstance(exc, ray.exceptions.RayTaskError):
        return _unwrap(exc)
    first = next((line.strip() for line in str(exc).splitlines() if line.strip()), "")
    if len(first) > 120:
        first = first[:117] + "..."
    return GateError(f"ray cluster at {where}: a map task failed after {retries} retries: "
                     f"{type(exc).__name__}: {first}")


class _Capacity:
    """Notices a cluster that can no longer run the tasks: every node offering CPUs is gone.

    Ray keeps a task whose resources no live node offers pending forever (an autoscaler may yet add a node), so the
    driver, not Ray, decides how long to wait: `wait_s` with no CPU anywhere in the cluster, then one line."""

    def __init__(self, ray: Any, where: str, wait_s: float) -> None:
        self.ray, self.where, self.wait_s = ray, where, wait_s
        self.nodes = {n["NodeID"] for n in ray.nodes() if n.get("Alive")}
        self.since: float | None = None

    def check(self) -> None:
        if self.ray.cluster_resources().get("CPU", 0) > 0:
            self.since = None
            return
        now = time.monotonic()
        self.since = self.since if self.since is not None else now
        if now - self.since >= self.wait_s:
            raise GateError(f"ray cluster at {self.where}: no node with a CPU left to run the map tasks for "
                            f"{self.wait_s:g} s ({self.lost()} of {len(self.nodes)} nodes lost during the run); "
                            "GATE_RAY_CAPACITY_WAIT_S sets the wait")

    def lost(self) -> int:
        """How many of the nodes alive when the run began are dead now.

        Ray's GCS marks a node dead only after its health checks fail (seconds after its raylet died), while the
        driver already saw the node's tasks fail and run again elsewhere; so a node the GCS still calls alive counts
        as lost too when its raylet no longer accepts a connection."""
        alive = {n["NodeID"]: n for n in self.ray.nodes() if n.get("Alive")}
        return sum(1 for node in self.nodes if node not in alive or not _raylet_answers(alive[node]))


def _raylet_answers(node: dict[str, Any], timeout_s: float = 1.0) -> bool:
    """Whether the node's raylet still accepts a TCP connection on its node-manager port."""
    address, port = node.get("NodeManagerAddress"), node.get("NodeManagerPort")
    if not address or not port:
        return True  # nothing to probe: trust the GCS
    try:
        with socket.create_connection((address, int(port)), timeout=timeout_s):
            return True
    except OSError:
        return False


def _result(ray: Any, ref: Any, capacity: _Capacity) -> MapResult:
    """The one result of one task (retries included), waiting as long as the cluster can still run it."""
    while True:
        try:
            return ray.get(ref, timeout=min(_POLL_S, capacity.wait_s))
        except ray.exceptions.GetTimeoutError:
            capacity.check()


def _single_host(ray: Any) -> bool:
    """True when every live Ray node is this machine, so a worker can open the split files by path."""
    me = ray.util.get_node_ip_address()
    return all(n.get("NodeManagerAddress") == me for n in ray.nodes() if n.get("Alive"))


def map_chunks(chunks: Iterator[Chunk], contract: Any, names: list[str], checks: list[Any],
               fold: Callable[[MapResult, int], None], *,
               address: str | None = None, workers: int | None = None) -> dict[str, float]:
    """Maps every chunk as a Ray task and folds the results in input order; returns engine timings.

    $GATE_RAY_MAX_RETRIES (default 3) is how often one task may be run again after its node or worker died or its
    result was lost; $GATE_RAY_CAPACITY_WAIT_S (default 300) how long the run waits with no CPU left in the cluster.
    Exceptions raised by the check code itself are not retried: the map is deterministic, so the same chunk would
    raise the same error again."""
    retries = count("GATE_RAY_MAX_RETRIES", DEFAULT_MAX_RETRIES)
    wait_s = positive_seconds("GATE_RAY_CAPACITY_WAIT_S", DEFAULT_CAPACITY_WAIT_S)
    t0 = time.perf_counter()
    started_here = connect(address, workers)
    import ray

    undo_quiet = _quiet_cluster_events() if started_here else (lambda: None)
    t_start = time.perf_counter() - t0
    try:
        token = hashlib.sha256(pickle.dumps((contract.sha256, str(contract.tokenizer), names, os.getpid(),
                                             time.time_ns()))).hexdigest()[:16]
        slots = max(int(ray.cluster_resources().get("CPU", 1)), 1)
        remote = ray.remote(num_cpus=1, max_retries=retries, retry_exceptions=False)(map_chunk_task)
        capacity = _Capacity(ray, address or "a local Ray instance", wait_s)
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
                    fold(_result(ray, ref, capacity), nbytes)
            while window:
                ref, nbytes = window.popleft()
                fold(_result(ray, ref, capacity), nbytes)
        except (ray.exceptions.RayError, GateError) as exc:
            for ref, _ in window:
                ray.cancel(ref)
            if not isinstance(exc, ray.exceptions.RayError):  # the capacity watch's own line
                raise
            # a task's GateError comes back as a RayTaskError that is also a GateError: unwrap it first
            raise _cluster_error(ray, exc, address or "a local Ray instance", retries) from None
        warm.join()
        return {"ray_startup": round(t_start, 4), "ray_slots": float(slots), "ray_nodes_lost": float(capacity.lost())}
    finally:
        if started_here:
            ray.shutdown()
        undo_quiet()
