"""The service as a real uvicorn process on 127.0.0.1: tokens made with the CLI, `gate check` sent through it with
GATE_URL, and a job that survives `kill -9` of the server in the middle of its run."""

import os
import signal
import socket
import subprocess
import sys
import time

import pytest

pytest.importorskip("uvicorn")
import httpx

from tests.conftest import CONTRACTS, ROOT, run_gate, triage_row, write_jsonl


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, root, db, state, log):
        self.args = [sys.executable, "-m", "gate", "serve", "--root", str(root), "--db", str(db), "--state-dir",
                     str(state), "--port", str(_free_port()), "--check-workers", "1"]
        self.url = f"http://127.0.0.1:{self.args[-3]}"
        self.log = log
        self.proc = None

    def start(self):
        env = {**os.environ, "CI": "true"}
        env.pop("GATE_URL", None)
        with open(self.log, "ab") as fh:
            self.proc = subprocess.Popen(self.args, cwd=ROOT, env=env, stdout=fh, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, open(self.log).read()
            try:
                if httpx.get(f"{self.url}/health", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.2)
        raise AssertionError("server did not start: " + open(self.log).read())

    def kill9(self):
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    base = tmp_path_factory.mktemp("svc-proc")
    root = base / "root"
    rows = [triage_row(i, f"ticket {i} about a broken widget {i}") for i in range(30)]
    write_jsonl(root / "clean" / "train.jsonl", rows)
    write_jsonl(root / "faulty" / "train.jsonl", [*rows, {**rows[4], "id": "tri-000444"}])
    (root / "triage.yaml").write_text((CONTRACTS / "triage.yaml").read_text())
    db = base / "g.duckdb"
    tokens = {}
    for role in ("ci", "viewer", "admin"):
        res = run_gate("token", "create", "--role", role, "--name", f"{role}-bot", "--db", str(db))
        assert res.returncode == 0, res.stderr
        tokens[role] = res.stdout.strip()
        assert tokens[role].startswith("gate_") and "shown only this once" in res.stderr
    server = Server(root, db, base / "state", base / "server.log")
    server.start()
    yield {"server": server, "root": root, "db": db, "tokens": tokens, "base": base}
    server.stop()


def _wait(url, token, job_id, until, timeout=180):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = httpx.get(f"{url}/jobs/{job_id}", headers={"Authorization": f"Bearer {token}"}, timeout=10).json()
        if job["status"] in until:
            return job
        time.sleep(0.1)
    raise AssertionError(f"job {job_id} never reached {until}: {job}")


def test_cli_check_goes_through_the_service_with_gate_url(setup, tmp_path):
    s, root = setup["server"], setup["root"]
    env = {"GATE_URL": s.url, "GATE_TOKEN": setup["tokens"]["ci"]}
    res = run_gate("check", str(root / "faulty"), "-c", str(root / "triage.yaml"), "-o", str(tmp_path / "rep"),
                   "--checks", "exact_duplicate", env=env)
    assert res.returncode == 100, res.stderr
    assert f"via {s.url}" in res.stdout
    assert (tmp_path / "rep" / "report.md").read_text().startswith("## gate check: ❌ FAIL")
    assert "<failure" in (tmp_path / "rep" / "junit.xml").read_text()

    res = run_gate("check", str(root / "clean"), "-c", str(root / "triage.yaml"), "-o", str(tmp_path / "ok"),
                   "--checks", "exact_duplicate", env=env)
    assert res.returncode == 0, res.stderr
    runs = httpx.get(f"{s.url}/checks/runs", headers={"Authorization": f"Bearer {setup['tokens']['viewer']}"}).json()
    assert [r["verdict"] for r in runs[:2]] == ["pass", "fail"]  # recorded by the service, newest first

    # refusals are one line, exit 1, and leave no report behind
    for bad_env, words in (({**env, "GATE_TOKEN": setup["tokens"]["viewer"]}, "HTTP 403"),
                           ({**env, "GATE_TOKEN": "gate_nope"}, "HTTP 401")):
        res = run_gate("check", str(root / "clean"), "-c", str(root / "triage.yaml"), "-o", str(tmp_path / "no"),
                       env=bad_env)
        assert res.returncode == 1 and words in res.stderr and len(res.stderr.strip().splitlines()) == 1
        assert not (tmp_path / "no").exists()
    res = run_gate("check", str(setup["base"] / "server.log"), "-c", str(root / "triage.yaml"), "-o",
                   str(tmp_path / "no"), env=env)
    assert res.returncode == 1 and "outside the service's dataset roots" in res.stderr


def test_gate_token_while_the_service_holds_the_database(setup):
    """Locally: one line at once naming the service and the way through it; through it (--url): create, list,
    revoke with an admin token."""
    s, db = setup["server"], str(setup["db"])
    t0 = time.monotonic()
    res = run_gate("token", "create", "--role", "viewer", "--name", "late", "--db", db)
    assert res.returncode == 1, res.stderr
    line = res.stderr.strip()
    assert len(line.splitlines()) == 1 and "Traceback" not in line
    assert line.startswith(f"gate: error: {db}: a running `gate serve` (PID {s.proc.pid}) holds the gate database")
    assert f"--url {s.url}` and an admin token in GATE_TOKEN" in line
    assert time.monotonic() - t0 < 8  # said at once, not after the 10 s wait for a short-lived writer
    for args in (("list",), ("revoke", "ci-bot")):
        res = run_gate("token", *args, "--db", db)
        assert res.returncode == 1 and "a running `gate serve`" in res.stderr, res.stderr

    admin = {"GATE_TOKEN": setup["tokens"]["admin"]}
    res = run_gate("token", "create", "--role", "viewer", "--name", "late", "--url", s.url, env=admin)
    assert res.returncode == 0, res.stderr
    late = res.stdout.strip()
    assert late.startswith("gate_") and f"created on {s.url}" in res.stderr
    auth = {"Authorization": f"Bearer {late}"}
    assert httpx.get(f"{s.url}/jobs", headers=auth).status_code == 200
    res = run_gate("token", "list", env={**admin, "GATE_URL": s.url})  # GATE_URL does as well as --url
    assert res.returncode == 0 and "late\tviewer" in res.stdout and "gate_" not in res.stdout, res.stderr
    res = run_gate("token", "revoke", "late", "--url", s.url, env=admin)
    assert res.returncode == 0 and "revoked" in res.stdout, res.stderr
    assert httpx.get(f"{s.url}/jobs", headers=auth).status_code == 401
    # a token that may not manage tokens, and none at all: one line each
    res = run_gate("token", "list", "--url", s.url, env={"GATE_TOKEN": setup["tokens"]["ci"]})
    assert res.returncode == 1 and "HTTP 403" in res.stderr and len(res.stderr.strip().splitlines()) == 1
    res = run_gate("token", "list", "--url", s.url, env={"GATE_TOKEN": ""})
    assert res.returncode == 1 and "GATE_TOKEN: an admin token is needed" in res.stderr


def test_a_job_survives_kill_9_of_the_server(setup):
    """kill -9 while the job runs; after the restart the job is requeued and finishes: never lost."""
    s, ci = setup["server"], setup["tokens"]["ci"]
    res = httpx.post(f"{s.url}/checks", headers={"Authorization": f"Bearer {ci}"},
                     json={"dataset": "clean", "contract": "triage.yaml", "checks": ["contract", "exact_duplicate"]})
    assert res.status_code == 202, res.text
    job_id = res.json()["job_id"]
    running = _wait(s.url, ci, job_id, {"running", "done", "failed"})
    assert running["status"] == "running", "the job finished before the kill; the test proves nothing"
    s.kill9()
    s.start()
    job = _wait(s.url, ci, job_id, {"done", "failed"})
    assert job["status"] == "done" and job["exit_code"] == 0, job
    assert job["attempts"] == 2
    assert "interrupted by a service restart during attempt 1; requeued" in job["error"]
    assert job["result"]["verdict"] == "pass"
    listed = httpx.get(f"{s.url}/jobs", headers={"Authorization": f"Bearer {ci}"}).json()
    assert job_id in {j["job_id"] for j in listed}
