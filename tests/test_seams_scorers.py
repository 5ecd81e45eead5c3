"""Issue 28 item 5: scorer options are checked against the scorer's schema when the scorecard loads; a scorer that
fails while scoring is counted, shown per gate and per item, and blocks promotion; `gate scorecard lint`."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import ROOT, gate_inprocess
from tests.test_decide_gates import make_scorecard, pair


def _card(tmp: Path, scorer: dict) -> Path:
    path = make_scorecard(tmp, n=4, gates=[], scorers=[scorer])
    return path


def _line(path: Path, needle: str) -> int:
    return next(i for i, ln in enumerate(path.read_text().splitlines(), 1) if needle in ln)


@pytest.mark.parametrize("scorer,key,message", [
    ({"name": "t", "type": "field_match", "options": {"fields": 3}}, "fields", "3 is not of type 'array'"),
    ({"name": "s", "type": "factual_support", "options": {"min_words": "eight"}}, "min_words",
     "'eight' is not of type 'integer'"),
    ({"name": "r", "type": "refusal", "options": {"method": "vibes"}}, "method", "'vibes' is not one of"),
])
def test_a_wrong_option_type_is_the_scorecards_file_and_line(tmp_path, scorer, key, message):
    card = _card(tmp_path, scorer)
    code, out = gate_inprocess("scorecard", "lint", str(card))
    assert code == 1 and "Traceback" not in out and "internal error" not in out, out
    assert f"{card}:{_line(card, key)}" in out and message in out, out
    assert len(out.strip().splitlines()) == 1, out


def test_scorecard_lint_says_what_each_scorer_and_gate_does():
    code, out = gate_inprocess("scorecard", "lint", str(ROOT / "scorecards" / "triage.yaml"))
    assert code == 0, out
    lines = out.strip().splitlines()
    assert lines[0].startswith("OK ") and "60 item(s)" in lines[0]
    assert any("scorer task_success" in ln and "field_match" in ln and "ignore_case=False (default)" in ln
               for ln in lines), out
    assert any("gate format-floor" in ln and "schema_valid >= 0.95" in ln for ln in lines), out
    code, out = gate_inprocess("scorecard", "lint", "-q", str(ROOT / "scorecards" / "triage.yaml"))
    assert code == 0 and len(out.strip().splitlines()) == 1


def _record_with_errors(db: Path, card_path: Path, role: str, values: list[float], errors: set[int],
                        comparison: str) -> None:
    """One complete run whose `task` scorer raised on the `errors` items (the error score `gate score` records)."""
    from gate.score.scorecard import load_scorecard
    from gate.store.scores import begin_score_run, finish_score_run

    card = load_scorecard(card_path)
    run_id, now = uuid.uuid4().hex, datetime.now(UTC)
    begin_score_run({"run_id": run_id, "comparison_id": comparison, "role": role, "scorecard": card.name,
                     "scorecard_version": card.version, "scorecard_sha256": card.sha256,
                     "suite_hashes": card.suite_hashes, "model": f"m/{role}", "adapter": None, "identity_fp": role,
                     "engine": "embedded", "engine_identity": {"engine": "embedded"}, "decoding": card.decoding,
                     "epoch": 0, "started_at": now, "status": "incomplete", "gate_version": "test", "options": {}},
                    str(db))
    samples, scores = [], []
    for i, v in enumerate(values):
        iid = f"it-{i:04d}"
        samples.append({"run_id": run_id, "suite": "s", "item_id": iid, "category": "ab"[i % 2],
                        "prompt_hash": f"p{i}", "output": "", "tool_calls": "[]", "error": None,
                        "finish_reason": "stop", "latency_s": 0.1, "prompt_tokens": 1, "completion_tokens": 1,
                        "cached": False, "epoch": 0})
        if i in errors:
            scores.append({"run_id": run_id, "suite": "s", "item_id": iid, "scorer": "task", "key": "error",
                           "value": None, "explanation": "scorer error: TypeError: boom", "epoch": 0})
        else:
            scores.append({"run_id": run_id, "suite": "s", "item_id": iid, "scorer": "task", "key": "strict",
                           "value": v, "explanation": "", "epoch": 0})
    finish_score_run(run_id, status="complete", finished_at=now, items=len(samples), errors=0, cached=0,
                     samples=samples, scores=scores, path=str(db))


IMPROVES = {"name": "task-improves", "scorer": "task", "metric": "strict", "rule": "superiority"}


def _decide_with_errors(tmp_path, gates: list[dict], errors: set[int]):
    """A baseline and a candidate run of one `task` scorer (the candidate's scorer raised on `errors`) decided by
    `gates`: (card, baseline values, candidate values, exit code, console text, decision.json)."""
    card = make_scorecard(tmp_path, gates=gates, scorers=[{"name": "task", "type": "exact_match"}])
    base, cand = pair(np.random.default_rng(3), 0.4, 0.3)
    db = tmp_path / "g.duckdb"
    _record_with_errors(db, card, "baseline", base, set(), "cmp")
    _record_with_errors(db, card, "candidate", cand, errors, "cmp")
    out = tmp_path / "out"
    code, text = gate_inprocess("decide", "--scorecard", str(card), "--db", str(db), "--out", str(out))
    return card, base, cand, code, text, json.loads((out / "decision.json").read_text())


def test_scorer_errors_fail_their_gate_by_item_and_never_promote(tmp_path):
    card, base, cand, code, text, data = _decide_with_errors(tmp_path, [IMPROVES], {7, 9, 11})
    assert code == 100 and data["verdict"] == "BLOCK", text
    (g,) = data["gates"]
    assert g["verdict"] == "fail" and g["scorer_errors"] == 3
    assert "candidate:s/it-0007" in g["detail"] and "not scored" in g["detail"]
    assert any("scorer task failed on 3 item(s)" in w and "never promoted" in w for w in data["warnings"])
    # the same runs without the errors promote: the errors alone block
    db2 = tmp_path / "g2.duckdb"
    _record_with_errors(db2, card, "baseline", base, set(), "cmp")
    _record_with_errors(db2, card, "candidate", cand, set(), "cmp")
    code, text = gate_inprocess("decide", "--scorecard", str(card), "--db", str(db2), "--out", str(tmp_path / "o2"))
    assert code == 0 and "PROMOTE" in text, text


def test_the_items_a_scorer_did_score_are_still_measured_beside_its_errors(tmp_path):
    """The pairing once reused the name of the paired items for the failed ones, so a run with scorer errors was
    measured on its failed items only: every gate of the decision (of any scorer) said "not measured" or measured
    the wrong items. The gate still fails for the errors, and says what the scored items show."""
    floor = {"name": "task-floor", "scorer": "task", "metric": "strict", "rule": "absolute", "threshold": 0.1}
    _, base, cand, code, text, data = _decide_with_errors(tmp_path, [IMPROVES, floor], {7, 9, 11})
    assert code == 100 and data["verdict"] == "BLOCK", text
    by_name = {g["gate"]: g for g in data["gates"]}
    for name in ("task-improves", "task-floor"):
        g = by_name[name]
        assert g["verdict"] == "fail" and g["scorer_errors"] == 3, g
        assert g["n"] == len(base) - 3 and g["observed"] is not None, g
        assert "not measured" not in g["detail"], g["detail"]
    scored = [v for i, v in enumerate(cand) if i not in {7, 9, 11}]
    assert by_name["task-floor"]["observed"] == pytest.approx(sum(scored) / len(scored))


def test_a_scoring_exception_is_counted_with_the_run():
    from gate.score.run import ModelRun

    run = ModelRun("r", None, None, datetime.now(UTC))  # type: ignore[arg-type]
    run.scores = [{"key": "error"}, {"key": "strict"}, {"key": "error"}]
    assert run.scorer_errors == 2
