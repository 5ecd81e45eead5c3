"""Dashboard pages through the FastAPI router (in-process ASGI client) over a record written by the real writers.

Every client here sends a viewer's bearer token: the pages refuse anyone without one (tests/test_dashboard_auth.py).
"""

from __future__ import annotations

import re
import secrets
import subprocess
import sys
from datetime import timedelta

import pytest

from tests.dashboard_seed import PLANTED, ROOT, T0, release_rows, seed_check_run, seed_many_findings, seed_small

fastapi = pytest.importorskip("fastapi")


def _viewer(db: str) -> dict[str, str]:
    """Headers with a fresh viewer token of the record `db` (the token is stored there, hashed)."""
    from gate.service.auth import create_token

    return {"Authorization": f"Bearer {create_token(db, f'viewer-{secrets.token_hex(4)}', 'viewer')}"}


def _client(db: str, app=None):
    from fastapi.testclient import TestClient

    from gate.dashboard.app import create_dashboard_app

    return TestClient(app if app is not None else create_dashboard_app(db), headers=_viewer(db))


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    db = str(tmp_path_factory.mktemp("dashpages") / "gate.duckdb")
    info = seed_small(db)
    return {"db": db, "headers": _viewer(db), **info}


@pytest.fixture
def client(seeded):
    from fastapi.testclient import TestClient

    from gate.dashboard.app import create_dashboard_app

    return TestClient(create_dashboard_app(seeded["db"]), headers=seeded["headers"])


def _rows(html: str, table: str) -> list[str]:
    body = html.split(f'id="{table}"', 1)[1].split("</table>", 1)[0]
    return re.findall(r"<tr[ >].*?</tr>", body.split("<tbody>", 1)[1], flags=re.S)


def test_home_lists_releases_and_one_chart_per_scorecard(client, seeded):
    r = client.get("/")
    assert r.status_code == 200
    html = r.text
    assert len(_rows(html, "releases")) == 12
    assert html.count('class="fig-data"') == 2
    assert 'data-scorecard="triage"' in html and 'data-scorecard="tool-use"' in html
    # the gated metrics with their intervals are in the figure JSON the browser draws
    assert '"error_y"' in html and "task-success-improves" in html
    assert f"current: <a href=\"/releases/{seeded['current']}\"" in html
    # plotly.js from this server, never a CDN
    assert re.findall(r'<script src="([^"]+)"', html) == ["/static/plotly.min.js"]


def test_server_side_filters(client):
    only = client.get("/", params={"scorecard": "triage"}).text
    rows = _rows(only, "releases")
    assert len(rows) == 6 and all('data-scorecard="triage"' in r for r in rows)
    assert only.count('class="fig-data"') == 1
    blocked = _rows(client.get("/", params={"verdict": "BLOCK"}).text, "releases")
    promoted = _rows(client.get("/", params={"verdict": "PROMOTE"}).text, "releases")
    assert blocked and promoted and len(blocked) + len(promoted) == 12
    assert all('data-verdict="BLOCK"' in r for r in blocked)


def test_release_page_has_gates_breakdown_checks_and_pins(client, seeded):
    html = client.get(f"/releases/{seeded['current']}").text
    assert len(_rows(html, "gates")) == 3
    assert len(_rows(html, "comparisons")) == 2 * 5  # 2 metrics x (all + 4 categories)
    checks = _rows(html, "data-checks")
    assert len(checks) == 1 and f"/checks/{seeded['check_run']}" in checks[0] and "v-fail" in checks[0]
    assert "adapter_sha256" in html and ">current<" in html


