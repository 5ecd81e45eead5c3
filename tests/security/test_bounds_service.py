"""Issue 27 item 8: a service check job runs in a worker process under memory and CPU limits; one that goes over
fails with one clear line, the service stays up, and the next job runs."""

from __future__ import annotations

import gzip
import time
from pathlib import Path

import pytest
import yaml

from tests.conftest import CONTRACTS, triage_row, write_jsonl

# each test starts a worker process that imports the check stack (great-expectations, pandas, scipy): seconds
pytestmark = pytest.mark.slow


def _service(tmp_path: Path, **limits: int):
    from gate.service.config import ServiceConfig

    root = tmp_path / "root"
    write_jsonl(root / "good" / "train.jsonl", [triage_row(i) for i in range(3)])
    raw = yaml.safe_load((CONTRACTS / "triage.yaml").read_text())
    raw["evaluation_sets"] = []
    (root / "c.yaml").write_text(yaml.safe_dump(raw))
    return root, ServiceConfig(roots=[root], db=str(tmp_path / "g.duckdb"), state_dir=tmp_path / "state",
                               run_jobs=False, **limits)


def _run(cfg, root: Path, dataset: str, runner) -> dict:
    from gate.service.jobs import run_one, submit
    from gate.store import service as store

    job = submit(cfg, "check", {"dataset": str(root / dataset), "contract": str(root / "c.yaml"),
                                "checks": ["contract"]}, "t")
    run_one(cfg, store.get_job(cfg.db, job["job_id"]), worker=runner)
    return store.get_job(cfg.db, job["job_id"])


def test_a_job_over_its_memory_limit_fails_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A 300 MB line inflated from ~300 KB (item 7's caps raised, as an operator might): the worker hits its
    address-space limit, not the service; the job fails with one line and the next job is done."""
    import os
    import resource

    from gate.service.worker import CheckWorker

    monkeypatch.setenv("GATE_LIMIT_MAX_COMPRESSION_RATIO", "100000")
    monkeypatch.setenv("GATE_LIMIT_MAX_LINE_BYTES", str(1 << 30))
    root, cfg = _service(tmp_path, job_memory_bytes=256 << 20, job_cpu_seconds=120)
    (root / "bomb").mkdir()
    (root / "bomb" / "train.jsonl.gz").write_bytes(gzip.compress(b'{"id": "' + b"x" * (300 << 20), 6))
    worker = CheckWorker(cfg.job_memory_bytes, cfg.job_cpu_seconds)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    try:
        t0 = time.monotonic()
        bad = _run(cfg, root, "bomb", worker)
        assert bad["status"] == "failed" and "memory limit of 256 MiB" in bad["error"], bad
        assert "\n" not in bad["error"]
        good = _run(cfg, root, "good", worker)
        assert good["status"] == "done" and good["exit_code"] == 0, good["error"]
        assert time.monotonic() - t0 < 120
    finally:
        worker.close()
    # the service process itself never held the data (ru_maxrss is in KiB on Linux)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before < 200 * 1024, os.getpid()


def test_a_job_over_its_cpu_limit_fails_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gate.service.worker import CheckWorker

    monkeypatch.setenv("GATE_LIMIT_MAX_COMPRESSION_RATIO", "100000")
    root, cfg = _service(tmp_path, job_cpu_seconds=1)
    (root / "bomb").mkdir()
    (root / "bomb" / "train.jsonl.gz").write_bytes(gzip.compress(b"{}\n" * 1_000_000, 9))
    worker = CheckWorker(cfg.job_memory_bytes, cfg.job_cpu_seconds)
    try:
        bad = _run(cfg, root, "bomb", worker)
        assert bad["status"] == "failed" and "CPU limit of 1 s" in bad["error"], bad
    finally:
        worker.close()
