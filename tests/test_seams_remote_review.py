"""`gate review` and `gate apply` with GATE_URL set become jobs on the shared service, as `gate check` does
(gate.service.remote): DuckDB admits one writer, and on a shared record that writer is the service. They used to run
locally without a word, writing a record of their own. Against a real `gate serve` process: the job runs and is
recorded there (the local record is never opened), its files come back into the local output directory, the exit code
is the job's; a `local`-only option is refused in one line with exit 2; a service that cannot be reached is one line,
exit 1, no traceback."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytest.importorskip("uvicorn")
import httpx

from tests.conftest import CONTRACTS, gate_inprocess, run_gate, triage_row, write_jsonl
from tests.test_service_restart import Server, _free_port
from tests.test_service_review import write_review_root

CRASH = "the app crashes on login every day since the update"
FIX = {"id": "tri-000901", "field": "answer.severity", "old": "low", "new": "high", "reason": "rule:outage-escalates",
       "reviewer": "ana", "time": "2026-12-06T08:00:00Z"}


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    """A real `gate serve` over one root: a small dataset with one conflicting pair, the triage contract with one
    rule, and two corrections files (one good, one whose `old` does not match the data)."""
    from gate.service.auth import create_token

    base = tmp_path_factory.mktemp("remote-review")
    root = base / "root"
    rows = [triage_row(i, f"ticket {i}: the invoice {i} shows a double charge for march") for i in range(12)]
    rows += [triage_row(900, CRASH, {"product": "mobile_app", "severity": "high",
                                     "next_action": "escalate_engineering"}),
             triage_row(901, CRASH, {"product": "mobile_app", "severity": "low", "next_action": "close"})]
    write_review_root(root, rows)
    write_jsonl(root / "good.jsonl", [FIX])
    write_jsonl(root / "bad.jsonl", [{**FIX, "old": "medium"}])
    db = str(base / "g.duckdb")
    tokens = {name: create_token(db, name, role) for name, role in (("ci", "ci"), ("viewer", "viewer"))}
    server = Server(root, db, base / "state", base / "server.log")
    server.start()
    yield {"url": server.url, "root": root, "base": base, "tokens": tokens}
    server.stop()


@pytest.fixture
def remote(service, tmp_path, monkeypatch, run_gate_env):
    """The CLI's environment: GATE_URL and a ci token, the working directory above the root (so relative paths
    must be sent absolute), and a local record named by GATE_DB that nothing may create."""
    monkeypatch.chdir(service["base"])
    monkeypatch.setenv("GATE_URL", service["url"])
    monkeypatch.setenv("GATE_TOKEN", service["tokens"]["ci"])
    monkeypatch.setenv("GATE_DB", str(tmp_path / "local.duckdb"))
    return service


def _get(service, path, who="viewer"):
    return httpx.get(f"{service['url']}{path}", headers={"Authorization": f"Bearer {service['tokens'][who]}"},
                     timeout=10)


def _job_of(stdout, service):
    ids = re.findall(r"submitted (job-\S+) to ", stdout)
    assert len(ids) == 1, f"no job submitted to the service: {stdout[-500:]}"
    (job_id,) = ids
    return _get(service, f"/jobs/{job_id}").json()


def _no_local_record(service, tmp_path):
    assert not (tmp_path / "local.duckdb").exists() and not (service["base"] / "gate.duckdb").exists()


def test_review_runs_on_the_service_and_its_files_come_back(remote, tmp_path):
    out = tmp_path / "review"
    res = gate_inprocess("review", "root/ds", "-c", "root/triage.yaml", "-o", str(out), "--checks",
                         "conflicting_answers", split=True)
    job = _job_of(res.stdout, remote)
    assert res.returncode == job["exit_code"] == 0, res.stdout + res.stderr
    assert job["kind"] == "review" and job["status"] == "done" and job["submitted_by"] == "ci"
    assert job["params"]["dataset"] == str((remote["root"] / "ds").resolve())  # sent absolute, confined there
    assert job["params"]["checks"] == ["conflicting_answers"]
    for name in ("review.jsonl", "review.html"):  # the job's own files, byte for byte
        assert (out / name).read_bytes() == _get(remote, f"/jobs/{job['job_id']}/files/{name}").content
    cases = [json.loads(x) for x in (out / "review.jsonl").read_text().splitlines()]
    assert len(cases) == job["result"]["cases"] >= 1 and {c["reason"] for c in cases} == {"conflicting_answers"}
    summary = res.stdout.strip().splitlines()[-1]
    assert job["result"]["review_id"] in summary and f"via {remote['url']}" in summary and "review.html" in summary
    _no_local_record(remote, tmp_path)


def test_apply_runs_on_the_service_and_the_corrected_copy_comes_back(remote, tmp_path):
    before = (remote["root"] / "ds" / "train.jsonl").read_bytes()
    out = tmp_path / "fixed"
    res = gate_inprocess("apply", "root/ds", "root/good.jsonl", "-c", "root/triage.yaml", "-o", str(out), split=True)
    job = _job_of(res.stdout, remote)
    assert res.returncode == job["exit_code"] == 0, res.stdout + res.stderr
    assert job["kind"] == "apply" and job["status"] == "done" and job["result"]["corrections"] == 1
    assert job["result"]["by_reason"] == {"rule:outage-escalates": 1}  # recorded by the service with its reason
    assert sorted(p.name for p in out.iterdir()) == ["MANIFEST.json", "train.jsonl"]
    fixed = [json.loads(x) for x in (out / "train.jsonl").read_text().splitlines()]
    assert json.loads(fixed[-1]["messages"][-1]["content"])["severity"] == "high"
    manifest = json.loads((out / "MANIFEST.json").read_text())
    assert manifest["corrections"] == 1 and manifest["rows_corrected"] == 1
    assert (remote["root"] / "ds" / "train.jsonl").read_bytes() == before  # the input is never changed
    assert "1 correction(s) applied to 1 row(s)" in res.stdout and f"via {remote['url']}" in res.stdout
    # the copy is the job's own, read through the shared filesystem: no route sends a dataset's rows
    assert (out / "train.jsonl").read_bytes() == (Path(job["report_dir"]) / "dataset" / "train.jsonl").read_bytes()
    assert _get(remote, f"/jobs/{job['job_id']}/dataset/train.jsonl", "ci").status_code == 404
    assert _get(remote, f"/jobs/{job['job_id']}/files/train.jsonl", "ci").status_code == 404
    _no_local_record(remote, tmp_path)


def test_a_corrected_copy_this_machine_cannot_read_is_one_line_naming_where_it_is(remote, tmp_path, monkeypatch):
    """The service never sends a dataset's rows; where the client does not share its filesystem, the apply job is
    done there and the client says so in one line, exit 1, writing nothing."""
    import gate.service.remote as remote_mod

    monkeypatch.setattr(remote_mod, "_readable", lambda path: False)
    out = tmp_path / "fixed"
    res = gate_inprocess("apply", "root/ds", "root/good.jsonl", "-c", "root/triage.yaml", "-o", str(out), split=True)
    job = _job_of(res.stdout, remote)
    assert job["status"] == "done" and res.returncode == 1, res.stdout + res.stderr
    (line,) = res.stderr.strip().splitlines()
    assert "cannot read" in line and str(Path(job["report_dir"]) / "dataset") in line and "Traceback" not in line
    assert not out.exists()


def test_a_job_that_fails_on_the_service_is_one_line_and_writes_nothing(remote, tmp_path):
    out = tmp_path / "fixed"
    res = gate_inprocess("apply", "root/ds", "root/bad.jsonl", "-c", "root/triage.yaml", "-o", str(out), split=True)
    job = _job_of(res.stdout, remote)
    assert job["status"] == "failed" and res.returncode == job["exit_code"] == 1, res.stdout + res.stderr
    (line,) = res.stderr.strip().splitlines()
    assert line.startswith("gate: error: job ") and "bad.jsonl:1" in line and "Traceback" not in res.stderr
    assert not out.exists()
    _no_local_record(remote, tmp_path)


#: a correction a local run applies (free-text reason: no contract needed)
LOCAL_FIX = {**FIX, "id": "tri-000001", "old": "medium", "reason": "double charge, checked by hand"}


@pytest.mark.parametrize("argv", [("review", "ds", "-c", str(CONTRACTS / "triage.yaml"), "--db", "x.duckdb"),
                                  ("review", "ds", "-c", str(CONTRACTS / "triage.yaml"), "--no-db"),
                                  ("apply", "ds", "corrections.jsonl", "-o", "fixed", "--db", "x.duckdb"),
                                  ("apply", "ds", "corrections.jsonl", "-o", "fixed", "--no-db")])
def test_a_local_only_option_is_refused_in_one_line(argv, tmp_path, monkeypatch, run_gate_env):
    """Refused before the service is asked (it could not honour them: it writes its own record); without GATE_URL
    the same command runs here."""
    monkeypatch.chdir(tmp_path)
    write_jsonl(tmp_path / "ds" / "train.jsonl", [triage_row(1)])
    write_jsonl(tmp_path / "corrections.jsonl", [LOCAL_FIX])
    monkeypatch.setenv("GATE_URL", f"http://127.0.0.1:{_free_port()}")
    res = gate_inprocess(*argv, split=True)
    assert res.returncode == 2 and res.stdout == "", res.stdout + res.stderr
    (line,) = res.stderr.strip().splitlines()
    assert argv[-2 if argv[-1].endswith(".duckdb") else -1] in line and "GATE_URL" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corrections.jsonl", "ds"]  # nothing written


def test_a_service_that_cannot_be_reached_is_one_line(tmp_path):
    write_jsonl(tmp_path / "ds" / "train.jsonl", [triage_row(1)])
    write_jsonl(tmp_path / "corrections.jsonl", [LOCAL_FIX])
    env = {"GATE_URL": f"http://127.0.0.1:{_free_port()}", "GATE_TOKEN": "gate_nope",
           "GATE_DB": str(tmp_path / "local.duckdb")}
    ds, fixes = str(tmp_path / "ds"), str(tmp_path / "corrections.jsonl")
    for argv in (("review", ds, "-c", str(CONTRACTS / "triage.yaml"), "-o", str(tmp_path / "review")),
                 ("apply", ds, fixes, "-o", str(tmp_path / "fixed"))):
        res = run_gate(*argv, env=env)  # a process of its own: what a user sees, traceback or not
        assert res.returncode == 1, (argv, res.stdout, res.stderr)
        (line,) = res.stderr.strip().splitlines()
        assert line.startswith("gate: error: cannot reach the gate service at http://127.0.0.1:"), line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corrections.jsonl", "ds"]  # no output, no record
