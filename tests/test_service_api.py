"""The service's HTTP surface in-process (FastAPI TestClient): every endpoint under every role, tokens that are
missing, wrong or revoked, dataset paths confined to the roots, body and upload size limits, redacted findings."""

import importlib.util
import time
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient

from gate.service.app import create_app
from gate.service.auth import create_token
from gate.service.config import ServiceConfig
from tests.conftest import CONTRACTS, triage_row, write_jsonl
from tests.tamper import tampered

ROLES = ("ci", "evaluator", "release-manager", "viewer", "admin")


def _dataset(root: Path) -> None:
    rows = [triage_row(i, f"ticket {i} about a broken widget {i}") for i in range(12)]
    rows.append({**rows[2], "id": "tri-000777"})  # one exact duplicate, so the check fails with a finding
    write_jsonl(root / "triage" / "train.jsonl", rows)
    (root / "triage.yaml").write_text((CONTRACTS / "triage.yaml").read_text())
    (root / "scorecard.yaml").write_text("name: x\n")
    (root / "fixes.jsonl").write_text("")


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    base = tmp_path_factory.mktemp("svc")
    root = base / "root"
    _dataset(root)
    (base / "outside.jsonl").write_text('{"id": "secret"}\n')
    (root / "escape.jsonl").symlink_to(base / "outside.jsonl")
    cfg = ServiceConfig(roots=[root], db=str(base / "g.duckdb"), state_dir=base / "state", max_body_bytes=4096,
                        max_upload_bytes=20_000, run_jobs=False)
    tokens = {role: create_token(cfg.db, f"t-{role}", role) for role in ROLES}
    revoked = create_token(cfg.db, "t-gone", "ci")
    from gate.store.service import revoke_token

    assert revoke_token(cfg.db, "t-gone")
    with TestClient(create_app(cfg)) as client:
        yield {"client": client, "cfg": cfg, "tokens": tokens, "revoked": revoked, "base": base, "root": root}


def _auth(token):
    return {"Authorization": f"Bearer {token}"}


def _endpoints(svc):
    """(method, path, request kwargs, roles allowed) for every endpoint but /health and /openapi.json."""
    check = {"json": {"dataset": "triage", "contract": "triage.yaml", "checks": ["exact_duplicate"]}}
    upload = {"files": {"file": ("up.jsonl", b'{"id": 1}\n')}, "data": {"contract": "triage.yaml"}}
    score = {"json": {"candidate": "tiny", "scorecard": "scorecard.yaml", "engine": "url",
                      "base_url": "http://127.0.0.1:9"}}
    review = {"json": {"dataset": "triage", "contract": "triage.yaml", "checks": ["exact_duplicate"]}}
    fixes = {"json": {"dataset": "triage", "corrections": "fixes.jsonl", "contract": "triage.yaml"}}
    everyone = set(ROLES)
    return [
        ("POST", "/checks", check, {"ci"}),
        ("POST", "/reviews", review, {"ci"}),
        ("POST", "/corrections", fixes, {"ci"}),
        ("POST", "/checks/upload", upload, {"ci"}),
        ("POST", "/scores", score, {"evaluator"}),
        ("GET", "/jobs", {}, everyone),
        ("GET", "/jobs/job-none", {}, everyone),
        ("GET", "/jobs/job-none/files/report.md", {}, everyone),
        ("GET", "/checks/runs", {}, everyone),
        ("GET", "/checks/runs/run-none/findings", {}, everyone),
        ("GET", "/scores/runs", {}, everyone),
        ("GET", "/decisions", {}, everyone),
        ("GET", "/releases", {}, everyone),
        ("POST", "/releases/r-none/promote", {}, {"release-manager"}),
        ("POST", "/releases/rollback", {"json": {"reason": "p95 latency doubled"}}, {"release-manager"}),
        ("GET", "/tokens", {}, {"admin"}),
        ("POST", "/tokens", {"json": {"name": "made-in-sweep", "role": "viewer"}}, {"admin"}),
        ("DELETE", "/tokens/t-none", {}, {"admin"}),
    ]


