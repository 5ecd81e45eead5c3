"""The static release report: written atomically, opens without a server, draws with the bundled plotly.js."""

from __future__ import annotations

import re

import pytest

from tests.conftest import run_gate
from tests.dashboard_seed import PLANTED, seed_small

pytest.importorskip("plotly")


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    db = str(tmp_path_factory.mktemp("dashstatic") / "gate.duckdb")
    return {"db": db, **seed_small(db, releases=4)}


def test_report_is_self_contained(seeded, tmp_path):
    from gate.dashboard.charts import plotly_js_path
    from gate.dashboard.static import write_release_report

    rid = seeded["releases"][2]
    page = write_release_report(seeded["db"], rid, tmp_path / "report")
    assert page == tmp_path / "report" / "index.html"
    html = page.read_text(encoding="utf-8")
    assert sorted(p.name for p in (tmp_path / "report").iterdir()) == ["index.html", "items.html", "plotly.min.js"]
    assert (tmp_path / "report" / "plotly.min.js").read_bytes() == plotly_js_path().read_bytes()
    assert re.findall(r'<script src="([^"]+)"', html) == ["plotly.min.js"]
    assert "http://" not in html.replace("http://www.w3.org", "") and "https://" not in html
    assert html.count('class="fig-data"') == 2  # history of the scorecard + per-category breakdown
    assert rid in html and "task-success-improves" in html
    # frozen at its release: later releases of the scorecard are not in its history
    assert seeded["releases"][3] not in html
    assert 'href="./checks' not in html  # no links into a live dashboard
    for value in PLANTED.values():
        assert value not in html


def test_unknown_release_writes_nothing_and_keeps_old_output(seeded, tmp_path):
    from gate.dashboard.static import write_release_report
    from gate.errors import GateError

    out = tmp_path / "report"
    out.mkdir()
    (out / "index.html").write_text("previous", encoding="utf-8")
    with pytest.raises(GateError, match="no release 'nope'"):
        write_release_report(seeded["db"], "nope", out)
    assert (out / "index.html").read_text(encoding="utf-8") == "previous"
    assert [p.name for p in tmp_path.iterdir()] == ["report"]


def test_cli_report_html(seeded, tmp_path):
    rid = seeded["current"]
    res = run_gate("report-html", rid, "--db", seeded["db"], "--out", str(tmp_path / "r"))
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "r" / "index.html").is_file()
    bad = run_gate("report-html", "nope", "--db", seeded["db"], "--out", str(tmp_path / "r2"))
    assert bad.returncode == 1
    assert bad.stderr.strip().splitlines() == [f"gate: error: {seeded['db']}: no release 'nope' in the record"]
    assert not (tmp_path / "r2").exists()
    missing = run_gate("report-html", rid, "--db", str(tmp_path / "none.duckdb"), "--out", str(tmp_path / "r3"))
    assert missing.returncode == 1 and "Traceback" not in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1
