"""`gate review`: the hard-case queue on the real engine (the tiny Llama in-process), the real checks, the real
record. What could break: a row whose gold is the model's own answer listed as a disagreement, the ranking not
following the model's log-likelihood margin, a planted conflict missing, raw text or markup reaching the page."""

from __future__ import annotations

import json
import re

import pytest

from tests.conftest import CONTRACTS, FIXTURES, run_gate, triage_row, write_jsonl


@pytest.fixture(scope="module")
def tiny():
    from fixtures.build_tiny_model import build

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


def test_a_malformed_line_or_a_model_that_does_not_load_is_one_line_and_nothing_written(tmp_path):
    ds = tmp_path / "ds"
    write_jsonl(ds / "train.jsonl", [triage_row(i) for i in range(5)])
    good = (ds / "train.jsonl").read_text().splitlines()
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "train.jsonl").write_text("\n".join([*good[:3], '{"id": "tri-9", "messages": [', *good[3:]]) + "\n")
    (tmp_path / "empty-model").mkdir()
    for data, extra, says in ((bad, (), "train.jsonl:4"), (ds, ("--model", str(tmp_path / "empty-model")),
                                                            "empty-model")):
        out = tmp_path / f"review-{data.name}"
        res = run_gate("review", str(data), "-c", str(CONTRACTS / "triage.yaml"), *extra, "-o", str(out), "--no-db")
        assert res.returncode == 1, res.stderr
        assert len(res.stderr.strip().splitlines()) == 1 and says in res.stderr, res.stderr
        assert "Traceback" not in res.stderr and not out.exists()


def test_a_classification_dataset_is_ranked_by_label_likelihood(tiny, tmp_path):
    """Two plain-text labels, each given three times: the model's answer is the label it finds likeliest (no
    generation: a small model that does not follow the answer format still ranks them); a row is listed exactly
    when that label is not its gold, with margin log P(best) - log P(gold) as the engine computes it."""
    from gate.contract import load_contract
    from gate.engines.embedded import EmbeddedEngine
    from gate.engines.types import Request
    from gate.review.queue import model_cases, split_turns

    labels = ["billing question", "crash report"]
    rows = [triage_row(i, f"Ticket {i}: " + ("I was charged twice" if i % 2 else "the app closes on start"),
                       **{"language": "en"}) for i in range(6)]
    for i, r in enumerate(rows):
        r["messages"][-1]["content"] = labels[(i // 3) % 2]
    write_jsonl(tmp_path / "ds" / "train.jsonl", rows)
    (tmp_path / "c.yaml").write_text("name: t\nversion: '1'\nmessages: {roles: [system, user, assistant]}\n"
                                     "output: {format: text}\n")
    engine = EmbeddedEngine(tiny)
    engine.start()
    try:
        cases, asked, agreeing, errors = model_cases(str(tmp_path / "ds"), load_contract(tmp_path / "c.yaml"),
                                                     engine)
        want = {}
        for r in rows:
            req = Request(messages=tuple(split_turns(r)[0]), temperature=0.0, max_tokens=256, seed=0)
            lls = engine.loglikelihood([(req, lab) for lab in labels])
            best, gold = max(range(2), key=lambda i: lls[i]), labels.index(r["messages"][-1]["content"])
            if best != gold:
                want[r["id"]] = (labels[best], round(lls[best] - lls[gold], 4))
    finally:
        engine.stop()
    assert (asked, agreeing, errors) == (6, 6 - len(want), [])
    assert want, "the tiny model prefers one label for every row: nothing to rank"
    assert {c.row_id: c.answer for c in cases} == {k: v[0] for k, v in want.items()}
    assert {c.row_id: c.margin for c in cases} == pytest.approx({k: v[1] for k, v in want.items()}, abs=1e-3)
    assert [c.margin for c in cases] == sorted((c.margin for c in cases), reverse=True)


def test_the_dashboard_lists_queues_and_shows_one_masked_in_rank_order(tmp_path):
    """The queue on the dashboard: listed with its counts, its cases in rank order, a raw e-mail that reached the
    record (an older or buggy writer) masked again on the way out, an unknown queue a 404."""
    pytest.importorskip("fastapi")
    import duckdb
    from fastapi.testclient import TestClient

    from gate.dashboard.app import create_dashboard_app
    from gate.service.auth import create_token

    ds, db = tmp_path / "ds", str(tmp_path / "g.duckdb")
    text = "Please write to jane.roe@example.org the app crashes on login every day since the update"
    write_jsonl(ds / "train.jsonl", [triage_row(i) for i in range(4)] + [
        triage_row(900, text, {"product": "mobile_app", "severity": "high", "next_action": "escalate_engineering"}),
        triage_row(901, text, {"product": "mobile_app", "severity": "low", "next_action": "close"})])
    res = run_gate("review", str(ds), "-c", str(CONTRACTS / "triage.yaml"), "--checks", "conflicting_answers",
                   "-o", str(tmp_path / "out"), "--db", db, "-q")
    assert res.returncode == 0, res.stderr
    review_id = next(ln for ln in res.stdout.splitlines() if ln.startswith("review-")).split(":")[0]
    con = duckdb.connect(db)
    n = con.execute("SELECT count(*) FROM review_queue").fetchall()[0][0]
    con.execute("INSERT INTO review_queue (review_id, \"rank\", reason, split, \"row\", detail, prompt) VALUES "
                "(?, ?, 'conflicting_answers', 'train', 7, 'raw', ?)", [review_id, n + 1, text])
    con.close()
    token = create_token(db, "v", "viewer")
    client = TestClient(create_dashboard_app(db), headers={"Authorization": f"Bearer {token}"})
    listing = client.get("/review").text
    row = listing.split('id="review-queues"', 1)[1].split("</table>", 1)[0]
    assert review_id in row and f'<td class="num">{n + 1}</td>' in row
    page = client.get(f"/review/{review_id}")
    assert page.status_code == 200
    ranks = [int(r) for r in re.findall(r'<tr><td class="num">(\d+)</td>', page.text)]
    assert ranks == list(range(1, n + 2)) and "conflicting_answers" in page.text
    assert "jane.roe" not in page.text and "jane.roe" not in listing
    assert client.get("/review/review-none").status_code == 404
    assert '<a href="/review">Review</a>' in client.get("/checks").text