def test_every_endpoint_under_every_role(service):
    c = service["client"]
    for method, path, kw, allowed in _endpoints(service):
        res = c.request(method, path, **kw)
        assert res.status_code == 401, (method, path, res.text)
        assert res.headers["www-authenticate"] == "Bearer"
        for bad in ("not-a-token", service["revoked"], tampered(service["tokens"]["ci"])):
            res = c.request(method, path, headers=_auth(bad), **kw)
            assert res.status_code == 401, (method, path, bad[:12], res.text)
        for role in ROLES:
            res = c.request(method, path, headers=_auth(service["tokens"][role]), **kw)
            if role in allowed:
                expected = {201 if path == "/tokens" else 202} if method == "POST" else (
                    {404} if "none" in path else {200})
                assert res.status_code in expected, (method, path, role, res.status_code, res.text)
            else:
                assert res.status_code == 403, (method, path, role, res.status_code, res.text)
                assert role in res.json()["detail"]


def test_openapi_and_health_are_public_and_list_every_route(service):
    c = service["client"]
    spec = c.get("/openapi.json").json()
    for _, path, _, _ in _endpoints(service):
        template = path.replace("job-none", "{job_id}").replace("run-none", "{run_id}").replace(
            "report.md", "{name}").replace("r-none", "{release_id}").replace("t-none", "{name}")
        assert template in spec["paths"], template
    assert "HTTPBearer" in spec["components"]["securitySchemes"]
    import importlib.util

    if importlib.util.find_spec("gate.dashboard.routes"):  # the dashboard's pages are mounted under /dashboard
        assert "/dashboard/" in spec["paths"]
        assert c.get("/dashboard/").status_code == 401  # the pages need a token too
        assert c.get("/dashboard/", headers=_auth(service["tokens"]["viewer"])).status_code == 200
    assert c.get("/health").json()["status"] == "ok"


def test_an_admin_manages_tokens_over_http(service):
    """The way to manage tokens while the service holds the database: create (shown once), list, revoke."""
    c, admin, viewer = service["client"], service["tokens"]["admin"], service["tokens"]["viewer"]
    res = c.post("/tokens", headers=_auth(admin), json={"name": "new-ci", "role": "ci"})
    assert res.status_code == 201 and res.headers["cache-control"] == "no-store"
    made = res.json()
    assert made["name"] == "new-ci" and made["role"] == "ci" and made["token"].startswith("gate_")
    job = c.post("/checks", headers=_auth(made["token"]), json={"dataset": "triage", "contract": "triage.yaml"})
    assert job.status_code == 202 and job.json()["submitted_by"] == "new-ci"  # the new token works at once
    listed = c.get("/tokens", headers=_auth(admin))
    assert {"name": "new-ci", "role": "ci", "revoked_at": None} in [
        {k: t[k] for k in ("name", "role", "revoked_at")} for t in listed.json()]
    assert made["token"].split("_", 2)[2] not in listed.text and "digest" not in listed.text
    res = c.post("/tokens", headers=_auth(admin), json={"name": "new-ci", "role": "viewer"})
    assert res.status_code == 409 and "already exists" in res.json()["detail"]
    for bad in ({"name": "../x", "role": "ci"}, {"name": "x", "role": "root"}, {"name": "x"}):
        assert c.post("/tokens", headers=_auth(admin), json=bad).status_code == 422, bad
    assert c.delete("/tokens/new-ci", headers=_auth(admin)).json() == {"name": "new-ci", "revoked": True}
    assert c.get("/jobs", headers=_auth(made["token"])).status_code == 401  # revoked: refused at once
    assert c.delete("/tokens/new-ci", headers=_auth(admin)).status_code == 200  # again: still revoked, no error
    assert c.delete("/tokens/ghost", headers=_auth(admin)).status_code == 404
    assert c.post("/tokens", headers=_auth(viewer), json={"name": "sneaky", "role": "admin"}).status_code == 403


def test_submitted_jobs_are_queued_with_confined_real_paths(service):
    c, ci = service["client"], service["tokens"]["ci"]
    res = c.post("/checks", headers=_auth(ci), json={"dataset": str(service["root"] / "triage"),
                                                     "contract": "triage.yaml"})
    assert res.status_code == 202
    job = res.json()
    assert job["status"] == "queued" and job["submitted_by"] == "t-ci"
    assert job["params"]["dataset"] == str((service["root"] / "triage").resolve())
    listed = c.get("/jobs", headers=_auth(service["tokens"]["viewer"]), params={"status": "queued"}).json()
    assert job["job_id"] in {j["job_id"] for j in listed}


