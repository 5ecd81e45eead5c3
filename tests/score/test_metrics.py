"""Metrics: per suite x category x scorer x key, epochs reduced per item, percentiles, stored in DuckDB, shown."""

from __future__ import annotations

import json
import math

import pytest

from gate.score.metrics import aggregate, cell, percentile
from gate.testing.fake_openai import FakeOpenAI
from tests.conftest import ROOT, run_gate


def row(item, value, cat="a", key="strict", epoch=0, scorer="task", suite="s"):
    return {"suite": suite, "item_id": item, "category": cat, "scorer": scorer, "key": key, "value": value,
            "epoch": epoch}


def test_means_counts_categories_and_stderr():
    rows = [row("1", 1.0), row("2", 0.0), row("3", 1.0, cat="b"), row("3", 1.0, cat="b", key="flexible"),
            row("4", None)]  # a scorer that could not score: not counted
    got = {(m["category"], m["key"]): m for m in aggregate(rows)}
    assert got[("all", "strict")]["n"] == 3 and got[("all", "strict")]["mean"] == pytest.approx(2 / 3)
    assert got[("all", "strict")]["stderr"] == pytest.approx(math.sqrt(1 / 3) / math.sqrt(3))
    assert (got[("a", "strict")]["n"], got[("b", "strict")]["n"]) == (2, 1)
    assert got[("b", "strict")]["stderr"] is None  # one item has no spread
    assert got[("all", "flexible")]["n"] == 1  # strict and flexible stay separate keys
    assert [m["category"] for m in aggregate(rows)][0] == "all"


def test_epochs_are_reduced_per_item_before_counting():
    rows = [row("1", 1.0, epoch=0), row("1", 0.0, epoch=1), row("2", 1.0, epoch=0), row("2", 1.0, epoch=1)]
    m = next(m for m in aggregate(rows) if m["category"] == "all")
    assert (m["n"], m["mean"], m["epochs"]) == (2, 0.75, 2)


def test_latency_percentiles_match_numpy_and_resources():
    np = pytest.importorskip("numpy")
    vals = [0.1 * i ** 1.5 for i in range(1, 58)]
    rows = [row(str(i), v, key="latency_s", scorer="ops") for i, v in enumerate(vals)]
    m = next(m for m in aggregate(rows, [{"suite": "s", "scorer": "ops", "key": "peak_rss_mb", "value": 812.5}])
             if m["key"] == "latency_s" and m["category"] == "all")
    for q in (50, 95, 99):
        assert m[f"p{q}"] == pytest.approx(float(np.percentile(vals, q)))
        assert percentile(vals, q) == pytest.approx(float(np.percentile(vals, q)))
    assert "p95" in cell(m) and cell(None) == "–"
    mem = [m for m in aggregate([], [{"suite": "s", "scorer": "ops", "key": "peak_rss_mb", "value": 812.5}])]
    assert mem[0]["mean"] == 812.5 and mem[0]["n"] == 1


def test_record_and_load_round_trip(tmp_path):
    from gate.store.metrics import load_metrics, record_metrics

    db = str(tmp_path / "m.duckdb")
    rows = aggregate([row("1", 1.0), row("2", 0.0, cat="b")])
    record_metrics("r1", rows, db)
    record_metrics("r1", rows, db)  # rewriting a run replaces, never duplicates
    got = load_metrics("r1", db)
    assert len(got) == len(rows) and {(g["category"], g["n"]) for g in got} == {("all", 2), ("a", 1), ("b", 1)}


@pytest.fixture
def fake():
    srv = FakeOpenAI().start()
    yield srv
    srv.kill()


def test_decoding_epochs_ask_again_with_the_epoch_in_the_cache_key(fake, tmp_path):
    """epochs: 2 sends every item twice (different cache keys), records both, and a rerun is all cache."""
    import duckdb

    card = (ROOT / "scorecards" / "triage.yaml").read_text().replace("epochs: 1", "epochs: 2")
    card = card.replace("path: suites/", f"path: {ROOT}/scorecards/suites/").replace(
        "../contracts/", f"{ROOT}/contracts/")
    sc = tmp_path / "triage2.yaml"
    sc.write_text(card)
    db, out = tmp_path / "g.duckdb", tmp_path / "out"
    args = ("score", "tiny", "--scorecard", str(sc), "--engine", "url", "--base-url", fake.url, "--db", str(db),
            "--out", str(out), "--limit", "3", "--model-hash", "sha256:1")
    r = run_gate(*args)
    assert r.returncode in (0, 100), r.stdout + r.stderr
    assert fake.calls == 6
    r = run_gate(*args)
    assert fake.calls == 6  # both epochs came from the cache
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT count(*), count(DISTINCT epoch) FROM response_cache").fetchall() == [(6, 2)]
        assert con.execute("SELECT count(*), count(DISTINCT epoch) FROM samples").fetchall() == [(12, 2)]
        n, epochs = con.execute("SELECT n, epochs FROM score_metrics WHERE category = 'all' AND scorer = "
                                "'task_success' AND key = 'strict' LIMIT 1").fetchall()[0]
    assert (n, epochs) == (3, 2)
    data = json.loads((out / "scores.json").read_text())
    assert data["summary"]["triage-heldout"]["all"]["task_success"]["strict"]["candidate"]["epochs"] == 2
