"""The figure specs the dashboard ships are valid plotly figures and carry the record's numbers."""

from __future__ import annotations

import json
import random
import re

import pytest

from tests.dashboard_seed import release_rows

go = pytest.importorskip("plotly.graph_objects")


@pytest.fixture(scope="module")
def record(tmp_path_factory):
    from gate.store.releases import record_decision, record_release

    db = str(tmp_path_factory.mktemp("dashcharts") / "gate.duckdb")
    rng = random.Random(3)
    rels = []
    for i in range(4):
        d, g, c, rel = release_rows("triage", i * 10, rng=rng)
        record_decision(d, g, c, db)
        record_release(rel, db)
        rels.append((d, g, c, rel))
    return db, rels


def _figures(html: str) -> list[dict]:
    found = re.findall(r'<script type="application/json" class="fig-data" data-target="[^"]+">(.*?)</script>', html,
                       flags=re.S)
    return [json.loads(f) for f in found]


def test_history_figure_is_valid_and_matches_the_gates(record):
    from gate.dashboard import charts, queries

    db, rels = record
    with queries.read_only(db) as con:
        cols = queries.release_series(con, scorecard="triage")
    figs = charts.release_history(cols)
    assert list(figs) == ["triage"]
    fig = json.loads(figs["triage"])
    go.Figure(fig)  # plotly's own validation: raises on any unknown or ill-typed property
    by_name = {t["name"].split(" ")[0]: t for t in fig["data"]}
    assert set(by_name) == {"task-success-improves", "refusal-no-regression", "format-floor"}
    sup = by_name["task-success-improves"]
    gates = [next(g for g in r[1] if g["gate"] == "task-success-improves") for r in rels]
    assert sup["y"] == pytest.approx([g["observed"] for g in gates], abs=1e-5)
    assert sup["error_y"]["array"] == pytest.approx([g["ci_high"] - g["observed"] for g in gates], abs=1e-5)
    assert sup["error_y"]["arrayminus"] == pytest.approx([g["observed"] - g["ci_low"] for g in gates], abs=1e-5)
    assert [c[0] for c in sup["customdata"]] == [r[3]["release_id"] for r in rels]
    # differences on the upper panel, the absolute gate on its own axis
    assert sup["yaxis"] == "y" and by_name["format-floor"]["yaxis"] == "y2"


def test_every_page_figure_is_a_valid_plotly_figure(record):
    from gate.dashboard import pages

    db, rels = record
    a, b = rels[0][3]["release_id"], rels[-1][3]["release_id"]
    figs = _figures(pages.home(db)) + _figures(pages.release(db, b)) + _figures(pages.diff(db, a, b))
    assert len(figs) == 1 + 2 + 1
    for fig in figs:
        go.Figure(fig)
        assert fig["data"] and all(t.get("y") for t in fig["data"])


def test_names_cannot_break_out_of_the_script_element():
    from gate.dashboard import charts

    cols = {k: [v] for k, v in {
        "scorecard": "x</script><script>alert(1)</script>", "gate": "g", "rule": "absolute", "scorer": "s",
        "metric": "m", "release_id": "r", "created_at": "2026-01-01T00:00:00Z", "verdict": "PROMOTE",
        "gate_verdict": "pass", "observed": 0.5, "err_plus": None, "err_minus": None, "baseline": 0.4,
        "candidate": 0.5, "p_holm": None}.items()}
    text = next(iter(charts.release_history(cols).values()))
    assert "</script>" not in text and json.loads(text)["layout"]["title"]["text"].startswith("x</script>")


def test_time_axis_fits_the_span():
    """Issue 18 item 19: one release must not give plotly a millisecond autorange (a day around it); issue 33
    item 9: releases seconds apart get an axis seconds wide (at least 20 s), days apart their span plus 5%."""
    from datetime import datetime

    from gate.dashboard import charts

    def span(times: list[str]) -> float:
        cols = {k: [] for k in ("scorecard", "gate", "rule", "scorer", "metric", "release_id", "created_at",
                                "verdict", "gate_verdict", "observed", "err_plus", "err_minus", "baseline",
                                "candidate", "p_holm")}
        for k, t in enumerate(times):
            for key, v in (("scorecard", "c"), ("gate", "g"), ("rule", "absolute"), ("scorer", "s"),
                           ("metric", "m"), ("release_id", f"r{k}"), ("created_at", t), ("verdict", "PROMOTE"),
                           ("gate_verdict", "pass"), ("observed", 0.5), ("err_plus", None), ("err_minus", None),
                           ("baseline", 0.4), ("candidate", 0.5), ("p_holm", None)):
                cols[key].append(v)
        fig = __import__("json").loads(charts.release_history(cols)["c"])
        go.Figure(fig)
        lo, hi = (datetime.fromisoformat(x) for x in fig["layout"]["xaxis"]["range"])
        return (hi - lo).total_seconds()

    assert span(["2026-01-05T09:00:00Z"]) >= 86_400
    # issue 33 item 9: a day-wide floor put releases 10 s apart on one line; the axis fits the span instead
    assert 20 <= span(["2026-01-05T09:00:00Z", "2026-01-05T09:00:01Z"]) <= 30
    assert span(["2026-01-05T09:00:00Z", "2026-01-05T09:00:10Z"]) == pytest.approx(30)  # they are 1/3 of it apart
    assert span(["2026-01-05T09:00:00Z", "2026-01-05T11:00:00Z"]) == pytest.approx(2 * 3600 * 1.1)
    assert span(["2026-01-05T09:00:00Z", "2026-01-15T09:00:00Z"]) == pytest.approx(10 * 86_400 * 1.1)
