"""Bad input and bad infrastructure for `gate score`: one clear line and exit 1, or a contained, recorded failure;
never a traceback, a partial report or a verdict from an incomplete run."""

from __future__ import annotations

import json
import sys
import threading
import time

import pytest

from gate.testing.fake_openai import FakeOpenAI
from tests.conftest import ROOT, gate_inprocess, run_gate, write_jsonl

TRIAGE = ROOT / "scorecards" / "triage.yaml"

# Bad input is refused in-process (the real entry point, stdout and stderr apart, in run_gate's environment); the
# tests whose subject is a time bound (a dying server's retries, a hanging tool) keep `python -m gate` and its
# timeout, so a regression there fails the test instead of hanging the suite.
pytestmark = pytest.mark.usefixtures("run_gate_env")


def _rows(db, sql):
    import duckdb

    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(sql).fetchall()


def _one_line_error(r):
    err = (r.stdout + r.stderr).strip()
    assert r.returncode == 1, err
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    return err


def test_engine_that_fails_to_start_gives_its_log_tail(tmp_path, monkeypatch):
    fake_py = tmp_path / "python"
    fake_py.write_text("#!/bin/sh\necho 'INFO loading model'\n"
                       "echo 'RuntimeError: CUDA out of memory on device 0' >&2\nexit 3\n")
    fake_py.chmod(0o755)
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    out = tmp_path / "out"
    monkeypatch.setenv("GATE_VLLM_PYTHON", str(fake_py))
    r = gate_inprocess("score", str(model), "--scorecard", str(TRIAGE), "--engine", "vllm", "--db",
                       str(tmp_path / "g.duckdb"), "--out", str(out), "--limit", "2", split=True)
    err = _one_line_error(r)
    assert "exited with code 3" in err and "CUDA out of memory" in err and ".log" in err
    assert not out.exists()


def test_server_that_dies_mid_run_leaves_an_incomplete_run_that_resumes(tmp_path):
    srv = FakeOpenAI().start()
    port = srv.httpd.server_address[1]
    served = threading.Event()

    def respond(body):
        from gate.testing.fake_openai import answer

        if srv.calls >= 3 and not served.is_set():  # the server goes away after its third answer
            served.set()
            threading.Thread(target=srv.kill, daemon=True).start()
        return answer(body)

    srv.respond = respond
    db, out = tmp_path / "g.duckdb", tmp_path / "out"
    args = ("score", "tiny", "--scorecard", str(TRIAGE), "--engine", "url", "--base-url", srv.url, "--db", str(db),
            "--out", str(out), "--limit", "12", "--model-hash", "sha256:1")
    # the url engine checks the server before the run; it dies during the run
    t0 = time.monotonic()
    r = run_gate(*args, timeout=180)
    err = _one_line_error(r)
    assert "incomplete" in err and "rerun" in err
    assert time.monotonic() - t0 < 90  # retries are bounded
    assert not out.exists()  # no report, no verdict
    assert _rows(db, "SELECT status FROM score_runs") == [("incomplete",)]
    failed = _rows(db, "SELECT count(*) FROM samples WHERE error LIKE 'failed after%'")[0][0]
    answered = _rows(db, "SELECT count(*) FROM response_cache")[0][0]
    assert failed >= 1 and answered >= 1 and failed + answered == 12
    # no numbers from an incomplete run
    assert not _rows(db, "SELECT * FROM information_schema.tables WHERE table_name = 'score_metrics'")

    back = FakeOpenAI(port=port).start()  # the server comes back: the rerun asks only what is missing
    try:
        r = run_gate(*args, timeout=180)
        assert r.returncode in (0, 100), r.stdout + r.stderr
        assert back.calls == failed
        assert (out / "scores.json").exists()
    finally:
        back.kill()


@pytest.mark.parametrize("row,field", [
    ({"choices": "A or B", "expected": {"answer": 0}}, "choices"),
    ({"choices": ["yes", "no"], "expected": {"answer": 2}}, "expected.answer"),
    ({"choices": ["yes", "no"], "expected": {}}, "expected.answer"),
])
def test_malformed_multiple_choice_row(tmp_path, row, field):
    good = {"id": "mc-1", "category": "c", "messages": [{"role": "user", "content": "q"}], "choices": ["a", "b"],
            "expected": {"answer": 0}}
    bad = {**good, "id": "mc-2", **row}
    suite = write_jsonl(tmp_path / "mc.jsonl", [good, bad])
    sc = tmp_path / "mc.yaml"
    sc.write_text(f"name: mc\nversion: 1\nsuites: [{{name: mc, path: {suite}}}]\n"
                  "decoding: {temperature: 0, max_tokens: 8}\nscorers: [{name: general, type: multiple_choice}]\n")
    out = tmp_path / "out"
    r = gate_inprocess("score", "nowhere", "--scorecard", str(sc), "--engine", "url", "--base-url",
                       "http://127.0.0.1:9", "--model-hash", "sha256:1", "--db", str(tmp_path / "g.duckdb"), "--out",
                       str(out), split=True)
    err = _one_line_error(r)
    # checked before any engine starts (the URL above would refuse connections)
    assert f"{suite}:2: {field}:" in err
    assert not out.exists() and not (tmp_path / "g.duckdb").exists()


