"""Per-item answers, baseline vs candidate (issue 18 item 18), in the dashboard and the static release report.

The record is written by the real store writers (score runs, samples and scores as `gate score` writes them, the
decision and release as `gate decide` / `gate release create` do) for the shipped triage scorecard's first items,
with planted personal data in answers and explanations. Chromium drives the same pages in tests/browser/.
"""

from __future__ import annotations

import random
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, run_gate
from tests.dashboard_seed import PLANTED, release_rows

fastapi = pytest.importorskip("fastapi")
SCORECARD = ROOT / "scorecards" / "triage.yaml"
N_ITEMS = 8
CHANGED = {1, 4, 6}  # items whose strict verdict differs between baseline and candidate


def seed_items(db: str) -> dict[str, Any]:
    """One release whose decision has baseline and candidate runs over the first N_ITEMS triage items."""
    from gate.score.scorecard import load_scorecard
    from gate.store.releases import record_decision, record_release
    from gate.store.scores import begin_score_run, finish_score_run

    sc = load_scorecard(SCORECARD)
    suite = sc.suites[0]
    items = suite.items[:N_ITEMS]
    d, g, c, rel = release_rows("triage", 3, rng=random.Random(5))
    d["scorecard_sha256"] = rel["scorecard_sha256"] = sc.sha256
    record_decision(d, g, c, db)
    record_release(rel, db)
    now = datetime.now(UTC)
    for role, run in (("baseline", d["baseline_run"]), ("candidate", d["candidate_run"])):
        begin_score_run({"run_id": run, "comparison_id": d["decision_id"], "role": role, "scorecard": sc.name,
                         "status": "incomplete", "started_at": now}, db)
        samples, scores = [], []
        for k, it in enumerate(items):
            right = role == "candidate" if k in CHANGED else k != 0  # item 0: both wrong, the same way
            answer = ('{"product": "billing", "severity": "low", "next_action": "refund_review"}' if right else
                      f"Please contact {PLANTED['email']} or call {PLANTED['phone']}.")
            samples.append({"run_id": run, "suite": suite.name, "item_id": it.id, "category": it.category,
                            "prompt_hash": f"{k:064x}", "output": answer, "tool_calls": None, "error": None,
                            "finish_reason": "stop", "latency_s": 0.1, "prompt_tokens": 100,
                            "completion_tokens": 20, "cached": False, "epoch": 0, "ttft_s": None})
            scores.append({"run_id": run, "suite": suite.name, "item_id": it.id, "scorer": "triage",
                           "key": "strict", "value": 1.0 if right else 0.0, "epoch": 0,
                           "explanation": "all three fields match" if right else
                           f"not json: answered with {PLANTED['card']}"})
            scores.append({"run_id": run, "suite": suite.name, "item_id": it.id, "scorer": "format",
                           "key": "parsed", "value": 1.0, "explanation": "", "epoch": 0})
        finish_score_run(run, status="complete", finished_at=now, items=len(items), errors=0, cached=0,
                         samples=samples, scores=scores, path=db)
    return {"release": rel["release_id"], "items": [it.id for it in items], "suite": suite,
            "changed": {items[k].id for k in CHANGED}}


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    db = str(tmp_path_factory.mktemp("dashitems") / "gate.duckdb")
    return {"db": db, **seed_items(db)}


def _client(db: str) -> Any:
    from fastapi.testclient import TestClient

    from gate.dashboard.app import create_dashboard_app
    from gate.service.auth import create_token

    token = create_token(db, "viewer-items", "viewer")
    return TestClient(create_dashboard_app(db), headers={"Authorization": f"Bearer {token}"})


def _item_rows(html: str) -> list[str]:
    body = html.split('id="items"', 1)[1].split("<tbody>", 1)[1]
    return re.findall(r'<tr data-changed="[^"]+".*?</table></td></tr>', body, flags=re.S)


def _no_planted(html: str) -> None:
    for value in PLANTED.values():
        assert value not in html