@pytest.mark.parametrize("dataset, status, words", [
    ("../outside.jsonl", 400, "'..' is not allowed"),
    ("triage/../../outside.jsonl", 400, "'..' is not allowed"),
    ("/etc/passwd", 400, "outside the service's dataset roots"),
    ("escape.jsonl", 400, "resolves outside"),
    ("nope.jsonl", 404, "no such file"),
    ("", 400, "empty"),
])
def test_paths_are_confined_to_the_roots(service, dataset, status, words):
    c, ci = service["client"], service["tokens"]["ci"]
    res = c.post("/checks", headers=_auth(ci), json={"dataset": dataset, "contract": "triage.yaml"})
    assert res.status_code == status, res.text
    assert words in res.json()["detail"] and res.json()["detail"].startswith("dataset: ")
    res = c.post("/checks", headers=_auth(ci), json={"dataset": "triage", "contract": dataset})
    assert res.status_code == status


def test_request_bodies_and_uploads_have_size_limits(service):
    c, ci, cfg = service["client"], service["tokens"]["ci"], service["cfg"]
    big = {"dataset": "triage", "contract": "triage.yaml", "checks": ["x" * 5000]}
    res = c.post("/checks", headers=_auth(ci), json=big)
    assert res.status_code == 413 and "4096 bytes" in res.json()["detail"]

    def chunks():  # no Content-Length: the limit must hold while the body streams in
        for _ in range(10):
            yield b"x" * 1000
    res = c.post("/checks", headers={**_auth(ci), "Content-Type": "application/json"}, content=chunks())
    assert res.status_code == 413

    before = set(cfg.uploads_dir.glob("*/*")) if cfg.uploads_dir.exists() else set()
    huge = b'{"id": 1}\n' * 3000  # 30 kB > 20 kB
    res = c.post("/checks/upload", headers=_auth(ci), files={"file": ("big.jsonl", huge)},
                 data={"contract": "triage.yaml"})
    assert res.status_code == 413
    after = set(cfg.uploads_dir.glob("*/*")) if cfg.uploads_dir.exists() else set()
    assert after == before  # nothing of the refused upload is kept

    ok = c.post("/checks/upload", headers=_auth(ci), files={"file": ("../../small.jsonl", b'{"id": 1}\n')},
                data={"contract": "triage.yaml"})
    assert ok.status_code == 202
    saved = Path(ok.json()["params"]["dataset"])
    assert saved.parent.parent == cfg.uploads_dir and saved.name == "small.jsonl"  # the name, never its directories
    assert saved.read_bytes() == b'{"id": 1}\n'
    bad = c.post("/checks/upload", headers=_auth(ci), files={"file": ("x.sh", b"echo")},
                 data={"contract": "triage.yaml"})
    assert bad.status_code == 400


def test_every_reader_suffix_can_be_uploaded(service):
    """One suffix list (gate.io): an `.ndjson` or single `.json` upload is a dataset the reader checks, not a 400."""
    from gate.io.dataset import SPLIT_FORMATS

    c, ci = service["client"], service["tokens"]["ci"]
    for suffix in SPLIT_FORMATS:
        res = c.post("/checks/upload", headers=_auth(ci), files={"file": (f"train{suffix}", b'{"id": 1}\n')},
                     data={"contract": "triage.yaml"})
        assert res.status_code == 202, (suffix, res.text)


def test_unknown_fields_are_refused(service):
    c = service["client"]
    res = c.post("/checks", headers=_auth(service["tokens"]["ci"]),
                 json={"dataset": "triage", "contract": "triage.yaml", "rm": "-rf"})
    assert res.status_code == 422
    res = c.post("/scores", headers=_auth(service["tokens"]["evaluator"]),
                 json={"candidate": "tiny", "scorecard": "scorecard.yaml", "engine": "url"})
    assert res.status_code == 400 and "base_url" in res.json()["detail"]
    res = c.get("/jobs", headers=_auth(service["tokens"]["viewer"]), params={"limit": 0})
    assert res.status_code == 422