def test_malformed_support_row(tmp_path):
    suite = write_jsonl(tmp_path / "kb.jsonl", [{"id": "kb-1", "category": "c", "messages": [
        {"role": "user", "content": "q"}], "expected": {}, "passages": []}])
    sc = tmp_path / "kb.yaml"
    sc.write_text(f"name: kb\nversion: 1\nsuites: [{{name: kb, path: {suite}}}]\n"
                  "decoding: {temperature: 0, max_tokens: 8}\nscorers: [{name: s, type: factual_support}]\n")
    err = _one_line_error(gate_inprocess("score", "m", "--scorecard", str(sc), "--engine", "url", "--base-url",
                                         "http://127.0.0.1:9", "--model-hash", "sha256:1", "--db",
                                         str(tmp_path / "g.duckdb"), split=True))
    assert f"{suite}:1: passages:" in err


def test_usage_errors_for_new_options(tmp_path):
    err = _one_line_error(gate_inprocess("score", "m", "--scorecard", str(TRIAGE), "--chat-template",
                                         str(tmp_path / "missing.jinja"), "--db", str(tmp_path / "g.duckdb"),
                                         split=True))
    assert "chat template file not found" in err
    err = _one_line_error(gate_inprocess("score", "m", "--scorecard", str(TRIAGE), "--baseline-adapter", "x",
                                         "--db", str(tmp_path / "g.duckdb"), split=True))
    assert "--baseline-adapter needs --baseline" in err


TOOLS_CARD = """name: hostile-tools
version: 1
suites: [{{name: t, path: {suite}}}]
prompt:
  tools:
    - type: function
      function:
        name: get_weather
        parameters: {{type: object, properties: {{city: {{type: string}}}}, required: [city]}}
  tool_choice: auto
decoding: {{temperature: 0, max_tokens: 32}}
scorers:
  - name: tool_calls
    type: tool_execution
    options: {{implementation: {impl}, normalize: bfcl, limits: {{cpu_s: 1, wall_s: 2}}}}
"""


@pytest.mark.parametrize("body,detail,hangs", [
    ("def get_weather(city):\n    import time\n    time.sleep(60)\n", "limit of", True),  # wall-clock
    ("def get_weather(city):\n    while True:\n        pass\n", "limit", True),  # CPU or wall-clock, whichever first
    ("def get_weather(city):\n    raise RuntimeError('backend down')\n", "RuntimeError: backend down", False),
    ("raise ImportError('broken module')\ndef get_weather(city):\n    return 1\n", "ImportError: broken module",
     False),
])
def test_tool_implementations_that_hang_or_raise_are_contained(tmp_path, body, detail, hangs):
    impl = tmp_path / "tools_impl.py"
    impl.write_text(body + "\nTOOLS = {'get_weather': get_weather} if 'get_weather' in dir() else {}\n")
    suite = write_jsonl(tmp_path / "t.jsonl", [
        {"id": f"t-{i}", "category": "weather", "messages": [{"role": "user", "content": f"weather {i}?"}],
         "expected": {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]}} for i in range(2)])
    sc = tmp_path / "tools.yaml"
    sc.write_text(TOOLS_CARD.format(suite=suite, impl=impl))
    srv = FakeOpenAI().start()  # answers every request with get_weather(city="Paris")
    try:
        t0 = time.monotonic()
        db, out = tmp_path / "g.duckdb", tmp_path / "out"
        args = ("score", "tiny", "--scorecard", str(sc), "--engine", "url", "--base-url", srv.url, "--db", str(db),
                "--out", str(out), "--model-hash", "sha256:1")
        # a hanging tool keeps its subprocess and timeout; one that raises runs in-process, where the check below
        # that gate never imported it is about this very process
        r = run_gate(*args, timeout=120) if hangs else gate_inprocess(*args, split=True)
        assert r.returncode == 0, r.stdout + r.stderr
        assert time.monotonic() - t0 < 60  # a hanging tool costs its wall-clock limit, not the run
    finally:
        srv.kill()
    data = json.loads((out / "scores.json").read_text())
    assert data["summary"]["t"]["all"]["tool_calls"]["correct"]["candidate"]["mean"] == 0.0
    why = [e["explanation"] for e in data["examples"]]
    assert len(why) == 2, why
    expl = _rows(db, "SELECT explanation FROM scores WHERE key = 'correct'")
    assert len(expl) == 2 and all(detail in e[0] for e in expl), expl
    assert sys.modules.get("tools_impl") is None  # never imported into gate itself
