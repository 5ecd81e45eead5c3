"""`gate report-html --check-run ID` (issue 18 item 17): a real `gate check` on the faulty triage fixture, its
static page written by the CLI, read back as HTML. Chromium opens the same page in tests/browser/."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CONTRACTS, FIXTURES, gate_inprocess
from tests.leakscan import planted_values, scan

pytest.importorskip("plotly")

CHECKS = "contract,exact_duplicate,near_duplicate,pii,secret,length"

# the CLI calls run the entry point in-process, in run_gate's environment (CI=true, no GITHUB_ACTIONS)
pytestmark = pytest.mark.usefixtures("run_gate_env")


def checked_run(tmp: Path) -> dict[str, Any]:
    """One real check run of triage-faulty in a fresh record; its run id is read from the verdict line."""
    db = tmp / "g.duckdb"
    with pytest.MonkeyPatch.context() as mp:  # run_gate's environment, here for module fixtures and other files too
        mp.setenv("CI", "true")
        mp.delenv("GITHUB_ACTIONS", raising=False)
        r = gate_inprocess("check", str(FIXTURES / "triage-faulty"), "-c", str(CONTRACTS / "triage.yaml"), "--checks",
                           CHECKS, "--db", str(db), "-o", str(tmp / "rep"), "-q", "-j", "1", split=True)
    assert r.returncode == 100, r.stdout + r.stderr
    import duckdb

    with duckdb.connect(str(db), read_only=True) as con:
        (run_id,) = con.execute("SELECT run_id FROM runs WHERE kind = 'check'").fetchone()
    return {"db": str(db), "run_id": run_id, "tmp": tmp}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return checked_run(tmp_path_factory.mktemp("checkhtml"))


def _rows(html: str, table: str) -> list[str]:
    body = html.split(f'id="{table}"', 1)[1].split("</table>", 1)[0]
    return re.findall(r"<tr[ >].*?</tr>", body.split("<tbody>", 1)[1], flags=re.S)


def test_cli_writes_a_self_contained_check_page(run: dict[str, Any], tmp_path: Path) -> None:
    from gate.dashboard.charts import plotly_js_path

    out = tmp_path / "page"
    r = gate_inprocess("report-html", "--check-run", run["run_id"], "--db", run["db"], "-o", str(out), split=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert str(out / "index.html") in r.stdout.replace("\n", "")
    assert sorted(p.name for p in out.iterdir()) == ["index.html", "plotly.min.js"]
    assert (out / "plotly.min.js").read_bytes() == plotly_js_path().read_bytes()
    html = (out / "index.html").read_text(encoding="utf-8")
    assert re.findall(r'<script src="([^"]+)"', html) == ["plotly.min.js"]
    assert "https://" not in html and "href=\"?check" not in html  # no server, no CDN
    assert 'class="verdict v-fail">fail<' in html.split("</h1>", 1)[0]
    results = {re.search(r'data-check="([^"]+)"', row).group(1): row for row in _rows(html, "check-results")}
    assert set(results) == set(CHECKS.split(","))
    assert "clusters 4" in results["exact_duplicate"] and "scanned 593" in results["pii"]
    # the four planted near-duplicate pairs, each a cluster of 2 with its Jaccard similarity
    clusters = _rows(html, "clusters")
    assert len(clusters) == 4 and all("near_duplicate" in c and "similarity 0.8" in c for c in clusters)
    # and what repeats, redacted (issue 33 item 9: ids alone said nothing)
    assert all(len(re.findall(r"<code>([^<]*)</code>", c)[-1]) > 40 for c in clusters)
    # lengths: the per-split percentile table and its chart (no tokenizer in this contract)
    assert len(_rows(html, "length-stats")) == 3 and 'data-target="length-chart"' in html
    findings = _rows(html, "findings")
    # none capped here: the file holds every finding, and each check's row says how many it has
    counts = {c: int(re.search(r'data-count="(\d+)"', row).group(1)) for c, row in results.items()}
    assert len(findings) == sum(counts.values()) and 'id="capped"' not in html
    assert all(sum(f'data-check="{c}"' in f for f in findings) == n for c, n in counts.items())
    # the pii rows are exactly the planted ones (FAULTS.json), each once: none missed and none invented
    planted = json.loads((FIXTURES / "triage-faulty" / "FAULTS.json").read_text())
    want = sorted((f["split"], f["row"]) for f in planted if f["check"] == "pii")
    cells = r'data-split="([^"]+)"><td>[^<]*</td><td>[^<]*</td><td class="num">(\d+)</td>'
    got = sorted((m[0], int(m[1])) for f in findings if 'data-check="pii"' in f for m in re.findall(cells, f))
    assert len(want) == 9 and got == want, (got, want)
    leaks = scan(planted_values(FIXTURES / "triage-faulty"), paths=[out])
    assert not leaks, leaks


def test_unknown_run_or_no_choice_writes_nothing(run: dict[str, Any], tmp_path: Path) -> None:
    r = gate_inprocess("report-html", "--check-run", "no-such-run", "--db", run["db"], "-o", str(tmp_path / "x"),
                       split=True)
    assert r.returncode == 1 and "no check run 'no-such-run'" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    r = gate_inprocess("report-html", "--db", run["db"], "-o", str(tmp_path / "y"), split=True)
    assert r.returncode == 2 and "--check-run" in r.stderr
    assert not list(tmp_path.iterdir())


def test_dashboard_check_page_links_to_the_static_page(run: dict[str, Any]) -> None:
    from fastapi.testclient import TestClient

    from gate.dashboard.app import create_dashboard_app
    from gate.service.auth import create_token

    token = create_token(run["db"], "viewer-html", "viewer")
    client = TestClient(create_dashboard_app(run["db"]), headers={"Authorization": f"Bearer {token}"})
    live = client.get(f"/checks/{run['run_id']}").text
    link = re.search(r'<a id="static-link" href="([^"]+)"', live).group(1)
    assert link == f"/checks/{run['run_id']}/report.html"
    page = client.get(link)
    assert page.status_code == 200 and 'id="clusters"' in page.text and "static check report" in page.text
    assert client.get("/checks/nope/report.html").status_code == 404