def test_each_gate_says_which_way_is_better(tmp_path):
    """Issue 33 item 9: `no-under-refusal-regression` showed observed -1.0 "pass" with nothing saying that lower
    is better for an under-refusal rate; every gate row now names its direction."""
    from gate.store.db import connect

    db = str(tmp_path / "g.duckdb")
    info = seed_small(db, scorecards=("triage",), releases=1)
    with connect(db) as con:
        con.execute("UPDATE gate_results SET gate = 'no-under-refusal-regression', metric = 'under_refusal', "
                    "direction = 'lower_is_better', observed = -1.0 WHERE gate = 'refusal-no-regression'").fetchall()
    rows = _rows(_client(db).get(f"/releases/{info['current']}").text, "gates")
    (under,) = [r for r in rows if "no-under-refusal-regression" in r]
    assert "lower is better" in under and "higher is better" not in under
    assert all("higher is better" in r for r in rows if r is not under)


def test_a_base_model_from_the_hub_cache_is_named_by_its_repo_and_revision(tmp_path):
    """Issue 33 item 9: the release recorded the resolved cache path, and the pages showed it as the model."""
    from gate.dashboard.pages import model_label
    from gate.store.db import connect

    path = ("/root/.cache/huggingface/hub/models--Qwen--Qwen2.5-0.5B-Instruct/snapshots/"
            "7ae557604adf67be50417f59c2c2f167def9a775")
    assert model_label(path) == "Qwen/Qwen2.5-0.5B-Instruct @ 7ae557604adf"
    assert model_label("Qwen/Qwen2.5-0.5B-Instruct") == "Qwen/Qwen2.5-0.5B-Instruct"
    assert model_label("/models/tiny-llama") == "/models/tiny-llama"
    db = str(tmp_path / "g.duckdb")
    info = seed_small(db, scorecards=("triage",), releases=1)
    with connect(db) as con:
        con.execute("UPDATE releases SET base_model = ?", [path]).fetchall()
    client = _client(db)
    (row,) = _rows(client.get("/").text, "releases")
    assert ">Qwen/Qwen2.5-0.5B-Instruct @ 7ae557604adf<" in row and f'title="{path}"' in row
    pins = client.get(f"/releases/{info['current']}").text.split('id="pins"', 1)[1].split("</table>", 1)[0]
    assert f"Qwen/Qwen2.5-0.5B-Instruct @ 7ae557604adf ({path})" in pins


def test_diff_aligns_metrics_and_marks_changed_pins(client, seeded):
    a, b = seeded["releases"][0], seeded["releases"][3]
    html = client.get("/diff", params={"a": a, "b": b}).text
    metrics = _rows(html, "diff-metrics")
    assert len(metrics) == 2
    assert 'class="changed"' in html
    assert len(_rows(html, "diff-gates")) == 3


def test_unknown_ids_are_404_with_one_line(client):
    r = client.get("/releases/nope")
    assert r.status_code == 404 and "no release &#x27;nope&#x27; in the record" in r.text
    assert client.get("/checks/nope").status_code == 404
    assert client.get("/diff", params={"a": "nope", "b": "nope"}).status_code == 404


def test_findings_show_redacted_snippets_only(client, seeded, tmp_path):
    pages = [client.get(p).text for p in ("/", "/checks", f"/checks/{seeded['check_run']}",
                                          f"/releases/{seeded['current']}")]
    for html in pages:
        for value in PLANTED.values():
            assert value not in html
    findings = _rows(pages[2], "findings")
    assert len(findings) == 5
    assert any("o***@e***.net" in f for f in findings)
    only_pii = _rows(client.get(f"/checks/{seeded['check_run']}", params={"check": "pii"}).text, "findings")
    assert len(only_pii) == 4


def test_a_raw_value_in_the_record_is_masked_on_the_way_out(tmp_path):
    """Defence in depth: a check that wrongly stored a raw e-mail in its message still does not leak it."""

    from gate.dashboard.app import create_dashboard_app
    from gate.store.db import connect

    db = str(tmp_path / "g.duckdb")
    run = seed_check_run(db)
    with connect(db) as con:
        con.execute("UPDATE findings SET message = 'customer wrote from jane.roe@example.org' "
                    "WHERE run_id = ? AND \"check\" = 'contract'", [run]).fetchall()
    html = _client(db, create_dashboard_app(db)).get(f"/checks/{run}").text
    assert "jane.roe@example.org" not in html
    assert "customer wrote from" in html