def test_a_check_job_runs_and_its_findings_are_redacted(tmp_path):
    """With the worker on: the job runs the CLI's check, records the run, and findings leave masked."""
    root = tmp_path / "root"
    secret_mail = "jane.doe.private@example.com"
    rows = [triage_row(i, f"ticket {i} about a broken widget {i}") for i in range(8)]
    rows[5]["messages"][1]["content"] = f"please write to {secret_mail} or call +1 415 555 0199"
    rows.append({**rows[5], "id": "tri-000555"})
    write_jsonl(root / "triage" / "train.jsonl", rows)
    (root / "triage.yaml").write_text((CONTRACTS / "triage.yaml").read_text())
    cfg = ServiceConfig(roots=[root], db=str(tmp_path / "g.duckdb"), state_dir=tmp_path / "state")
    ci, viewer = create_token(cfg.db, "ci", "ci"), create_token(cfg.db, "v", "viewer")
    rm = create_token(cfg.db, "rm", "release-manager")
    with TestClient(create_app(cfg)) as c:
        job = c.post("/checks", headers=_auth(ci), json={"dataset": "triage", "contract": "triage.yaml",
                                                         "checks": ["exact_duplicate"]}).json()
        deadline = time.monotonic() + 120
        while (got := c.get(f"/jobs/{job['job_id']}", headers=_auth(viewer)).json())["status"] not in (
                "done", "failed"):
            assert time.monotonic() < deadline, got
            time.sleep(0.2)
        assert got["status"] == "done" and got["exit_code"] == 100 and got["attempts"] == 1, got
        run_id = got["result"]["run_id"]
        runs = c.get("/checks/runs", headers=_auth(viewer)).json()
        assert [(r["run_id"], r["verdict"], r["exit_code"], r["rows"]) for r in runs] == [(run_id, "fail", 100, 9)]
        res = c.get(f"/checks/runs/{run_id}/findings", headers=_auth(viewer))
        assert res.status_code == 200
        body = res.json()
        assert body["verdict"] == "fail"
        assert [(f["check"], f["row"]) for f in body["findings"]] == [("exact_duplicate", 9)]
        assert secret_mail not in res.text and "555 0199" not in res.text
        # a second layer: even a raw value that reached the record (an older or buggy check) leaves masked
        from gate.store.service import service_db

        with service_db(cfg.db) as con:
            con.execute('INSERT INTO findings (run_id, "check", split, "row", field, rule, severity, message, '
                        "snippet, row_id) VALUES (?, 'pii', 'train', 6, 'messages', 'EMAIL_ADDRESS', 'error', ?, "
                        "?, 'tri-000005')", [run_id, f"found {secret_mail}", f"write to {secret_mail} or call "
                                             "+1 415 555 0199"]).fetchall()
        res = c.get(f"/checks/runs/{run_id}/findings", headers=_auth(viewer))
        pii = [f for f in res.json()["findings"] if f["check"] == "pii"]
        assert len(pii) == 1 and pii[0]["snippet"].startswith("write to ")
        assert secret_mail not in res.text and "555 0199" not in res.text
        md = c.get(f"/jobs/{job['job_id']}/files/report.md", headers=_auth(viewer))
        assert md.status_code == 200 and md.text.startswith("## gate check: ❌ FAIL")
        assert secret_mail not in md.text
        assert c.get(f"/jobs/{job['job_id']}/files/..%2Fparams", headers=_auth(viewer)).status_code == 404

        # a promote goes through the release module in the writer process; an unknown release fails with its reason
        res = c.post("/releases/r-none/promote", headers=_auth(rm))
        assert res.status_code == 202
        deadline = time.monotonic() + 60
        while (got := c.get(f"/jobs/{res.json()['job_id']}", headers=_auth(viewer)).json())["status"] not in (
                "done", "failed"):
            assert time.monotonic() < deadline, got
            time.sleep(0.2)
        assert got["status"] == "failed" and "no release 'r-none'" in got["error"], got
        assert got["submitted_by"] == "rm"


