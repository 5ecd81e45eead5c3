"""Issue 27 items 9-10 through the service: a check job's findings, result and error show no raw identifier."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient

from gate.service.app import create_app
from gate.service.auth import create_token
from gate.service.config import ServiceConfig
from tests.conftest import write_jsonl

EMAIL_ID = "jane.roe.leak@example.org"
CONTRACT = "name: sec\nversion: 1\nmessages:\n  roles: [user, assistant]\nchecks:\n  pii:\n    use_ner: false\n"


def _row(rid: str, text: str) -> dict:
    return {"id": rid, "messages": [{"role": "user", "content": text}, {"role": "assistant", "content": "ok"}]}


def _wait(c: TestClient, job_id: str, auth: dict) -> dict:
    deadline = time.monotonic() + 120
    while (got := c.get(f"/jobs/{job_id}", headers=auth).json())["status"] not in ("done", "failed"):
        assert time.monotonic() < deadline, got
        time.sleep(0.2)
    return got


def test_service_findings_and_errors_show_no_raw_identifier(tmp_path: Path) -> None:
    root = tmp_path / "root"
    write_jsonl(root / "ds" / "train.jsonl", [_row(EMAIL_ID, "write to noor.haddad41@example.com")])
    (root / "bad").mkdir(parents=True)
    (root / "bad" / "train\n::add-mask::hunter2\nx.jsonl").write_text(
        json.dumps(_row("r1", "hi")) + "\nnot json\n")
    (root / "c.yaml").write_text(CONTRACT)
    # the odd file is mapped to train, so the job reads it and fails on its bad line (an unmapped name is refused
    # before any row is read, with the same escaped name)
    (root / "bad.yaml").write_text(CONTRACT + 'splits:\n  train: ["train*"]\n')
    cfg = ServiceConfig(roots=[root], db=str(tmp_path / "g.duckdb"), state_dir=tmp_path / "state")
    ci, viewer = create_token(cfg.db, "ci", "ci"), create_token(cfg.db, "v", "viewer")
    auth = {"Authorization": f"Bearer {viewer}"}
    with TestClient(create_app(cfg)) as c:
        job = c.post("/checks", headers={"Authorization": f"Bearer {ci}"},
                     json={"dataset": "ds", "contract": "c.yaml", "checks": ["pii"]}).json()
        got = _wait(c, job["job_id"], auth)
        assert got["status"] == "done" and got["exit_code"] == 100, got
        res = c.get(f"/checks/runs/{got['result']['run_id']}/findings", headers=auth)
        assert res.status_code == 200 and [f["row_id"] for f in res.json()["findings"]] == ["j***@e***.org"]
        assert EMAIL_ID not in res.text and EMAIL_ID not in json.dumps(got)
        bad = c.post("/checks", headers={"Authorization": f"Bearer {ci}"},
                     json={"dataset": "bad", "contract": "bad.yaml", "checks": ["pii"]}).json()
        got = _wait(c, bad["job_id"], auth)
        assert got["status"] == "failed" and "malformed JSON" in got["error"], got
        assert "\n" not in got["error"] and "\\n::add-mask::" in got["error"], got