def test_check_and_rule_names_are_not_masked_but_a_raw_token_beside_them_is(tmp_path):
    """Issue 33 item 9: the secret check's summary showed its rule `base64_high_entropy_string` as `base*** 6`:
    gate's own check and rule names are no personal data; a token in the same text still is masked."""
    from gate.store.db import connect

    db = str(tmp_path / "g.duckdb")
    run = seed_check_run(db)
    token = "a1b2c3d4e5f6a7b8c9d0e1f2a3b4"
    with connect(db) as con:
        con.execute("UPDATE findings SET rule = 'secret.base64_high_entropy_string', \"check\" = 'secret', "
                    "message = 'base64_high_entropy_string near ' || ? WHERE run_id = ? AND \"check\" = 'contract'",
                    [token, run]).fetchall()
        con.execute("UPDATE check_results SET name = 'secret', summary = '6 possible secret(s) in 6 row(s) "
                    "(base64_high_entropy_string 6) ' || ? WHERE run_id = ? AND name = 'contract'",
                    [token, run]).fetchall()
    html = _client(db).get(f"/checks/{run}").text
    summary = next(r for r in _rows(html, "check-results") if 'data-check="secret"' in r)
    assert "(base64_high_entropy_string 6)" in summary and "base***" not in summary
    assert token not in html and token[:4] + "***" in summary
    (finding,) = [r for r in _rows(html, "findings") if 'data-check="secret"' in r]
    assert "base64_high_entropy_string near " + token[:4] + "***" in finding


def test_pages_follow_the_record_and_cache_between_writes(tmp_path):

    from gate.dashboard.app import create_dashboard_app
    from gate.dashboard.routes import CACHE
    from gate.store.releases import record_decision, record_release

    db = str(tmp_path / "g.duckdb")
    client = _client(db, create_dashboard_app(db))
    empty = client.get("/")
    assert empty.status_code == 200 and "No releases in the record yet" in empty.text
    assert client.get("/checks").status_code == 200

    import random

    rng = random.Random(1)
    d, g, c, rel = release_rows("triage", 3, rng=rng)
    record_decision(d, g, c, db)
    record_release(rel, db)
    first = client.get("/").text
    assert rel["release_id"] in first
    hits = CACHE.hits
    assert client.get("/").text == first
    assert CACHE.hits == hits + 1

    d2, g2, c2, rel2 = release_rows("triage", 4, rng=rng)
    rel2["created_at"] = d2["created_at"] = T0 + timedelta(days=400)
    record_decision(d2, g2, c2, db)
    record_release(rel2, db)
    after = client.get("/").text
    assert rel2["release_id"] in after and after != first


