"""The release dashboard end to end: a real uvicorn process over a seeded DuckDB, driven by headless Chromium.

Why a real browser: the charts are drawn by plotly.js in the page, and the filters are client-side; only a browser
proves that the bundled plotly.js loads (no CDN), the figures render with their points, and the filter hides what
it should. Screenshots go to .cache/artifacts/ (gitignored) for a human to look at.

The server requires a token (as `gate dashboard` does by default): every test but the login ones runs in a browser
context that logged in once through the real form, holding the HttpOnly session cookie; the login tests prove a
browser without it is refused, and that the token never shows up in a page, a cookie or the server's output.
"""

from __future__ import annotations

from urllib.parse import urlparse

import pytest

from tests.browser.conftest import ARTIFACTS, dashboard, log_in, tracked_page
from tests.dashboard_seed import PLANTED, seed_small
from tests.tamper import tampered

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from gate.service.auth import create_token

    tmp = tmp_path_factory.mktemp("dash")
    db = str(tmp / "gate.duckdb")
    info = seed_small(db)
    _seed_corrections(db)
    tokens = {name: create_token(db, name, "viewer") for name in ("alice", "bob")}
    with dashboard(db, tmp / "server.log") as url:
        yield {"url": url, "db": db, "tokens": tokens, **info}
    output = (tmp / "server.log").read_text(encoding="utf-8")
    assert not any(t in output or t.split("_", 2)[2] in output for t in tokens.values()), "a token in the server log"


def _seed_corrections(db: str) -> None:
    """Two applies through the real writer: two corrections by a contract rule, one with a free-text reason that
    names a customer (the page must show it masked)."""
    from gate.store.corrections import record_apply

    def fix(rid: str, reason: str, rule: str | None, reviewer: str) -> dict:
        return {"id": rid, "split": "train", "row": 1, "field": "answer.severity", "old": "medium", "new": "high",
                "reason": reason, "rule": rule, "reviewer": reviewer, "time": "2026-12-05T04:00:00Z"}

    for key, applied in (("apply-1", [fix("tri-000001", "rule:outage-escalates", "outage-escalates", "ana"),
                                      fix("tri-000002", "rule:outage-escalates", "outage-escalates", "bo")]),
                         ("apply-2", [fix("tri-000003", f"reach {PLANTED['email']} or {PLANTED['phone']} first",
                                          None, "bo")])):
        record_apply({"key": key, "dataset": "data/triage", "input_fingerprint": "in", "output_fingerprint": "out",
                      "corrections_sha256": key, "applied": applied}, f"out/{key}", db)


@pytest.fixture(scope="module")
def session_state(browser, server):
    """One real login; the cookie it set is handed to each test's fresh context."""
    ctx = browser.new_context()
    pg = ctx.new_page()
    refused = pg.goto(server["url"] + "/")
    assert refused.status == 401
    log_in(pg, server["tokens"]["alice"])
    assert pg.url == server["url"] + "/"
    (cookie,) = ctx.cookies()
    assert cookie["name"] == "gate_session" and cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    state = ctx.storage_state()
    ctx.close()
    return state


@pytest.fixture
def page(browser, server, session_state):
    yield from tracked_page(browser, storage_state=session_state)


def _only_local(page, server) -> None:
    own = urlparse(server["url"]).netloc
    foreign = [u for u in page.requests_seen if urlparse(u).netloc != own]
    assert not foreign, f"the page reached outside the dashboard: {foreign}"
    assert not page.errors_seen, page.errors_seen


def _no_planted_pii(page) -> None:
    html = page.content()
    for value in PLANTED.values():
        assert value not in html


