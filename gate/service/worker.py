"""Jobs that read a pull request's data (check, review, apply) run in a worker process under a memory and a CPU
limit, never inside the service process.

Why: a check reads whatever was uploaded. Inside the service, one job that eats memory (a decompression bomb, a
flood of findings) takes the API and the queue down with it: the issue measured 5 GB and a MemoryError in the
service while the next job waited. In a worker, `RLIMIT_AS` (address space: `job_memory_bytes` on top of what the
worker holds once its modules are imported) turns the same job into a MemoryError there, and `RLIMIT_CPU`
(`job_cpu_seconds` of CPU per job, counted from the job's start) into a SIGXCPU there; the job fails with one line
and the next one runs. If the worker dies anyway, the pool is rebuilt for the next job.

Why the record is still written by the service: DuckDB lets one process write a file, and the service holds it.
The worker runs the job and writes its files (record=False); the service records what the job returns.
"""

from __future__ import annotations

import copyreg
import resource
import signal
import threading
import traceback
import types
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from gate.errors import GateError

MIB = 1 << 20


def _proxy(d: dict[Any, Any]) -> types.MappingProxyType:
    return types.MappingProxyType(d)


def _reduce_proxy(m: types.MappingProxyType) -> tuple[Any, ...]:
    return (_proxy, (dict(m),))


copyreg.pickle(types.MappingProxyType, _reduce_proxy)  # a Contract's frozen sections travel back with the run


class JobLimitReached(GateError):
    """A job went over its worker's memory or CPU limit."""


class _CpuLimit(BaseException):
    """Raised in the worker by SIGXCPU; a BaseException, so that no `except Exception` in a check swallows it."""


#: what every check job imports (numpy, Arrow, great-expectations with pandas and scipy map ~1.5 GiB of address
#: space, most of it never touched): imported before the limit
#: is set, so that `job_memory_bytes` is what the job itself may add
_WARM = ("numpy", "pyarrow", "pyarrow.parquet", "orjson", "msgspec", "xxhash", "jsonschema", "pandas", "scipy",
         "great_expectations", "gate.contract.expectations", "gate.data.usecase",
         "gate.data.runner", "gate.report.check_report", "gate.store.db", *(f"gate.data.checks.{c}" for c in (
             "contract", "exact_duplicate", "near_duplicate", "group_split", "length", "boilerplate",
             "contamination")))
_cpu_seconds = 0
_memory_bytes = 0


def _vm_size() -> int:
    try:
        for line in open("/proc/self/status", encoding="ascii"):
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _on_xcpu(signum: int, frame: Any) -> None:
    raise _CpuLimit


def _die_with_parent() -> None:
    """A service killed with -9 must not leave its worker running a job (and writing that job's reports) while the
    restarted service runs the same job again: Linux kills the worker when the service dies."""
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the worker ends when its pipe to the service closes
        pass


def _init(memory_bytes: int, cpu_seconds: int) -> None:
    """In the worker, once: the heavy modules first (the limit is on what a job adds), then the limits."""
    global _cpu_seconds, _memory_bytes
    import importlib

    _die_with_parent()

    for name in _WARM:
        try:
            importlib.import_module(name)
        except ImportError:  # an optional extra not installed: its check says so when asked for
            pass
    _cpu_seconds, _memory_bytes = cpu_seconds, memory_bytes
    signal.signal(signal.SIGXCPU, _on_xcpu)
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = _vm_size() + memory_bytes
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _cpu_used() -> float:
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


def run_check(params: dict[str, Any], report_dir: str, roots: list[str], check_workers: int,
              kind: str = "check") -> tuple[str, Any, Any]:
    """In the worker: one job of `kind` (check, review, apply). Returns ("ok", exit code, what the service records),
    or (kind, one-line error, log text) with kind `error` (bad input), `memory`, `cpu` or `crash`."""
    from gate.io.confine import use_roots

    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    resource.setrlimit(resource.RLIMIT_CPU, (int(_cpu_used()) + _cpu_seconds, hard))
    try:
        with use_roots(roots):
            code, result = _JOBS[kind](params, report_dir, check_workers)
        return "ok", int(code), result
    except _CpuLimit:
        return "cpu", f"the job went over its CPU limit of {_cpu_seconds:,} s (job_cpu_seconds) and was stopped", ""
    except MemoryError:
        return ("memory", f"the job went over its memory limit of {_memory_bytes // MIB:,} MiB (job_memory_bytes) "
                "and was stopped", "")
    except GateError as exc:
        return "error", str(exc), ""
    except Exception as exc:  # a bug in a check: the job says what, the service log gets the traceback
        return "crash", f"internal error: {type(exc).__name__}: {exc}", traceback.format_exc()
    finally:
        resource.setrlimit(resource.RLIMIT_CPU, (hard, hard))