def test_pages_go_out_compressed_with_a_validator(client):
    r = client.get("/", headers={"Accept-Encoding": "gzip"})
    assert r.headers["content-encoding"] == "gzip" and int(r.headers["content-length"]) < len(r.content) / 3
    etag = r.headers["etag"]
    again = client.get("/", headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.content == b""
    plain = client.get("/", headers={"Accept-Encoding": "identity"})
    assert "content-encoding" not in plain.headers and plain.text == r.text


def test_plotly_js_is_the_bundled_file(client):
    from gate.dashboard.charts import plotly_js_path

    r = client.get("/static/plotly.min.js")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("application/javascript")
    assert r.content == plotly_js_path().read_bytes()


def test_router_mounts_under_a_prefix(seeded):
    from fastapi import FastAPI
    from fastapi.testclient import TestClient

    from gate.dashboard.routes import router

    app = FastAPI()
    app.state.gate_db = seeded["db"]
    app.include_router(router, prefix="/dashboard")
    html = TestClient(app, headers=seeded["headers"]).get("/dashboard/").text
    assert '<script src="/dashboard/static/plotly.min.js">' in html
    assert f'href="/dashboard/releases/{seeded["current"]}"' in html


def test_importing_the_cli_loads_no_dashboard_dependency():
    heavy = ("fastapi", "uvicorn", "plotly", "jinja2", "duckdb", "starlette")
    code = f"import sys; import gate.cli; print([m for m in {heavy!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"


def _hold_write_lock(db: str, seconds: float) -> subprocess.Popen:
    code = ("import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); print('held', flush=True); "
            "time.sleep(float(sys.argv[2])); c.close()")
    proc = subprocess.Popen([sys.executable, "-c", code, db, str(seconds)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_page_waits_out_a_short_write_and_names_the_file_after_a_long_one(seeded, monkeypatch):
    """Another process writing (gate check, the service's worker) holds DuckDB's file lock: the dashboard retries
    briefly, then answers one line naming the database, never a traceback."""
    from fastapi.testclient import TestClient

    from gate.dashboard import queries
    from gate.dashboard.app import create_dashboard_app
    from gate.dashboard.routes import CACHE

    client = TestClient(create_dashboard_app(seeded["db"]), headers=seeded["headers"])
    client.get("/checks")  # the token's row is read (and kept) before the writer takes the lock
    CACHE.clear()
    writer = _hold_write_lock(seeded["db"], 0.4)
    try:
        assert client.get("/checks").status_code == 200
    finally:
        writer.wait(10)
    CACHE.clear()
    monkeypatch.setattr(queries, "LOCK_RETRIES", 2)
    writer = _hold_write_lock(seeded["db"], 5)
    try:
        r = client.get("/checks")
    finally:
        writer.kill()
        writer.wait(10)
    assert r.status_code == 500
    assert f"{seeded['db']}: cannot open the gate database" in r.text and "Traceback" not in r.text


def test_home_shows_each_releases_data_check_status(tmp_path):
    """Issue 18 item 19: a release whose training data failed its check is not a plain PROMOTE on the home page;
    the status is the record's verdict now (worst of the declared checks), 'none declared' when there is none."""
    import duckdb

    from gate.store.releases import record_decision, record_release

    db = str(tmp_path / "g.duckdb")
    failed, passed = seed_check_run(db, "chk-failed"), seed_check_run(db, "chk-passed")
    with duckdb.connect(db) as con:
        con.execute("UPDATE runs SET verdict = 'pass' WHERE run_id = 'chk-passed'")
    rng = __import__("random").Random(1)
    declared = {0: [failed], 1: [passed], 2: [passed, failed], 3: [], 4: ["chk-gone"]}
    for i, checks in declared.items():
        d, g, c, rel = release_rows("triage", i, rng=rng)
        d["verdict"] = rel["verdict"] = "PROMOTE"
        rel["data_checks"] = [{"run_id": r, "verdict": "pass"} for r in checks]  # what was copied in at release
        record_decision(d, g, c, db)
        record_release(rel, db)
    html = _client(db).get("/").text
    assert "<th>data checks</th>" in html
    status = {re.search(r'/releases/([^"]+)"', row).group(1):
              re.search(r'data-status="([^"]+)"', row).group(1) for row in _rows(html, "releases")}
    assert status == {"triage-r0000": "fail", "triage-r0001": "pass", "triage-r0002": "fail",
                      "triage-r0003": "none", "triage-r0004": "not in record"}


def test_release_page_collapses_the_per_category_table_above_the_evidence(client, seeded):
    """Issue 18 item 19: the ~130-row comparisons table sits in a closed <details>, so the data checks, pins and
    pointer moves below it are one scroll away; its rows are all still there."""
    html = client.get(f"/releases/{seeded['current']}").text
    details = html.split('<details id="comparisons-details">', 1)[1].split("</details>", 1)[0]
    assert 'id="comparisons"' in details and "(10 rows)" in details
    assert html.index("</details>") < html.index('id="data-checks"') < html.index('id="pins"')
    assert "<details id=\"comparisons-details\" open" not in html



@pytest.fixture(scope="module")
def many(tmp_path_factory):
    """1,500 contamination findings sorted before 3 contract findings (issue 33 item 8)."""
    db = str(tmp_path_factory.mktemp("many") / "gate.duckdb")
    return {"db": db, "run": seed_many_findings(db)}


def _counts(html: str) -> dict[str, int]:
    return {re.search(r'data-check="([^"]+)"', r).group(1): int(re.search(r'data-count="(\d+)"', r).group(1))
            for r in _rows(html, "check-results")}


def test_no_check_is_hidden_behind_another_checks_findings(many):
    """Each check's count is on the page, and the pager reaches the contract's 3 findings behind 1,500 others."""
    client = _client(many["db"])
    url = f"/checks/{many['run']}"
    html = client.get(url).text
    assert _counts(html) == {"contamination": 1500, "contract": 3}
    assert len(_rows(html, "findings")) == 200 and "findings 1–200 of 1,503" in html
    seen, pages_read = [], 0
    while True:
        seen += _rows(html, "findings")
        pages_read += 1
        nxt = re.search(r'id="next" href="([^"]+)"', html)
        if not nxt:
            break
        html = client.get(url + nxt.group(1).replace("&amp;", "&")).text
    assert pages_read == 8 and len(seen) == 1503
    assert sum("af-018530" in r for r in seen) == 1 and sum('data-check="contract"' in r for r in seen) == 3
    assert "findings 1,401–1,503 of 1,503" in html and 'id="prev" href="?offset=1200"' in html
    beyond = client.get(url, params={"offset": 5000, "check": "contract"}).text
    assert "past the last of 3 findings" in beyond and 'id="first" href="?check=contract"' in beyond


def test_findings_filter_by_check_rule_split_and_severity_on_the_server(many):
    client = _client(many["db"])
    url = f"/checks/{many['run']}"

    def rows(**params: str) -> list[str]:
        return _rows(client.get(url, params=params).text, "findings")

    contract = rows(check="contract")
    assert len(contract) == 3 and all("language.allowed" in r for r in contract)
    assert len(rows(severity="warning")) == 3
    val_exact = client.get(url, params={"rule": "contamination.exact", "split": "val"}).text
    assert "findings 1–200 of 250" in val_exact
    got = _rows(val_exact, "findings")
    assert all('data-rule="contamination.exact"' in r and 'data-split="val"' in r for r in got)
    assert rows(check="contract", severity="error") == []
    # the filters are the form's selected options, and the counts per check stay the run's
    html = client.get(url, params={"check": "contract"}).text
    assert '<option value="contract" selected>' in html and _counts(html)["contamination"] == 1500


def test_static_check_report_shows_every_check_and_says_where_the_capped_rest_are(many):
    """The static page holds each check's first max_html_findings (bounded), never drops a check, and names the
    record for the rest."""
    from gate.dashboard import pages
    from gate.io.limits import override

    with override(max_html_findings=100):
        html = pages.check_report(many["db"], many["run"])
    assert _counts(html) == {"contamination": 1500, "contract": 3}
    findings = _rows(html, "findings")
    assert sum('data-check="contamination"' in r for r in findings) == 100
    assert sum('data-check="contract"' in r for r in findings) == 3 and "af-018530" in html
    capped = html.split('id="capped"', 1)[1].split("</p>", 1)[0]
    assert "<code>contamination</code> has 1,500" in capped and "contract" not in capped.split("DuckDB")[0]
    assert "DuckDB table <code>findings</code>" in capped and many["run"] in capped
    assert "(first 100 here)" in html.split('data-check="contamination"', 1)[1].split("</tr>", 1)[0]