def test_a_score_job_runs_against_a_served_model(tmp_path):
    """An evaluator's score run goes through the CLI's own `gate score` in the writer process and is recorded."""
    import shutil

    from gate.testing.fake_openai import FakeOpenAI
    from tests.conftest import ROOT

    root = tmp_path / "root"
    shutil.copytree(ROOT / "scorecards", root / "scorecards")
    shutil.copytree(ROOT / "contracts", root / "contracts")  # the scorecard reads its contract
    cfg = ServiceConfig(roots=[root], db=str(tmp_path / "g.duckdb"), state_dir=tmp_path / "state")
    ev, viewer = create_token(cfg.db, "ev", "evaluator"), create_token(cfg.db, "v", "viewer")
    srv = FakeOpenAI().start()
    try:
        with TestClient(create_app(cfg)) as c:
            res = c.post("/scores", headers=_auth(ev), json={
                "candidate": "tiny", "scorecard": "scorecards/triage.yaml", "engine": "url", "base_url": srv.url,
                "limit": 3, "model_hash": "sha256:1"})
            assert res.status_code == 202, res.text
            job_id = res.json()["job_id"]
            deadline = time.monotonic() + 180
            dashboard = importlib.util.find_spec("gate.dashboard.routes") is not None
            while (got := _job(c, job_id, viewer))["status"] not in (
                    "done", "failed"):
                assert time.monotonic() < deadline, got
                # reads of every kind while the job writes: the record, and the dashboard's read-only queries
                assert c.get("/releases", headers=_auth(viewer)).status_code == 200
                assert c.get("/scores/runs", headers=_auth(viewer)).status_code == 200
                if dashboard:
                    assert c.get("/dashboard/", headers=_auth(viewer)).status_code == 200
            assert got["status"] == "done" and got["exit_code"] == 0, got["error"]
            assert got["result"] == {"complete": True}
            runs = c.get("/scores/runs", headers=_auth(viewer)).json()
            assert [(r["role"], r["status"], r["items"]) for r in runs] == [("candidate", "complete", 3)]
            md = c.get(f"/jobs/{job_id}/files/scores.md", headers=_auth(viewer))
            assert md.status_code == 200 and "triage" in md.text
        assert srv.calls == 3
    finally:
        srv.kill()


def _job(c, job_id, token):
    res = c.get(f"/jobs/{job_id}", headers=_auth(token))
    assert res.status_code == 200, res.text
    return res.json()


def test_releases_decisions_and_release_moves_on_a_real_record(tmp_path):
    """Reads and moves over a record written by the release module's own writers (the dashboard's seed)."""
    from tests.dashboard_seed import PLANTED, seed_small

    db = str(tmp_path / "g.duckdb")
    seeded = seed_small(db)
    cfg = ServiceConfig(roots=[tmp_path], db=db, state_dir=tmp_path / "state")
    rm, viewer = create_token(db, "rm", "release-manager"), create_token(db, "v", "viewer")
    with TestClient(create_app(cfg)) as c:
        rel = c.get("/releases", headers=_auth(viewer)).json()
        assert rel["current"] == seeded["current"]
        assert [r["release_id"] for r in rel["releases"]] and {r["release_id"] for r in rel["releases"]} == set(
            seeded["releases"])
        decisions = c.get("/decisions", headers=_auth(viewer)).json()
        assert len(decisions) == len(seeded["releases"]) and {d["verdict"] for d in decisions} <= {"PROMOTE", "BLOCK"}
        res = c.get(f"/checks/runs/{seeded['check_run']}/findings", headers=_auth(viewer))
        assert res.status_code == 200 and len(res.json()["findings"]) == 5
        assert not any(v in res.text for v in PLANTED.values())

        other = next(r for r in seeded["releases"] if r != seeded["current"])
        job = c.post(f"/releases/{other}/promote", headers=_auth(rm)).json()
        deadline = time.monotonic() + 60
        while (got := _job(c, job["job_id"], viewer))["status"] not in ("done", "failed"):
            assert time.monotonic() < deadline, got
            time.sleep(0.1)
        # its training data's check failed, so the release module refuses: exit 100, reasons, current unchanged
        assert got["status"] == "done" and got["exit_code"] == 100, got
        assert got["result"]["outcome"] == "refused" and any("data check" in r for r in got["result"]["reasons"])
        assert c.get("/releases", headers=_auth(viewer)).json()["current"] == seeded["current"]

        job = c.post("/releases/rollback", headers=_auth(rm), json={"reason": "error rate doubled"}).json()
        while (got := _job(c, job["job_id"], viewer))["status"] not in ("done", "failed"):
            assert time.monotonic() < deadline, got
            time.sleep(0.1)
        assert got["status"] == "failed" and "first promoted release" in got["error"], got