def _remote(cls: type, params: dict[str, Any]) -> dict[str, Any]:
    """The request's remote fields as sent; what only the service decides (its record, its cores) the caller sets."""
    from gate.requests import fields_where

    return {k: v for k, v in params.items() if k in fields_where(cls, "remote")}


def _check(params: dict[str, Any], report_dir: str, check_workers: int) -> tuple[int, Any]:
    from gate.data.usecase import check_dataset
    from gate.requests import CheckRequest

    req = CheckRequest(**_remote(CheckRequest, params), report_dir=report_dir, db=None, record=False,
                       workers=check_workers)
    run, code = check_dataset(req, progress=False)
    return code, run


def _review(params: dict[str, Any], report_dir: str, check_workers: int) -> tuple[int, Any]:
    """The queue and its files; the service records it (review id, review) as the CLI does."""
    from gate.errors import ExitCode
    from gate.requests import ReviewRequest
    from gate.review.files import write_review
    from gate.review.queue import build_review

    req = ReviewRequest(**_remote(ReviewRequest, params), out=report_dir, db=None, record=False, quiet=True)
    review = build_review(req, progress=False)
    review_id = write_review(review, report_dir)
    # incomplete (rows the engine could not answer) is exit 1 as for the CLI: the queue lacks those rows
    return (ExitCode.ERROR if review.engine_errors else ExitCode.PASS), (review_id, review)


def _apply(params: dict[str, Any], report_dir: str, check_workers: int) -> tuple[int, Any]:
    """The corrected copy goes into the job's own directory (`dataset/`), never to a path the caller names."""
    from gate.contract import load_contract
    from gate.data.corrections import apply_corrections
    from gate.errors import ExitCode
    from gate.requests import ApplyRequest

    req = ApplyRequest(**_remote(ApplyRequest, params), out=str(Path(report_dir) / "dataset"), db=None,
                       record=False)
    contract = load_contract(req.contract) if req.contract else None
    outcome = apply_corrections(req.dataset, req.corrections, req.out, contract)
    return ExitCode.PASS, (outcome.manifest, req.out)


_JOBS = {"check": _check, "review": _review, "apply": _apply}


class CheckWorker:
    """One worker process (spawned, not forked: the service holds threads and a DuckDB instance), reused across
    jobs while it lives, rebuilt when it dies."""

    def __init__(self, memory_bytes: int, cpu_seconds: int) -> None:
        self.memory_bytes = memory_bytes
        self.cpu_seconds = cpu_seconds
        self._pool: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()

    def _executor(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._pool is None:
                import multiprocessing

                self._pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                                                 initializer=_init, initargs=(self.memory_bytes, self.cpu_seconds))
            return self._pool

    def run(self, params: dict[str, Any], report_dir: str, roots: list[Path], check_workers: int,
            stopping: threading.Event | None = None, kind: str = "check") -> tuple[str, Any, Any]:
        """Runs one job in the worker; a worker that dies is a failed job and a fresh worker next time."""
        future: Future[tuple[str, Any, Any]] = self._executor().submit(
            run_check, params, report_dir, [str(r) for r in roots], check_workers, kind)
        try:
            while True:
                try:
                    return future.result(timeout=0.5)
                except TimeoutError:
                    if stopping is not None and stopping.is_set():
                        self.close()
                        raise
        except BrokenProcessPool:
            self.close()
            return ("memory", "the job's worker process died (over its memory limit of "
                    f"{self.memory_bytes // MIB:,} MiB or its CPU limit of {self.cpu_seconds:,} s?) and was "
                    "stopped", "")

    def close(self) -> None:
        """Stops the worker now (a job still running in it is abandoned)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is None:
            return
        procs = list((getattr(pool, "_processes", None) or {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        for proc in procs:  # an idle worker exits at once; one still busy with a job is killed
            proc.join(1.0)
            if proc.is_alive():
                proc.kill()
                proc.join(1.0)
