"""The hard-case queue and corrections through the service: POST /reviews and POST /corrections run in the job
worker (the process with the memory and CPU limits, since both read a pull request's rows), the service records
what they return, and what leaves over HTTP is masked. What could break: a job kind the worker does not know, the
queue or the corrections not recorded, raw text of a row in a job's files or result, a bad corrections file that
writes half a copy, a path outside the roots."""

import json
import time

import pytest
import yaml

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient

from gate.service.app import create_app
from gate.service.auth import create_token
from gate.service.config import ServiceConfig
from tests.conftest import CONTRACTS, FIXTURES, triage_row, write_jsonl

SECRET = "jane.roe@example.org"


def _auth(token):
    return {"Authorization": f"Bearer {token}"}


def _wait(c, job_id, token, limit_s=240):
    deadline = time.monotonic() + limit_s
    while (got := c.get(f"/jobs/{job_id}", headers=_auth(token)).json())["status"] not in ("done", "failed"):
        assert time.monotonic() < deadline, got
        time.sleep(0.2)
    return got


@pytest.fixture(scope="module")
def tiny():
    from fixtures.build_tiny_model import build

    return build(lora=False)[0]


def _root(tmp_path, tiny):
    """A root holding the faulty fixture plus a conflicting pair whose prompt carries an e-mail, the contract (with
    one rule) and the tiny model."""
    import shutil

    root = tmp_path / "root"
    rows = [json.loads(x) for x in (FIXTURES / "triage-faulty" / "train.jsonl").read_text().splitlines() if x]
    text = f"Please write to {SECRET} the app crashes on login every day since the update"
    rows += [triage_row(900, text, {"product": "mobile_app", "severity": "high",
                                    "next_action": "escalate_engineering"}),
             triage_row(901, text, {"product": "mobile_app", "severity": "low", "next_action": "close"})]
    write_review_root(root, rows)
    shutil.copytree(tiny, root / "tiny")
    return root, rows


def write_review_root(root, rows) -> None:
    """A service root for review jobs: `rows` as ds/train.jsonl and the triage contract with one rule
    (`outage-escalates`), its evaluation sets copied inside the root (the service reads nothing outside)."""
    import shutil

    write_jsonl(root / "ds" / "train.jsonl", rows)
    raw = yaml.safe_load((CONTRACTS / "triage.yaml").read_text())
    raw["rules"] = {"outage-escalates": "A crash on login for everyone is escalated to engineering."}
    evals = []
    for i, e in enumerate(raw.get("evaluation_sets") or []):
        shutil.copy(CONTRACTS / e, root / f"eval-{i}.jsonl")
        evals.append(f"eval-{i}.jsonl")
    raw["evaluation_sets"] = evals
    (root / "triage.yaml").write_text(yaml.safe_dump(raw))


def test_a_review_job_runs_in_the_worker_and_its_queue_is_recorded_masked(tmp_path, tiny):
    from gate.store.review import queue_of

    root, rows = _root(tmp_path, tiny)
    faults = json.loads((FIXTURES / "triage-faulty" / "FAULTS.json").read_text())
    planted = {(f["split"], f["row"]) for f in faults if f["check"] == "conflicting_answers"}
    cfg = ServiceConfig(roots=[root], db=str(tmp_path / "g.duckdb"), state_dir=tmp_path / "state")
    ci, viewer = create_token(cfg.db, "ci", "ci"), create_token(cfg.db, "v", "viewer")
    with TestClient(create_app(cfg)) as c:
        res = c.post("/reviews", headers=_auth(ci), json={
            "dataset": "ds", "contract": "triage.yaml", "model": "tiny", "engine": "embedded", "limit": 4,
            "checks": ["conflicting_answers"]})
        assert res.status_code == 202, res.text
        job = res.json()
        # a model directory outside the roots is refused; a served model needs its URL
        out = c.post("/reviews", headers=_auth(ci), json={"dataset": "ds", "contract": "triage.yaml",
                                                          "model": str(tiny)})
        assert out.status_code == 400 and out.json()["detail"].startswith("model:")
        url = c.post("/reviews", headers=_auth(ci), json={"dataset": "ds", "contract": "triage.yaml",
                                                          "model": "m", "engine": "url"})
        assert url.status_code == 400 and "base_url" in url.json()["detail"]
        got = _wait(c, job["job_id"], viewer)
        assert got["status"] == "done" and got["exit_code"] == 0, got["error"]
        result = got["result"]
        assert result["rows_asked"] == 4 and result["engine_errors"] == 0
        assert result["by_reason"]["conflicting_answers"] >= len(planted) + 1
        assert job["params"]["dataset"] == str((root / "ds").resolve())
        lines = c.get(f"/jobs/{job['job_id']}/files/review.jsonl", headers=_auth(viewer))
        page = c.get(f"/jobs/{job['job_id']}/files/review.html", headers=_auth(viewer))
        assert lines.status_code == page.status_code == 200
        cases = [json.loads(x) for x in lines.text.splitlines()]
        assert len(cases) == result["cases"]
        listed = {(x["split"], x["row"]) for x in cases if x["reason"] == "conflicting_answers"}
        assert planted | {("train", len(rows))} <= listed
        for text in (lines.text, page.text, json.dumps(got)):
            assert SECRET not in text
    recorded = queue_of(result["review_id"], cfg.db)
    assert [r["rank"] for r in recorded] == [x["rank"] for x in cases]
    assert {r["model"] for r in recorded} == {str((root / "tiny").resolve())}
    assert not any(SECRET in json.dumps(r, default=str) for r in recorded)