def test_home_charts_render_and_filter_works(page, server):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.goto(server["url"] + "/")
    page.wait_for_selector(".chart-card .main-svg", timeout=30_000)
    cards = page.locator(".chart-card[data-scorecard]")
    assert cards.count() == 2
    # every chart drew one marker per release for each of its gates (6 releases x 3 gates)
    for i in range(cards.count()):
        points = cards.nth(i).locator(".scatterlayer .trace .points path")
        assert points.count() == 6 * 3
        assert cards.nth(i).locator(".scatterlayer .trace").count() == 3
    # error bars (the confidence intervals) are drawn
    assert page.locator(".chart-card .errorbars .errorbar").count() > 0
    assert any(u.endswith("/static/plotly.min.js") for u in page.requests_seen)
    rows = page.locator("#releases tbody tr")
    assert rows.count() == 12
    page.screenshot(path=str(ARTIFACTS / "dashboard-home.png"), full_page=True)

    page.select_option("#f-scorecard", "tool-use")
    visible = page.locator("#releases tbody tr:visible")
    assert visible.count() == 6
    assert set(visible.evaluate_all("rows => rows.map(r => r.dataset.scorecard)")) == {"tool-use"}
    assert page.locator('.chart-card[data-scorecard="triage"]').is_hidden()
    assert page.locator('.chart-card[data-scorecard="tool-use"]').is_visible()
    assert "scorecard=tool-use" in page.url

    verdicts = set(page.locator("#releases tbody tr").evaluate_all("rows => rows.map(r => r.dataset.verdict)"))
    assert verdicts == {"PROMOTE", "BLOCK"}, "the seed must hold both verdicts for the filter to mean something"
    page.select_option("#f-verdict", "BLOCK")
    blocked = page.locator("#releases tbody tr:visible")
    got = blocked.evaluate_all("rows => rows.map(r => [r.dataset.scorecard, r.dataset.verdict])")
    assert got and all(v == ["tool-use", "BLOCK"] for v in got)
    assert page.locator("#f-count").inner_text() == f"{len(got)} release(s) shown"
    page.screenshot(path=str(ARTIFACTS / "dashboard-home-filtered.png"), full_page=True)
    _only_local(page, server)
    _no_planted_pii(page)


def test_server_side_filter_from_the_url(page, server):
    page.goto(server["url"] + "/?verdict=PROMOTE")
    page.wait_for_selector(".chart-card .main-svg", timeout=30_000)
    got = page.locator("#releases tbody tr").evaluate_all("rows => rows.map(r => r.dataset.verdict)")
    assert got and set(got) == {"PROMOTE"}
    # widening the filter fetches the full list again
    page.select_option("#f-verdict", "")
    page.wait_for_function("document.querySelectorAll('#releases tbody tr').length === 12")
    _only_local(page, server)


def test_release_page_gates_categories_and_data_checks(page, server):
    rid = server["current"]
    page.goto(server["url"] + f"/releases/{rid}")
    page.wait_for_selector("#categories .main-svg", timeout=30_000)
    assert page.locator("#gates tbody tr").count() == 3
    assert page.locator("#gates .direction").all_inner_texts() == ["higher is better"] * 3
    # per-category bars: 2 metrics x (all + 4 categories)
    assert page.locator("#categories .barlayer .point").count() == 10
    assert page.locator("#history .scatterlayer .trace .points path").count() > 0
    assert "current" in page.locator("h1").inner_text()
    page.screenshot(path=str(ARTIFACTS / "dashboard-release.png"), full_page=True)
    link = page.locator("#data-checks a")
    assert link.inner_text() == server["check_run"]
    link.click()
    page.wait_for_selector("#findings")
    assert page.locator("#findings tbody tr").count() == 5
    snippets = page.locator("#findings tbody td code").all_inner_texts()
    assert any("o***@e***.net" in s for s in snippets)
    _no_planted_pii(page)
    with page.expect_navigation():  # the live page filters on the server
        page.select_option("#f-severity", "warning")
    assert "severity=warning" in page.url and page.locator("#findings tbody tr").count() == 1
    page.screenshot(path=str(ARTIFACTS / "dashboard-findings.png"), full_page=True)
    _only_local(page, server)


def test_diff_page_side_by_side(page, server):
    a, b = server["releases"][0], server["releases"][5]
    page.goto(server["url"] + f"/diff?a={a}&b={b}")
    page.wait_for_selector("#diff .main-svg", timeout=30_000)
    assert page.locator("#diff .barlayer .point").count() == 4  # 2 metrics x 2 releases
    changed = page.locator("#diff-pins td.changed")
    assert changed.count() >= 2  # at least the adapter hash differs
    assert page.locator("#diff-gates tbody tr").count() == 3
    page.screenshot(path=str(ARTIFACTS / "dashboard-diff.png"), full_page=True)
    _only_local(page, server)