def test_store_pairs_both_answers_and_marks_changed_verdicts(seeded: dict[str, Any]) -> None:
    from gate.dashboard.queries import read_only
    from gate.store.evidence import item_answers

    with read_only(seeded["db"]) as con:
        rel = con.execute("SELECT decision_id FROM releases").fetchone()[0]
        got = item_answers(con, rel)
    assert [it["item_id"] for it in got] == seeded["items"]
    assert {it["item_id"] for it in got if it["changed"]} == seeded["changed"]
    one = next(it for it in got if it["item_id"] in seeded["changed"])
    assert one["scores"]["triage.strict"] == {"baseline": 0.0, "candidate": 1.0, "changed": True,
                                              "baseline_explanation": f"not json: answered with {PLANTED['card']}",
                                              "candidate_explanation": "all three fields match"}
    assert one["scores"]["format.parsed"]["changed"] is False
    assert one["baseline"].startswith("Please contact") and one["candidate"].startswith('{"product"')


def test_dashboard_item_page_shows_both_answers_redacted(seeded: dict[str, Any]) -> None:
    client = _client(seeded["db"])
    release = client.get(f"/releases/{seeded['release']}").text
    link = re.search(r'<a id="items-link" href="([^"]+)"', release).group(1)
    assert link == f"/releases/{seeded['release']}/items"
    html = client.get(link).text
    rows = _item_rows(html)
    assert len(rows) == N_ITEMS
    assert {re.search(r'data-item="([^"]+)"', r).group(1) for r in rows if 'data-changed="yes"' in r} == \
        seeded["changed"]
    assert '<span id="changed-count">3</span>' in html
    assert "all three fields match" in html and "triage.strict" in html and "format.parsed" in html
    assert "--scorecard FILE" in html  # the dashboard has only the prompts' hashes, and says so
    _no_planted(html)
    assert "Please contact o***@e***.net or call +dd dd dddd dddd." in html  # readable, and masked
    assert "not json: answered with dddd dddd dddd dddd" in html
    assert client.get("/releases/nope/items").status_code == 404


