"""Operations: per-request latency / TTFT / tokens per second / errors from uncached, streamed answers, percentiles
in the metrics, peak memory of the engine process tree."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from gate.engines.types import Response
from gate.score.scorers.operations import Operations, ProcessMemory
from gate.score.types import Item
from gate.testing.fake_openai import FakeOpenAI
from tests.conftest import ROOT, run_gate

OPS = ROOT / "scorecards" / "operations.yaml"
ITEM = Item("i", "c", ({"role": "user", "content": "x"},), {})


def test_per_request_numbers():
    s = Operations().score(ITEM, Response(text="ok", latency_s=1.0, ttft_s=0.2, completion_tokens=40))
    assert s.value == {"error": 0.0, "latency_s": 1.0, "ttft_s": 0.2, "output_tokens_per_s": pytest.approx(50.0)}
    assert Operations().score(ITEM, Response(text="", error="HTTP 503")).value == {"error": 1.0}
    cached = Operations().score(ITEM, Response(text="ok", latency_s=0.001, cached=True))
    assert cached.value == {} and cached.error == "cached"  # a cached answer says nothing about the engine


def test_process_memory_sees_a_child_that_allocates():
    code = "import time; b = bytearray(200 * 2**20); b[::4096] = b'x' * len(b[::4096]); time.sleep(3)"
    child = subprocess.Popen([sys.executable, "-c", code])
    try:
        with ProcessMemory(child.pid, interval_s=0.05) as mem:
            time.sleep(1.5)
    finally:
        child.kill()
        child.wait()
    assert mem.peak_mb > 190
    gone = ProcessMemory(child.pid)
    assert gone.sample() == 0  # a process that is gone reads as nothing, never as an exception


def test_loader_requires_kind_operations(tmp_path):
    from gate.score.scorecard import ScorecardError, load_scorecard

    text = OPS.read_text().replace("kind: operations\n", "")
    bad = tmp_path / "ops.yaml"
    bad.write_text(text.replace("path: suites/", f"path: {ROOT}/scorecards/suites/"))
    with pytest.raises(ScorecardError) as ei:
        load_scorecard(bad)
    assert "kind" in str(ei.value) and str(bad) in str(ei.value)


@pytest.fixture
def fake():
    srv = FakeOpenAI(delay_s=0.01).start()
    yield srv
    srv.kill()


def test_operations_run_streams_bypasses_cache_and_reports_percentiles(fake, tmp_path):
    import json

    db, out = tmp_path / "g.duckdb", tmp_path / "out"
    args = ("score", "tiny", "--scorecard", str(OPS), "--engine", "url", "--base-url", fake.url, "--db", str(db),
            "--out", str(out), "--limit", "6", "--model-hash", "sha256:abc")
    for _ in range(2):
        r = run_gate(*args)
        assert r.returncode == 0, r.stdout + r.stderr
    assert fake.calls == 12  # the second run asked again: operations never read the cache
    assert all(b.get("stream") for b in fake.bodies)  # streamed, so time to first token is real
    assert "without --model-hash" not in r.stdout  # the model hash is pinned
    data = json.loads((out / "scores.json").read_text())
    ops = data["summary"]["triage-heldout"]["all"]["ops"]
    lat, ttft = ops["latency_s"]["candidate"], ops["ttft_s"]["candidate"]
    assert lat["n"] == ttft["n"] == 6 and 0 < ttft["p50"] <= lat["p50"] <= lat["p95"] <= lat["p99"]
    assert ops["error"]["candidate"]["mean"] == 0.0 and ops["output_tokens_per_s"]["candidate"]["mean"] > 0
    assert "p95" in r.stdout  # the table shows percentiles for latencies
    assert data["runs"]["candidate"]["cached"] == 0


def test_embedded_operations_measure_peak_memory_of_this_process(tmp_path):
    pytest.importorskip("torch")
    from fixtures.build_tiny_model import build
    from gate.score.run import ModelSpec, build_engine, run_score
    from gate.score.scorecard import load_scorecard

    model, _ = build()
    card = load_scorecard(OPS)
    db = str(tmp_path / "g.duckdb")
    out = run_score(card, [ModelSpec("candidate", str(model))], lambda s: build_engine("embedded", s),
                    cache_path=db, limit=2, db=db)
    run = out.runs[0]
    mem = [m for m in run.metrics if m["key"] == "peak_rss_mb"]
    assert len(mem) == 1 and mem[0]["mean"] > 50  # python + torch + the model
    assert {m["key"] for m in run.metrics if m["category"] == "all"} >= {"latency_s", "error", "peak_rss_mb"}
