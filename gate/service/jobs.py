"""Long work as jobs: queued in DuckDB, run one at a time by a worker thread of the service process; a job that reads
a pull request's data (check, review, apply) runs in a worker process under memory and CPU limits
(gate.service.worker).

Why a thread in the service process and not a separate writer process: DuckDB lets one process write a file, and a
reader in another process holds a shared lock that makes the writer's next connection fail; inside one process,
every read-write connection shares one database instance. So the service process is the only one that opens the
record, and the core's use cases (the CLI's own) write through that same instance from the worker thread.
Why the queue lives in DuckDB: a job survives a crash of the service. At start-up, a job still marked `running`
was interrupted; it is requeued while attempts remain and otherwise failed with the reason, so none is lost.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from gate.errors import ExitCode, GateError
from gate.service.config import ServiceConfig
from gate.store import service as store

log = logging.getLogger("gate.service.jobs")
REPORT_FILES = ("report.md", "report.json", "junit.xml", "scores.md", "scores.json", "review.jsonl", "review.html")
#: the kinds whose data is read in the limited worker process, not in the service
WORKER_KINDS = ("check", "review", "apply")


def new_job_id() -> str:
    return f"job-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(4)}"


def submit(cfg: ServiceConfig, kind: str, params: dict[str, Any], submitted_by: str,
           job_id: str | None = None) -> dict[str, Any]:
    job_id = job_id or new_job_id()
    store.insert_job(cfg.db, job_id, kind, params, submitted_by, str(cfg.jobs_dir / job_id / "report"))
    job = store.get_job(cfg.db, job_id)
    assert job is not None
    return job


def get_job(cfg: ServiceConfig, job_id: str) -> dict[str, Any] | None:
    return store.get_job(cfg.db, job_id)


def list_jobs(cfg: ServiceConfig, *, status: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
    return store.list_jobs(cfg.db, status=status, limit=limit)


_default_workers: dict[tuple[int, int], Any] = {}
_default_lock = threading.Lock()


def default_worker(cfg: ServiceConfig) -> Any:
    """The worker process check jobs run in when the caller has none of its own (gate.service.worker)."""
    from gate.service.worker import CheckWorker

    key = (cfg.job_memory_bytes, cfg.job_cpu_seconds)
    with _default_lock:
        if key not in _default_workers:
            import atexit

            _default_workers[key] = CheckWorker(*key)
            atexit.register(_default_workers[key].close)  # before the interpreter tears the pool's modules down
        return _default_workers[key]


def execute(cfg: ServiceConfig, job: dict[str, Any], worker: Any = None,
            stopping: threading.Event | None = None) -> tuple[int, dict[str, Any]]:
    """Runs one job with the core's use cases (the CLI's own, which print nothing); returns (exit code, result
    summary). Every file the job reads, at any depth (a split symlinked out of a dataset directory, a contract's
    evaluation set, a scorecard's suite), stays under the service's roots or its uploads (gate.io.confine)."""
    from gate.io.confine import use_roots

    roots = [*cfg.roots, cfg.uploads_dir]
    if job["kind"] in WORKER_KINDS:  # the data is read in a worker process under memory and CPU limits
        return _in_worker(cfg, job, worker or default_worker(cfg), roots, stopping)
    with use_roots(roots):
        return _execute(cfg, job)


def _in_worker(cfg: ServiceConfig, job: dict[str, Any], worker: Any, roots: list[Path],
               stopping: threading.Event | None) -> tuple[int, dict[str, Any]]:
    """The job runs (and writes its files) in the worker; the service records what it returns, since the service
    process is the one DuckDB writer."""
    from gate.service.worker import JobLimitReached

    kind, value, extra = worker.run(job["params"], job["report_dir"], roots, cfg.check_workers, stopping,
                                    kind=job["kind"])
    if kind == "crash":
        log.error("job %s crashed:\n%s", job["job_id"], extra)
    if kind in ("memory", "cpu"):
        raise JobLimitReached(value)
    if kind != "ok":
        raise GateError(value)
    return _RECORD[job["kind"]](cfg, value, extra)


def _record_check(cfg: ServiceConfig, code: int, run: Any) -> tuple[int, dict[str, Any]]:
    from gate.store.db import db_path, record_check_run

    record_check_run(run, code, cfg.db)
    run.options["db"] = db_path(cfg.db)
    return code, {"run_id": run.run_id, "verdict": run.verdict, "rows": run.rows}


def _record_review(cfg: ServiceConfig, code: int, got: Any) -> tuple[int, dict[str, Any]]:
    from gate.store.review import record_review

    review_id, review = got
    record_review(review_id, review, cfg.db)
    result: dict[str, Any] = {"review_id": review_id, "cases": len(review.cases), "by_reason": review.by_reason}
    if review.model:
        result.update(rows_asked=review.rows_asked, rows_agreeing=review.rows_agreeing,
                      engine_errors=len(review.engine_errors))
    return code, result


def _record_apply(cfg: ServiceConfig, code: int, got: Any) -> tuple[int, dict[str, Any]]:
    from gate.store.corrections import record_apply

    manifest, out = got
    record_apply(manifest, out, cfg.db)
    return code, {"corrections": manifest.get("corrections", 0), "rows_corrected": manifest.get("rows_corrected", 0),
                  "by_reason": manifest.get("by_reason", {}), "outputs": sorted(manifest.get("outputs") or {})}


_RECORD = {"check": _record_check, "review": _record_review, "apply": _record_apply}


def _execute(cfg: ServiceConfig, job: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    p = job["params"]
    out = job["report_dir"]
    if job["kind"] == "score":
        from gate.requests import ScoreRequest, fields_where
        from gate.score.usecase import score_request

        # the one request the CLI builds too: every field the service accepted reaches the use case (a job queued
        # by an older service lacks the newer fields: their defaults)
        req = ScoreRequest(**{k: p[k] for k in fields_where(ScoreRequest, "remote") if k in p})
        scored = score_request(req, db=cfg.db, out=out)
        code = scored.exit_code
        # complete: every answer scored and recorded; the exit code carries the decision (0 PROMOTE, 100 BLOCK)
        result: dict[str, Any] = {"complete": code in (ExitCode.PASS, ExitCode.GATE_FAILED)}
        if scored.plan.warnings:  # what the CLI says on stderr, the job says in its result
            result["warnings"] = scored.plan.warnings
        return code, result
    if job["kind"] in ("promote", "rollback"):
        from gate.service.release_actions import execute_release_job

        return execute_release_job(cfg, job)
    raise GateError(f"unknown job kind {job['kind']!r}")


def run_one(cfg: ServiceConfig, job: dict[str, Any], stopping: threading.Event | None = None,
            worker: Any = None) -> None:
    """Runs a claimed job and records its end; a bad input is a failed job with the one-line reason.

    A job that breaks while the service stops (its database connection closed under it) is not failed: it stays
    `running`, like one a crash interrupts, and the next start requeues it."""
    Path(job["report_dir"]).parent.mkdir(parents=True, exist_ok=True)
    try:
        code, result = execute(cfg, job, worker, stopping)
    except Exception as exc:
        if stopping is not None and stopping.is_set():
            log.warning("job %s interrupted by the service stopping; it is requeued at the next start", job["job_id"])
            return
        from gate.pii.redact import mask_ident  # the API shows it: a file name in it is one line, masked

        if isinstance(exc, GateError):
            error = mask_ident(str(exc), numbers=False)
        else:  # a bug in a check must not kill the worker; the job says what happened, the log has the traceback
            log.error("job %s crashed:\n%s", job["job_id"], traceback.format_exc())
            error = mask_ident(f"internal error: {type(exc).__name__}: {exc}", numbers=False)
        store.finish_job(cfg.db, job["job_id"], status="failed", exit_code=int(ExitCode.ERROR), result=None,
                         error=error)
        return
    status = "done" if code in (ExitCode.PASS, ExitCode.GATE_FAILED) else "failed"
    # a finished job keeps the note of an earlier interrupted attempt: its history, not an error of this one
    store.finish_job(cfg.db, job["job_id"], status=status, exit_code=code, result=result,
                     error=job.get("error") if status == "done" else "the run did not complete (see its report)")


class JobRunner:
    """One worker thread draining the queue; `wake()` after a submission skips the polling delay."""

    def __init__(self, cfg: ServiceConfig, poll_s: float = 1.0) -> None:
        self.cfg = cfg
        self.poll_s = poll_s
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        from gate.service.worker import CheckWorker

        self.worker = CheckWorker(cfg.job_memory_bytes, cfg.job_cpu_seconds)

    def start(self) -> None:
        for job_id, status in store.recover_interrupted(self.cfg.db, self.cfg.max_attempts):
            log.warning("job %s was interrupted by a restart: now %s", job_id, status)
        self._thread = threading.Thread(target=self._loop, name="gate-jobs", daemon=True)
        self._thread.start()

    def wake(self) -> None:
        self._wake.set()

    def stop(self, timeout: float = 5.0) -> None:
        """Stops taking jobs; a job still running stays `running` and is requeued at the next start."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
        self.worker.close()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                job = store.claim_next_job(self.cfg.db)
            except GateError as exc:
                log.error("cannot read the job queue: %s", exc)
                job = None
            if job is None:
                self._wake.wait(self.poll_s)
                self._wake.clear()
                continue
            run_one(self.cfg, job, self._stop, self.worker)
