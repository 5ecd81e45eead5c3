"""`gate score` ends with the release decision: PROMOTE / BLOCK with a baseline, the target check without one.

Both models are served by the real OpenAI-compatible test server (gate/testing/fake_openai.py) through the url engine,
answering the triage scorecard's held-out tickets: "tiny" with the expected JSON, "tinylora" with a
valid but wrong product.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gate.testing.fake_openai import FakeOpenAI, triage_model
from tests.conftest import ROOT, run_gate

TRIAGE = ROOT / "scorecards" / "triage.yaml"
LIMIT = 24


@pytest.fixture(scope="module")
def server():
    srv = triage_model(TRIAGE)
    yield srv
    srv.kill()


def _score(server: FakeOpenAI, tmp: Path, model: str, *extra: str):
    out = tmp / f"out-{model}-{len(extra)}"
    r = run_gate("score", model, "--scorecard", str(TRIAGE), "--engine", "url", "--base-url", server.url,
                 "--db", str(tmp / "g.duckdb"), "--out", str(out), "--limit", str(LIMIT), *extra)
    return r, out


def test_score_with_baseline_decides_promote_then_block(server: FakeOpenAI, tmp_path: Path) -> None:
    r, out = _score(server, tmp_path, "tiny", "--baseline", "tinylora")
    assert r.returncode == 0, r.stdout + r.stderr
    data = json.loads((out / "decision.json").read_text())
    assert data["verdict"] == "PROMOTE" and data["n_pairs"] == LIMIT
    assert (out / "scores.json").exists() and (out / "decision.md").exists()
    sup = next(g for g in data["gates"] if g["gate"] == "task-success-improves")
    assert sup["test"] == "mcnemar" and sup["p_holm"] < 0.05 and sup["observed"] > 0.5
    r, out = _score(server, tmp_path, "tinylora", "--baseline", "tiny")
    assert r.returncode == 100, r.stdout + r.stderr
    assert json.loads((out / "decision.json").read_text())["verdict"] == "BLOCK" and "BLOCK" in r.stdout


def test_score_without_candidate_checks_the_baseline_against_the_target(server: FakeOpenAI, tmp_path: Path) -> None:
    r, out = _score(server, tmp_path, "tiny")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "training is not needed for this target" in " ".join(r.stdout.split())
    data = json.loads((out / "decision.json").read_text())
    assert data["mode"] == "baseline_only" and data["verdict"] == "TARGET_MET"
    import duckdb

    with duckdb.connect(str(tmp_path / "g.duckdb"), read_only=True) as con:
        assert con.execute("SELECT mode, verdict FROM decisions").fetchall() == [("baseline_only", "TARGET_MET")]


def test_a_served_lora_scored_alone_is_a_candidate_and_blocks(server: FakeOpenAI, tmp_path: Path) -> None:
    """--engine url names the adapter as the model; the server lists it with `parent` (as vLLM lists a LoRA
    module). Alone it used to get the baseline-first check (exit 0 even on TARGET_NOT_MET): now it is a candidate
    decided without a baseline, which cannot be promoted."""
    r, out = _score(server, tmp_path, "tinylora")
    assert r.returncode == 100, r.stdout + r.stderr
    data = json.loads((out / "decision.json").read_text())
    assert data["mode"] == "candidate_only" and data["verdict"] == "BLOCK" and data["baseline_run"] is None
    run = json.loads((out / "scores.json").read_text())["runs"]["candidate"]
    assert data["candidate_run"] == run["run_id"]
