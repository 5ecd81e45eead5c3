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
    assert "Please contact o***@e***.net or call +4* ** **** ****." in html  # readable, and masked
    assert "not json: answered with 4*** **** **** ****" in html
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