def test_checks_list_and_unknown_release(page, server):
    page.goto(server["url"] + "/checks")
    assert page.locator("#check-runs tbody tr").count() == 1
    resp = page.goto(server["url"] + "/releases/no-such-release")
    assert resp.status == 404
    assert "no release 'no-such-release'" in page.content()
    _no_planted_pii(page)


def test_corrections_page_lists_rules_and_masks_reasons(page, server):
    page.goto(server["url"] + "/corrections")
    rows = page.locator("#corrections-by-rule tbody tr")
    assert rows.count() == 2
    assert rows.nth(0).inner_text().split("\t")[:3] == ["outage-escalates", "2", "2"]
    assert page.locator("#corrections-applies tbody tr").count() == 2
    assert page.locator("#free-text-reasons tbody tr").count() == 1
    page.screenshot(path=str(ARTIFACTS / "dashboard-corrections.png"), full_page=True)
    _no_planted_pii(page)
    _only_local(page, server)


def test_static_report_draws_offline_from_its_own_folder(page, server, tmp_path):
    """The report opened from disk (file://) draws its charts with the plotly.min.js next to it, nothing else."""
    from gate.dashboard.static import write_release_report

    out = tmp_path / "report"
    index = write_release_report(server["db"], server["current"], out)
    page.goto(index.as_uri())
    page.wait_for_selector("#categories .main-svg", timeout=30_000)
    assert page.locator("#history .scatterlayer .trace .points path").count() > 0
    assert page.locator("#categories .barlayer .point").count() == 10
    assert all(u.startswith("file://") for u in page.requests_seen), page.requests_seen
    assert not page.errors_seen, page.errors_seen
    page.screenshot(path=str(ARTIFACTS / "release-report.png"), full_page=True)
    _no_planted_pii(page)


def test_without_login_every_page_and_asset_is_refused(browser, server):
    ctx = browser.new_context()
    pg = ctx.new_page()
    try:
        for path in ("/", "/checks", f"/checks/{server['check_run']}", f"/releases/{server['current']}",
                     f"/diff?a={server['releases'][0]}&b={server['releases'][1]}", "/static/plotly.min.js"):
            resp = pg.goto(server["url"] + path)
            assert resp.status == 401, path
            html = pg.content()
            # nothing of the record (the URL asked for is echoed only as where to go after logging in)
            assert not any(m in html for m in ("task-success-improves", "e***.net", "fig-data", "#findings")), path
        # a script may not read the session cookie, so a page cannot be made to hand it on
        pg.goto(server["url"] + "/checks")
        assert pg.locator("#login").count() == 1
        pg.fill("#token", tampered(server["tokens"]["alice"]))
        with pg.expect_navigation():
            pg.click("#login button[type=submit]")
        assert "unknown, wrong or revoked token" in pg.content() and not ctx.cookies()
        log_in(pg, server["tokens"]["alice"])
        assert pg.url == server["url"] + "/checks"  # back where the refused request was headed
        assert pg.locator("#check-runs tbody tr").count() == 1
        assert pg.evaluate("document.cookie") == ""
        assert server["tokens"]["alice"] not in pg.content()
        with pg.expect_navigation():
            pg.click("header form button")  # log out
        assert pg.locator("#login").count() == 1 and not ctx.cookies()
        assert pg.goto(server["url"] + "/").status == 401
    finally:
        ctx.close()


def test_revoking_the_token_ends_the_browser_session(browser, server):
    from gate.store.service import revoke_token

    ctx = browser.new_context()
    pg = ctx.new_page()
    try:
        pg.goto(server["url"] + "/checks")
        log_in(pg, server["tokens"]["bob"])
        assert pg.locator("#check-runs tbody tr").count() == 1
        assert revoke_token(server["db"], "bob")  # `gate token revoke bob`, while the dashboard runs
        resp = pg.reload()
        assert resp.status == 401 and "your session ended" in pg.content()
        assert not ctx.cookies()
    finally:
        ctx.close()