def test_corrections_through_the_service_are_applied_in_the_job_and_recorded(tmp_path, tiny):
    import duckdb

    root, rows = _root(tmp_path, tiny)
    fix = {"id": "tri-000901", "field": "answer.severity", "old": "low", "new": "high",
           "reason": "rule:outage-escalates", "reviewer": "ana", "time": "2026-12-06T08:00:00Z"}
    write_jsonl(root / "good.jsonl", [fix])
    write_jsonl(root / "bad.jsonl", [fix, {**fix, "id": "tri-000900", "old": "medium"}])
    before = (root / "ds" / "train.jsonl").read_bytes()
    cfg = ServiceConfig(roots=[root], db=str(tmp_path / "g.duckdb"), state_dir=tmp_path / "state")
    ci, viewer = create_token(cfg.db, "ci", "ci"), create_token(cfg.db, "v", "viewer")
    with TestClient(create_app(cfg)) as c:
        bad = c.post("/corrections", headers=_auth(ci), json={"dataset": "ds", "corrections": "bad.jsonl",
                                                               "contract": "triage.yaml"}).json()
        good = c.post("/corrections", headers=_auth(ci), json={"dataset": "ds", "corrections": "good.jsonl",
                                                                "contract": "triage.yaml"}).json()
        outside = c.post("/corrections", headers=_auth(ci), json={
            "dataset": "ds", "corrections": str(FIXTURES / "triage-faulty" / "FAULTS.json")})
        assert outside.status_code in (400, 404) and "corrections" in outside.json()["detail"]
        assert c.post("/corrections", headers=_auth(viewer), json={
            "dataset": "ds", "corrections": "good.jsonl"}).status_code == 403
        got_bad = _wait(c, bad["job_id"], viewer)
        got = _wait(c, good["job_id"], viewer)
    # the bad file: one line naming the file, its line and field; nothing written in the job's directory
    assert got_bad["status"] == "failed" and got_bad["exit_code"] == 1
    assert "bad.jsonl:2" in got_bad["error"] and "old" in got_bad["error"] and "\n" not in got_bad["error"]
    assert not (tmp_path / "state" / "jobs" / bad["job_id"] / "report" / "dataset").exists()
    assert got["status"] == "done" and got["exit_code"] == 0, got["error"]
    assert got["result"]["corrections"] == 1 and got["result"]["by_reason"] == {"rule:outage-escalates": 1}
    out = tmp_path / "state" / "jobs" / good["job_id"] / "report" / "dataset"
    fixed = [json.loads(x) for x in (out / "train.jsonl").read_text().splitlines()]
    assert json.loads(fixed[-1]["messages"][-1]["content"])["severity"] == "high"
    assert (root / "ds" / "train.jsonl").read_bytes() == before  # the input is never changed
    con = duckdb.connect(cfg.db, read_only=True)
    recorded = con.execute("SELECT row_id, rule, reviewer FROM corrections").fetchall()
    con.close()
    assert recorded == [("tri-000901", "outage-escalates", "ana")]
