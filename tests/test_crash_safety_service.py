"""Crash safety of the service's job runner: a real `gate serve` (uvicorn on 127.0.0.1) killed with SIGKILL at random
points, GATE_CRASH_RUNS times (50), and restarted each time.

The kill points are drawn from four kinds: while the server starts (imports, DuckDB opening the file and replaying
its WAL, the recovery of interrupted jobs), while a submission is in flight (JSON, or a 1 MB upload the service
is saving), while a job runs (a check's scan, its
report, its transaction; a score run's requests and its record), and at a random moment after a submission. After
every kill, with the server down, the test asserts:

- the inputs (datasets, contract, scorecard) are byte-for-byte unchanged;
- the DuckDB file opens and reads: every job that was accepted (HTTP 202) is in the queue (none lost), every status
  and attempt count is legal, every recorded check run has its check results, no finding or result without its run,
  a complete score run has exactly its samples, a `done` job's run is recorded;
- an uploaded dataset a job refers to is whole (saved before the job is queued);
- every job's output directory is absent or complete (every report file there, report.json readable; a `done`
  job's report is the one of its recorded run), never partial.

At the end the server runs until the queue is empty: every accepted job is `done`, or `failed` because a restart
interrupted its last attempt (and says so); uploads cut off before their job was queued are gone (swept at
start); a graceful stop leaves no job `running`.
Takes about 60-120 s on 2 cores (most of it 50 server starts); marked slow like tests/test_crash_safety.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("uvicorn")
import duckdb
import httpx

from tests.conftest import CONTRACTS, ROOT, triage_row, write_jsonl

pytestmark = pytest.mark.slow

RUNS = int(os.environ.get("GATE_CRASH_RUNS", "50"))
MAX_ATTEMPTS = 2  # the service's default: an interrupted job runs once more, then fails with the reason
CHECK_FILES = {"report.md", "report.json", "junit.xml"}
SCORE_FILES = {"scores.md", "scores.json"}
DECISION_FILES = {"decision.json", "decision.md"}  # the scorecard's gates: written after the scores, json first
TERMINAL = {"done", "failed"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _tree(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


class Service:
    """`gate serve` as its own process group (a check's worker processes die with it, as in a real crash)."""

    def __init__(self, root: Path, db: Path, state: Path, log: Path) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.args = [sys.executable, "-m", "gate", "serve", "--root", str(root), "--db", str(db), "--state-dir",
                     str(state), "--port", str(self.port), "--check-workers", "1"]
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None

    def spawn(self) -> None:
        env = {**os.environ, "CI": "true"}
        for key in ("GATE_URL", "GATE_TOKEN", "GATE_DEBUG", "GITHUB_ACTIONS"):
            env.pop(key, None)
        with open(self.log, "ab") as fh:
            self.proc = subprocess.Popen(self.args, cwd=ROOT, env=env, stdout=fh, stderr=subprocess.STDOUT,
                                         start_new_session=True)

    def wait_healthy(self, timeout: float = 90) -> float:
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            assert self.proc is not None and self.proc.poll() is None, self.log.read_text()[-3000:]
            try:
                if httpx.get(f"{self.url}/health", timeout=1).status_code == 200:
                    return time.monotonic() - t0
            except httpx.HTTPError:
                pass
            time.sleep(0.03)
        raise AssertionError("the service did not start: " + self.log.read_text()[-3000:])

    def kill9(self) -> None:
        assert self.proc is not None
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(30)

    def stop(self) -> int:
        assert self.proc is not None
        self.proc.terminate()
        try:
            return self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.kill9()
            raise AssertionError("the service did not stop on SIGTERM") from None


@pytest.fixture
def world(tmp_path):
    from gate.service.auth import create_token
    from gate.testing.fake_openai import FakeOpenAI

    root = tmp_path / "root"
    rows = [triage_row(i, f"ticket {i} about a broken widget number {i}") for i in range(40)]
    write_jsonl(root / "clean" / "train.jsonl", rows)
    write_jsonl(root / "dups" / "train.jsonl", [*rows, {**rows[3], "id": "tri-000333"}])
    shutil.copytree(ROOT / "scorecards", root / "scorecards")
    (root / "contracts").mkdir()
    (root / "contracts" / "triage.yaml").write_text((CONTRACTS / "triage.yaml").read_text())
    # an upload big enough (~1 MB) that a kill can land while the service saves it
    upload = b"".join(json.dumps(triage_row(i, f"uploaded ticket {i} about widget {i}")).encode() + b"\n"
                      for i in range(2500))
    db = tmp_path / "g.duckdb"
    tokens = {role: create_token(str(db), f"{role}-bot", role) for role in ("ci", "evaluator", "viewer")}
    model = FakeOpenAI(delay_s=0.05).start()  # a score run of 4 items spans a few hundred milliseconds
    service = Service(root, db, tmp_path / "state", tmp_path / "server.log")
    yield {"root": root, "db": db, "tokens": tokens, "model": model, "service": service, "state": tmp_path / "state",
           "upload": upload}
    if service.proc is not None and service.proc.poll() is None:
        service.kill9()
    model.kill()


def _check_body(rng: random.Random) -> dict[str, object]:
    # not the `contract` check: great-expectations costs ~4 s of CPU to import, in every restarted server
    checks = rng.choice([["exact_duplicate"], ["exact_duplicate", "near_duplicate", "length"]])
    return {"dataset": rng.choice(["clean", "dups"]), "contract": "contracts/triage.yaml", "checks": checks}


def _score_body(model_url: str, n: int) -> dict[str, object]:
    # a new model hash each time: the answers are asked again instead of coming from the response cache
    return {"candidate": "tiny", "scorecard": "scorecards/triage.yaml", "engine": "url", "base_url": model_url,
            "limit": 4, "model_hash": f"sha256:crash-{n}"}


class Submitter:
    """Posts jobs from a thread, so a kill can land while a request is in flight; keeps the ids answered 202."""

    def __init__(self, url: str, tokens: dict[str, str]) -> None:
        self.url = url
        self.tokens = tokens
        self.accepted: dict[str, str] = {}  # job id -> kind
        self.lost_requests = 0  # requests the kill cut off: no answer, so not accepted (may or may not be queued)
        self.refused: list[str] = []

    def post(self, kind: str, body: dict[str, object] | bytes) -> str | None:
        auth = {"Authorization": f"Bearer {self.tokens['evaluator' if kind == 'score' else 'ci']}"}
        try:
            if isinstance(body, bytes):  # an upload
                res = httpx.post(f"{self.url}/checks/upload", files={"file": ("up.jsonl", body)}, timeout=30,
                                 data={"contract": "contracts/triage.yaml", "checks": "exact_duplicate"},
                                 headers=auth)
            else:
                res = httpx.post(f"{self.url}/{'checks' if kind == 'check' else 'scores'}", json=body, timeout=30,
                                 headers=auth)
        except httpx.HTTPError:
            self.lost_requests += 1
            return None
        if res.status_code != 202:  # noted, not asserted: this may run in a thread
            self.refused.append(f"{res.status_code} {res.text[:200]}")
            return None
        self.accepted[res.json()["job_id"]] = kind
        return res.json()["job_id"]

    def post_async(self, kind: str, body: dict[str, object] | bytes) -> threading.Thread:
        t = threading.Thread(target=self.post, args=(kind, body), daemon=True)
        t.start()
        return t


def _job_status(url: str, token: str, job_id: str) -> str | None:
    try:
        return httpx.get(f"{url}/jobs/{job_id}", headers={"Authorization": f"Bearer {token}"}, timeout=5).json()[
            "status"]
    except (httpx.HTTPError, KeyError, ValueError):
        return None


def _verify_record(db: Path, accepted: dict[str, str], state: Path, upload: bytes) -> dict[str, str]:
    """The checks made with the server down; returns job id -> status."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        jobs = {r[0]: r for r in con.execute(
            "SELECT job_id, kind, status, attempts, result, report_dir, error, params FROM jobs").fetchall()}
        missing = set(accepted) - set(jobs)
        assert not missing, f"accepted jobs lost: {sorted(missing)}"
        for job_id, kind, status, attempts, result, report_dir, error, params in jobs.values():
            if json.loads(params).get("uploaded"):  # saved whole before the job was queued
                assert Path(json.loads(params)["dataset"]).read_bytes() == upload, job_id
            assert status in {"queued", "running", "done", "failed"}, (job_id, status)
            assert 0 <= attempts <= MAX_ATTEMPTS, (job_id, attempts)
            assert status == "queued" or attempts >= 1, (job_id, status, attempts)
            assert Path(report_dir) == state / "jobs" / job_id / "report"
            if status == "failed":
                assert error and f"of {MAX_ATTEMPTS}; not retried" in error, (job_id, error)
            if status == "done":
                res = json.loads(result)
                if kind == "check":
                    assert con.execute("SELECT count(*) FROM runs WHERE run_id = ?",
                                       [res["run_id"]]).fetchall()[0][0] == 1, (job_id, res)
                else:
                    assert res == {"complete": True}, (job_id, res)
        # a check run is recorded in one transaction: a run has its results, and nothing hangs without its run
        if con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'runs'").fetchall()[0][0]:
            assert con.execute("SELECT count(*) FROM runs r WHERE NOT EXISTS (SELECT 1 FROM check_results c "
                               "WHERE c.run_id = r.run_id)").fetchall()[0][0] == 0
            for table in ("check_results", "findings"):
                assert con.execute(f"SELECT count(*) FROM {table} t WHERE NOT EXISTS (SELECT 1 FROM runs r "
                                   "WHERE r.run_id = t.run_id)").fetchall()[0][0] == 0, table
            for run_id, checks, n in con.execute(
                    "SELECT r.run_id, r.options->>'checks', count(*) FROM runs r JOIN check_results c USING (run_id) "
                    "GROUP BY ALL").fetchall():
                if checks:
                    assert n == len(json.loads(checks)), (run_id, checks, n)
        # a score run is `incomplete` until its samples land with the status, in one transaction
        if con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'score_runs'").fetchall(
                )[0][0]:
            for run_id, status, items, n in con.execute(
                    "SELECT r.run_id, r.status, r.items, (SELECT count(*) FROM samples s WHERE s.run_id = r.run_id) "
                    "FROM score_runs r").fetchall():
                assert status in {"incomplete", "complete"}, (run_id, status)
                if status == "complete":
                    assert n == items and n > 0, (run_id, items, n)
                else:
                    assert n == 0, (run_id, n)
    finally:
        con.close()
    # outputs: absent or complete, never partial
    for job_id, (_, kind, status, _, result, report_dir, _, _) in jobs.items():
        out = Path(report_dir)
        if not out.exists():
            assert status != "done", f"{job_id}: done without its report"
            continue
        files = {p.name for p in out.iterdir()}
        if kind == "check":
            assert files == CHECK_FILES, (job_id, files)
            doc = json.loads((out / "report.json").read_text())
            assert (out / "report.md").read_text().startswith("## gate check:")
            assert "</testsuites>" in (out / "junit.xml").read_text()
            if status == "done":
                assert doc["run_id"] == json.loads(result)["run_id"], job_id
        else:
            # the scores appear together; the decision files after them, each whole (json before md)
            assert SCORE_FILES <= files <= SCORE_FILES | DECISION_FILES, (job_id, files)
            assert "decision.md" not in files or "decision.json" in files, (job_id, files)
            if status == "done":
                assert files == SCORE_FILES | DECISION_FILES, (job_id, files)
            for name in files & {"scores.json", "decision.json"}:
                json.loads((out / name).read_text())
            assert (out / "scores.md").read_text().strip()
    return {j: r[2] for j, r in jobs.items()}


def test_kill_9_of_the_service_loses_no_job_and_leaves_record_and_outputs_whole(world):
    svc, db, state, tokens = world["service"], world["db"], world["state"], world["tokens"]
    inputs_before = _tree(world["root"])
    rng = random.Random(20261130)
    sub = Submitter(svc.url, tokens)
    kinds = {"start": 0, "in-flight submission": 0, "job running": 0, "random": 0}
    seen_running = 0  # kills that landed while a job was marked running
    start_s = 3.0  # a running estimate of how long a start takes, for kills during the start
    n_score = 0
    t_all = time.monotonic()
    for i in range(RUNS):
        svc.spawn()
        kind = "start" if i % 6 == 5 else rng.choice(["in-flight submission", "job running", "random"])
        if kind == "start":
            time.sleep(rng.uniform(0.05, start_s))
        else:
            start_s = 0.7 * start_s + 0.3 * svc.wait_healthy()
            n_score += 1 if i % 4 == 1 else 0
            job_kind, body = ("score", _score_body(world["model"].url, n_score)) if i % 4 == 1 else (
                "check", _check_body(rng))
            if kind == "in-flight submission":
                if rng.random() < 0.5:
                    job_kind, body = "upload", world["upload"]
                sub.post_async(job_kind, body)
                time.sleep(rng.uniform(0.0, 0.15))
            else:
                job_id = sub.post(job_kind, body)
                if kind == "job running" and job_id:
                    deadline = time.monotonic() + 20
                    while _job_status(svc.url, tokens["viewer"], job_id) not in {"running", "done", "failed"}:
                        assert time.monotonic() < deadline, "the job never started"
                        time.sleep(0.02)
                    time.sleep(rng.uniform(0.0, 0.6))
                else:
                    time.sleep(rng.uniform(0.0, 1.0))
        svc.kill9()
        kinds[kind] += 1
        time.sleep(0.1)  # an in-flight submission thread sees its connection drop
        assert _tree(world["root"]) == inputs_before, f"run {i}: an input changed"
        statuses = _verify_record(db, sub.accepted, state, world["upload"])
        seen_running += "running" in statuses.values()

    # the last start: the queue drains; every accepted job ends done, or failed by a restart (and says so)
    svc.spawn()
    svc.wait_healthy()
    deadline = time.monotonic() + 240
    while True:
        statuses = {j: _job_status(svc.url, tokens["viewer"], j) for j in sub.accepted}
        if set(statuses.values()) <= TERMINAL:
            break
        assert time.monotonic() < deadline, {s: list(statuses.values()).count(s) for s in set(statuses.values())}
        time.sleep(0.3)
    listed = httpx.get(f"{svc.url}/jobs", params={"limit": 1000},
                       headers={"Authorization": f"Bearer {tokens['viewer']}"}).json()
    assert set(sub.accepted) <= {j["job_id"] for j in listed}
    assert not sub.refused, sub.refused
    log_at = svc.log.stat().st_size
    assert svc.stop() in (0, -signal.SIGTERM)  # uvicorn re-raises the signal after its graceful shutdown
    assert "Application shutdown complete" in svc.log.read_bytes()[log_at:].decode(errors="replace")
    final = _verify_record(db, sub.accepted, state, world["upload"])
    # an upload cut off before its job was queued is swept at the next start; every one left has its job
    uploads = {d.name for d in (state / "uploads").iterdir()} if (state / "uploads").exists() else set()
    assert uploads <= set(final), sorted(uploads - set(final))
    assert set(final.values()) <= TERMINAL, final
    done = sum(1 for j in sub.accepted if final[j] == "done")
    failed = len(sub.accepted) - done
    assert _tree(world["root"]) == inputs_before
    print(f"{RUNS} kills {kinds} in {time.monotonic() - t_all:.0f} s; {len(sub.accepted)} jobs accepted "
          f"({sum(k == 'score' for k in sub.accepted.values())} score, "
          f"{sum(k == 'upload' for k in sub.accepted.values())} upload), {done} done, {failed} failed after two "
          f"interrupted attempts; {sub.lost_requests} submissions cut off; a job was running at {seen_running} kills")
    assert kinds["job running"] >= RUNS // 8 and seen_running >= RUNS // 8, (kinds, seen_running)
    assert done >= len(sub.accepted) // 3, (done, failed)
