"""`gate review`: the hard-case queue on the real engine (the tiny Llama in-process), the real checks, the real
record. What could break: a row whose gold is the model's own answer listed as a disagreement, the ranking not
following the model's log-likelihood margin, a planted conflict missing, raw text or markup reaching the page."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.conftest import CONTRACTS, FIXTURES, ROOT, run_gate, triage_row, write_jsonl


@pytest.fixture(scope="module")
def tiny() -> Path:
    sys.path.insert(0, str(ROOT / "fixtures"))
    try:
        from build_tiny_model import build
    finally:
        sys.path.pop(0)
    return build(lora=False)[0]


def test_the_model_queue_leaves_out_agreement_and_ranks_by_margin(tiny, tmp_path):
    """Row 1's gold is the model's own greedy answer: it agrees and is not listed. Rows 2 and 3 have other golds:
    listed, most confident disagreement first, each margin = log P(model answer) - log P(gold) as the engine
    itself computes it."""
    from gate.contract import load_contract
    from gate.engines.embedded import EmbeddedEngine
    from gate.engines.types import Request
    from gate.review.queue import DEFAULT_MAX_TOKENS, model_cases, split_turns

    rows = [triage_row(i, f"Ticket {i}: the mobile app crashes when I open the invoice page") for i in range(3)]
    engine = EmbeddedEngine(tiny)
    engine.start()
    try:
        reqs = [Request(messages=tuple(split_turns(r)[0]), temperature=0.0, max_tokens=DEFAULT_MAX_TOKENS, seed=0)
                for r in rows]
        own = engine.generate(reqs[:1])[0].text
        rows[0]["messages"][-1]["content"] = own
        rows[1]["messages"][-1]["content"] = json.dumps({"product": "billing", "severity": "low",
                                                         "next_action": "close"})
        rows[2]["messages"][-1]["content"] = "I cannot help with that."
        write_jsonl(tmp_path / "ds" / "train.jsonl", rows)
        contract = load_contract(CONTRACTS / "triage.yaml")
        cases, asked, agreeing, errors = model_cases(str(tmp_path / "ds"), contract, engine)
        answers = {r["id"]: engine.generate([q])[0].text for r, q in zip(rows, reqs, strict=True)}
        want = {}
        for r, q in zip(rows[1:], reqs[1:], strict=True):
            mine, gold = engine.loglikelihood([(q, answers[r["id"]]), (q, r["messages"][-1]["content"])])
            want[r["id"]] = round(mine - gold, 4)
    finally:
        engine.stop()
    assert (asked, agreeing, errors) == (3, 1, [])
    assert [c.row_id for c in cases] == sorted(want, key=lambda k: -want[k])
    assert {c.row_id: c.margin for c in cases} == pytest.approx(want, abs=1e-3)
    assert all(c.reason == "model_disagrees" and c.gold and c.prompt for c in cases)


def test_the_cli_queue_lists_the_planted_conflict_masked_and_escaped(tmp_path):
    """The faulty fixture's planted conflicting pair (FAULTS.json) is in the queue; an e-mail and a script tag in a
    conflicting pair's prompt reach neither the page, the JSONL nor the record raw."""
    from gate.store.review import queue_of

    faults = json.loads((FIXTURES / "triage-faulty" / "FAULTS.json").read_text())
    planted = {(f["split"], f["row"]) for f in faults if f["check"] == "conflicting_answers"}
    ds = tmp_path / "ds"
    rows = [json.loads(x) for x in (FIXTURES / "triage-faulty" / "train.jsonl").read_text().splitlines() if x]
    text = "Please write to jane.roe@example.org <script>alert(1)</script> the app crashes on login every day"
    rows += [triage_row(900, text, {"product": "mobile_app", "severity": "high",
                                    "next_action": "escalate_engineering"}),
             triage_row(901, text, {"product": "mobile_app", "severity": "low", "next_action": "close"})]
    write_jsonl(ds / "train.jsonl", rows)
    db, out = tmp_path / "g.duckdb", tmp_path / "review"
    res = run_gate("review", str(ds), "-c", str(CONTRACTS / "triage.yaml"), "--checks", "conflicting_answers",
                   "-o", str(out), "--db", str(db), "-q")
    assert res.returncode == 0, res.stderr
    cases = [json.loads(x) for x in (out / "review.jsonl").read_text().splitlines()]
    listed = {(c["split"], c["row"]) for c in cases if c["reason"] == "conflicting_answers"}
    assert planted <= listed
    assert ("train", len(rows)) in listed  # the added pair: the later row carries the finding
    assert [c["rank"] for c in cases] == list(range(1, len(cases) + 1))
    page = (out / "review.html").read_text()
    for raw in ("jane.roe@example.org", "<script>"):
        assert raw not in page and raw not in (out / "review.jsonl").read_text()
    review_id = next(ln for ln in res.stdout.splitlines() if ln.startswith("review-")).split(":")[0]
    recorded = queue_of(review_id, str(db))
    assert [r["rank"] for r in recorded] == [c["rank"] for c in cases]
    assert not any("jane.roe" in json.dumps(r, default=str) for r in recorded)


def test_a_missing_contract_is_one_line_and_nothing_written(tmp_path):
    out = tmp_path / "review"
    res = run_gate("review", str(FIXTURES / "triage-faulty"), "-c", str(tmp_path / "none.yaml"), "-o", str(out),
                   "--no-db")
    assert res.returncode == 1
    assert len(res.stderr.strip().splitlines()) == 1 and "none.yaml" in res.stderr
    assert not out.exists()
