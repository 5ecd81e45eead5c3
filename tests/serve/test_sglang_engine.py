"""`--engine sglang` is selectable everywhere the other engines are (issue 16 item 21): `gate score`, build_engine and
the service; without a GPU it ends in one line, exit 1, before any server is launched or any report is written."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from gate.engines.sglang import SGLangEngine, gpu_devices
from tests.conftest import ROOT, run_gate

no_gpu = pytest.mark.skipif(bool(gpu_devices()), reason="this machine has a GPU: tools/gpu-smoke.sh covers it")


@pytest.fixture(scope="module")
def tiny():
    pytest.importorskip("torch")
    from fixtures.build_tiny_model import build

    return build()


def test_build_engine_makes_an_sglang_engine_with_the_parsers_and_adapter(tiny) -> None:
    from gate.score.run import ModelSpec, build_engine

    eng = build_engine("sglang", ModelSpec(role="candidate", model=str(tiny[0]), adapter=str(tiny[1])),
                       tool_parser="hermes", reasoning_parser="qwen3", concurrency=3)
    assert isinstance(eng, SGLangEngine) and eng.client.model == "base:adapter"
    cmd = eng.command
    assert cmd[1:3] == ["-m", "sglang.launch_server"] and cmd[cmd.index("--tool-call-parser") + 1] == "hermes"
    assert cmd[cmd.index("--lora-paths") + 1] == f"adapter={tiny[1]}" and "--reasoning-parser" in cmd
    assert eng.identity.engine == "sglang" and eng.identity.adapter_hash


@no_gpu
def test_gate_score_engine_sglang_without_a_gpu_is_one_line(tiny, tmp_path: Path) -> None:
    out = tmp_path / "out"
    r = run_gate("score", str(tiny[0]), "-s", str(ROOT / "scorecards" / "triage.yaml"), "--engine", "sglang",
                 "--limit", "1", "--db", str(tmp_path / "g.duckdb"), "-o", str(out))
    assert r.returncode == 1, r.stdout + r.stderr
    err = r.stderr.strip().splitlines()
    assert len(err) == 1 and "--engine sglang needs a GPU" in err[0] and "Traceback" not in r.stderr
    assert not (out / "scores.json").exists()


@no_gpu
def test_engine_start_refuses_before_launching_anything(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gate.engines.engine import EngineError

    log = tmp_path / "sglang.log"
    eng = SGLangEngine("m", python=str(tmp_path / "no-python"), log_path=log, port=1)
    with pytest.raises(EngineError, match="needs a GPU"):
        eng.start()
    assert not log.exists() and eng.server.proc is None
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert gpu_devices() == []


@no_gpu
def test_the_service_queues_sglang_score_jobs_and_fails_them_in_one_line(tiny, tmp_path: Path) -> None:
    import shutil

    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from gate.service.app import create_app
    from gate.service.auth import create_token
    from gate.service.config import ServiceConfig

    root = tmp_path / "root"
    shutil.copytree(ROOT / "scorecards", root / "scorecards")
    shutil.copytree(ROOT / "contracts", root / "contracts")
    shutil.copytree(tiny[0], root / "tiny")
    cfg = ServiceConfig(roots=[root], db=str(tmp_path / "g.duckdb"), state_dir=tmp_path / "state")
    ev, viewer = create_token(cfg.db, "ev", "evaluator"), create_token(cfg.db, "v", "viewer")
    with TestClient(create_app(cfg)) as c:
        res = c.post("/scores", headers={"Authorization": f"Bearer {ev}"},
                     json={"candidate": "tiny", "scorecard": "scorecards/triage.yaml", "engine": "sglang",
                           "tool_parser": "hermes", "limit": 1})
        assert res.status_code == 202, res.text
        job_id, deadline = res.json()["job_id"], time.monotonic() + 120
        while (got := c.get(f"/jobs/{job_id}", headers={"Authorization": f"Bearer {viewer}"}).json())["status"] \
                not in ("done", "failed"):
            assert time.monotonic() < deadline, got
            time.sleep(0.2)
    assert got["status"] == "failed" and got["exit_code"] == 1 and "needs a GPU" in got["error"], got
    assert "\n" not in got["error"]


def test_a_tool_scorecard_on_sglang_needs_a_tool_parser(tiny, tmp_path: Path) -> None:
    """Without --tool-call-parser SGLang leaves calls in the text: every tool item would score as 'no call'."""
    r = run_gate("score", str(tiny[0]), "-s", str(ROOT / "tests" / "serve" / "toolcall" / "scorecard.yaml"),
                 "--engine", "sglang", "--db", str(tmp_path / "g.duckdb"), "-o", str(tmp_path / "out"))
    assert r.returncode == 1 and "--engine sglang needs --tool-parser" in r.stderr, r.stdout + r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