def test_static_report_has_items_with_prompts_from_the_scorecard(seeded: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "rep"
    r = run_gate("report-html", seeded["release"], "--scorecard", str(SCORECARD), "--db", seeded["db"], "-o",
                 str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    assert sorted(p.name for p in out.iterdir()) == ["index.html", "items.html", "plotly.min.js"]
    assert 'href="items.html"' in (out / "index.html").read_text(encoding="utf-8")
    html = (out / "items.html").read_text(encoding="utf-8")
    assert len(_item_rows(html)) == N_ITEMS and "--scorecard FILE" not in html
    first = seeded["suite"].items[0].messages[-1]["content"]
    # the prompt is there, through the value masker (its capitalised words masked, the rest readable)
    assert "photo studio opens early" in html and first not in html
    assert "https://" not in html and 'href="/' not in html
    _no_planted(html)


def test_static_report_refuses_a_scorecard_other_than_the_decisions(seeded: dict[str, Any], tmp_path: Path) -> None:
    r = run_gate("report-html", seeded["release"], "--scorecard", str(ROOT / "scorecards" / "tool-use.yaml"),
                 "--db", seeded["db"], "-o", str(tmp_path / "rep"))
    assert r.returncode == 1 and "--scorecard" in r.stderr and "not this file" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not (tmp_path / "rep").exists()


# --- the record holds a masked prompt per sample (issue 18 item 18): a real `gate score` run, the live page -------

PROMPT_NAME = "Olivia Brandt"


def _planted_card(tmp: Path) -> Path:
    """A two-item scorecard whose user messages carry a planted name and e-mail (and a system prompt that is not
    "the prompt")."""
    import json

    rows = [{"id": f"p-{k}", "category": "c", "expected": {"product": "billing"},
             "messages": [{"role": "system", "content": "You triage tickets."},
                          {"role": "user", "content": f"Ticket {k}: I am {PROMPT_NAME}, write to "
                                                      f"{PLANTED['email']} about my refund, it never arrived."}]}
            for k in range(2)]
    (tmp / "suite.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    card = tmp / "card.yaml"
    card.write_text("name: planted\nversion: '1'\nsuites: [{name: s, path: suite.jsonl}]\n"
                    "decoding: {temperature: 0, max_tokens: 4}\n"
                    "scorers: [{name: fm, type: field_match, options: {fields: [product]}}]\n", encoding="utf-8")
    return card


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The embedded engine on the tiny model (candidate with its LoRA, baseline without), scored twice: the second
    pass answers from the cache, and its runs are the ones the release's decision points at."""
    pytest.importorskip("torch")
    pytest.importorskip("peft")
    from fixtures.build_tiny_model import build
    from gate.score.run import ModelSpec, build_engine, run_score
    from gate.score.scorecard import load_scorecard
    from gate.store.releases import record_decision, record_release

    tmp = tmp_path_factory.mktemp("dashprompt")
    model, lora = (str(p) for p in build()[:2])
    card = load_scorecard(_planted_card(tmp))
    db = str(tmp / "gate.duckdb")

    def go() -> Any:
        return run_score(card, [ModelSpec("candidate", model, lora), ModelSpec("baseline", model)],
                         lambda s: build_engine("embedded", s), cache_path=db, db=db)

    go()
    second = go()
    cand, base = second.runs
    d, g, c, rel = release_rows("planted", 1, rng=random.Random(3))
    d["baseline_run"], d["candidate_run"] = base.run_id, cand.run_id
    record_decision(d, g, c, db)
    record_release(rel, db)
    return {"db": db, "release": rel["release_id"], "runs": second.runs}


def test_cached_rerun_records_the_masked_prompt_never_the_raw_one(scored: dict[str, Any]) -> None:
    import duckdb

    samples = [s for r in scored["runs"] for s in r.samples]
    assert len(samples) == 4 and all(s["cached"] for s in samples)  # the rerun answered from the cache
    with duckdb.connect(scored["db"], read_only=True) as con:
        stored = con.execute("SELECT item_id, prompt_masked FROM samples WHERE run_id IN (?, ?) ORDER BY ALL",
                             [r.run_id for r in scored["runs"]]).fetchall()
        dump = str(con.execute("SELECT * FROM samples").fetchall())
    assert [i for i, _ in stored] == ["p-0", "p-0", "p-1", "p-1"]
    # the last user message (not the system prompt), its name and e-mail masked, the rest readable
    assert stored[0][1] == "Ticket d: I am Xxxxx Xxxxx, write to o***@e***.net about my refund, it never arrived."
    assert PLANTED["email"] not in dump and PROMPT_NAME not in dump and "Brandt" not in dump


def test_live_item_page_shows_the_masked_prompt_from_the_record(scored: dict[str, Any]) -> None:
    html = _client(scored["db"]).get(f"/releases/{scored['release']}/items").text
    rows = _item_rows(html)
    assert len(rows) == 2
    assert all("o***@e***.net about my refund" in r and "sha256 " not in r for r in rows)
    assert "--scorecard FILE" not in html  # the record has the prompts: no hint that only hashes are kept
    assert PLANTED["email"] not in html and "Brandt" not in html and "You triage" not in html


def test_an_older_record_gets_the_column_and_its_page_falls_back_to_the_hash(tmp_path: Path) -> None:
    """A samples table made before `prompt_masked` existed: the read-only page shows the hash, the next write adds
    the column (NULL for the old rows)."""
    import duckdb

    from gate.store.scores import finish_score_run

    db = str(tmp_path / "old.duckdb")
    seed_items(db)
    with duckdb.connect(db) as con:
        con.execute("ALTER TABLE samples DROP COLUMN prompt_masked")
    with duckdb.connect(db, read_only=True) as con:
        rel_id = con.execute("SELECT release_id FROM releases").fetchone()[0]
    html = _client(db).get(f"/releases/{rel_id}/items").text
    assert len(_item_rows(html)) == N_ITEMS and "sha256 " in html and "--scorecard FILE" in html
    finish_score_run("late", status="complete", finished_at=datetime.now(UTC), items=0, errors=0, cached=0,
                     samples=[], scores=[], path=db)
    with duckdb.connect(db, read_only=True) as con:
        cols = [r[0] for r in con.execute("DESCRIBE samples").fetchall()]
        assert cols[-1] == "prompt_masked"
        assert con.execute("SELECT count(*) FROM samples WHERE prompt_masked IS NOT NULL").fetchone()[0] == 0
