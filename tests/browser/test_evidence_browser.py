"""The evidence pages of issue 18 (items 17 to 19) in headless Chromium: the static check-run page opened from
disk, the per-item answers (live and static) with their "changed verdicts" filter, the home page's data-check
column and time axis, the release page's collapsed per-category table.

Why a browser: the filters are client-side and the charts are drawn by the bundled plotly.js; only a browser shows
that the page a reviewer opens works and draws from its own folder. Screenshots go to .cache/artifacts/.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from tests.browser.conftest import ARTIFACTS, dashboard, log_in, tracked_page
from tests.dashboard_seed import PLANTED, release_rows, seed_many_findings, seed_small
from tests.leakscan import planted_values
from tests.test_dashboard_items import CHANGED, N_ITEMS, SCORECARD, seed_items
from tests.test_report_html import FIXTURES, checked_run

pytestmark = pytest.mark.slow
SUBSECOND = re.compile(r"\d:\d\d:\d\d|\.\d{3}")  # a tick that shows seconds or milliseconds


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from gate.service.auth import create_token

    tmp = tmp_path_factory.mktemp("evidence")
    db = str(tmp / "gate.duckdb")
    info = seed_small(db)
    items = seed_items(db)
    many = seed_many_findings(db)
    token = create_token(db, "carol", "viewer")
    with dashboard(db, tmp / "server.log") as url:
        yield {"url": url, "db": db, "token": token, "items": items, "many": many, **info}


@pytest.fixture
def page(browser: Any) -> Any:
    yield from tracked_page(browser)


def _logged_in(page: Any, server: dict[str, Any], path: str) -> None:
    page.goto(server["url"] + path)
    log_in(page, server["token"])
    assert urlparse(page.url).path == path


def _clean(page: Any, *, local: str | None = None) -> None:
    if local is None:
        assert all(u.startswith("file://") for u in page.requests_seen), page.requests_seen
    else:
        assert all(urlparse(u).netloc == local for u in page.requests_seen), page.requests_seen
    assert not page.errors_seen, page.errors_seen
    html = page.content()
    for value in PLANTED.values():
        assert value not in html


def test_static_check_page_draws_and_filters_offline(page: Any, tmp_path: Path) -> None:
    """Item 17: `gate report-html --check-run` on a real check of the faulty fixture, opened from disk."""
    from gate.report.html_check import write_check_report

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    run = checked_run(tmp_path)
    index = write_check_report(run["db"], run["run_id"], tmp_path / "check-page")
    page.goto(index.as_uri())
    page.wait_for_selector("#length-chart .main-svg", timeout=30_000)
    assert page.locator("#length-chart .barlayer .point").count() == 3 * 4  # 3 splits x p50/p90/p99/max
    assert page.locator("h1 .v-fail").count() == 1
    assert page.locator("#clusters tbody tr").count() == 4
    total = page.locator("#findings tbody tr").count()
    assert total > 20
    page.select_option("#f-check", "pii")
    planted = json.loads((FIXTURES / "triage-faulty" / "FAULTS.json").read_text())
    assert page.locator("#findings tbody tr:visible").count() == sum(f["check"] == "pii" for f in planted) == 9
    assert set(page.locator("#findings tbody tr:visible").evaluate_all("r => r.map(x => x.dataset.check)")) == {"pii"}
    page.screenshot(path=str(ARTIFACTS / "check-report.png"), full_page=True)
    page.select_option("#f-check", "")
    assert page.locator("#findings tbody tr:visible").count() == min(total, 200)  # a page of the embedded rows
    _clean(page)
    html = page.content()
    assert not [p for p in planted_values(FIXTURES / "triage-faulty") if p.value in html]


def test_check_run_pages_through_every_check_live_and_static(page: Any, server: dict[str, Any],
                                                              tmp_path: Path) -> None:
    """Issue 33 item 8: 1,500 contamination findings sort before the contract's 3; the live page counts both and its
    filters and pager (server-side) reach them; the static file (capped per check) does the same client-side."""
    from gate.io.limits import override
    from gate.report.html_check import write_check_report

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = f"/checks/{server['many']}"
    _logged_in(page, server, path)
    counts = page.locator("#check-results td.finding-count").all_inner_texts()
    assert counts == ["1,500", "3"]
    assert page.locator("#findings tbody tr").count() == 200
    assert page.locator("#pager").inner_text().startswith("findings 1–200 of 1,503")
    with page.expect_navigation():
        page.select_option("#f-check", "contract")
    assert "check=contract" in page.url and page.locator("#findings tbody tr").count() == 3
    assert set(page.locator("#findings tbody tr").evaluate_all("r => r.map(x => x.dataset.check)")) == {"contract"}
    page.screenshot(path=str(ARTIFACTS / "dashboard-check-run-filtered.png"), full_page=True)
    with page.expect_navigation():
        page.select_option("#f-check", "")
    with page.expect_navigation():
        page.select_option("#f-split", "val")
    assert page.locator("#pager").inner_text().startswith("findings 1–200 of 500")
    with page.expect_navigation():
        page.click("#next")
    assert "offset=200" in page.url and "split=val" in page.url
    assert page.locator("#pager").inner_text().startswith("findings 201–400 of 500")
    _clean(page, local=urlparse(server["url"]).netloc)

    page.requests_seen.clear()
    with override(max_html_findings=300):
        index = write_check_report(server["db"], server["many"], tmp_path / "many")
    page.goto(index.as_uri())
    assert page.locator("#findings tbody tr").count() == 303  # 300 of contamination, all 3 of contract
    assert page.locator("#findings tbody tr:visible").count() == 200
    assert "1,500" in page.locator("#capped").inner_text() and "DuckDB" in page.locator("#capped").inner_text()
    page.click("#next")
    assert page.locator("#findings tbody tr:visible").count() == 103
    assert page.locator("#pager-text").inner_text() == "findings 201–303 of 303 in this file"
    assert page.locator("#next").is_disabled()
    page.select_option("#f-severity", "warning")
    visible = page.locator("#findings tbody tr:visible")
    assert visible.count() == 3 and "af-018530" in visible.first.inner_text()
    page.select_option("#f-severity", "")
    page.select_option("#f-rule", "contamination.exact")
    assert page.locator("#pager-text").inner_text() == "findings 1–150 of 150 in this file"
    page.screenshot(path=str(ARTIFACTS / "check-report-paged.png"), full_page=False)
    _clean(page)


def test_item_answers_filter_to_changed_verdicts(page: Any, server: dict[str, Any], tmp_path: Path) -> None:
    """Item 18, live: from the release page's link to the items; the filter keeps the changed ones."""
    rid = server["items"]["release"]
    _logged_in(page, server, f"/releases/{rid}")
    with page.expect_navigation():
        page.click("#items-link")
    rows = page.locator("#items > tbody > tr[data-item]")
    assert rows.count() == N_ITEMS
    page.check("#f-changed")
    visible = page.locator("#items > tbody > tr[data-item]:visible")
    assert visible.count() == len(CHANGED)
    assert set(visible.evaluate_all("r => r.map(x => x.dataset.item)")) == server["items"]["changed"]
    assert page.locator("#f-items").inner_text() == f"{len(CHANGED)} item(s) shown"
    page.select_option("#f-scorer", "format.parsed")  # that scorer never changed its verdict
    assert page.locator("#items > tbody > tr[data-item]:visible").count() == 0
    page.select_option("#f-scorer", "triage.strict")
    assert page.locator("#items > tbody > tr[data-item]:visible").count() == len(CHANGED)
    assert page.locator("#items tr[data-scorer='format.parsed']:visible").count() == 0
    page.screenshot(path=str(ARTIFACTS / "dashboard-items.png"), full_page=True)
    page.uncheck("#f-changed")
    assert page.locator("#items > tbody > tr[data-item]:visible").count() == N_ITEMS
    _clean(page, local=urlparse(server["url"]).netloc)


def test_static_release_report_items_with_prompts(page: Any, server: dict[str, Any], tmp_path: Path) -> None:
    """Item 18, static: items.html next to the release page, prompts from the scorecard, the same filter."""
    from gate.dashboard.static import write_release_report

    index = write_release_report(server["db"], server["items"]["release"], tmp_path / "rel", scorecard=str(SCORECARD))
    page.goto(index.as_uri())
    page.click("#items-link")
    page.wait_for_selector("#items")
    assert page.url.endswith("/items.html")
    assert "photo studio opens early" in page.locator("#items > tbody > tr[data-item]").first.inner_text()
    page.check("#f-changed")
    assert page.locator("#items > tbody > tr[data-item]:visible").count() == len(CHANGED)
    page.screenshot(path=str(ARTIFACTS / "release-report-items.png"), full_page=True)
    _clean(page)


def test_items_page_fits_the_window_with_long_unbroken_text(page: Any, tmp_path: Path) -> None:
    """Issue 33 item 9: an answer or explanation with no spaces (JSON, a URL) widened the table past the window and
    cut off the scorers' explanations; every cell now wraps inside a 1280 px window."""
    from gate.dashboard.static import write_release_report
    from gate.store.db import connect

    db = str(tmp_path / "items.duckdb")
    info = seed_items(db)
    blob = '{"expected":{"product":"billing","severity":"low","next_action":"refund_review"},"got":' * 8
    with connect(db) as con:
        con.execute("UPDATE scores SET explanation = ? WHERE scorer = 'triage'", [blob]).fetchall()
        con.execute("UPDATE samples SET output = ?", [blob.replace('"got":', '"answer":')]).fetchall()
    page.goto(write_release_report(db, info["release"], tmp_path / "rel", scorecard=str(SCORECARD)).as_uri())
    page.click("#items-link")
    page.wait_for_selector("#items")
    width = page.evaluate("window.innerWidth")
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    right = page.locator("#items table.scores div.muted").evaluate_all(
        "r => Math.max(...r.map(x => x.getBoundingClientRect().right))")
    assert right <= width, right
    page.screenshot(path=str(ARTIFACTS / "release-report-items-wrapped.png"), full_page=False)
    _clean(page)


def test_home_data_check_column_and_time_axis(page: Any, server: dict[str, Any], tmp_path: Path) -> None:
    """Item 19: the column is there (every seeded release declares the failed check); ticks are dates."""
    _logged_in(page, server, "/")
    page.wait_for_selector(".chart-card .main-svg", timeout=30_000)
    status = page.locator("#releases tbody td.data-check-status").evaluate_all("r => r.map(x => x.dataset.status)")
    assert len(status) == 13 and status.count("fail") == 12 and status.count("none") == 1
    ticks = page.locator(".chart-card .xtick text").evaluate_all("r => r.map(x => x.textContent)")
    assert ticks and not [t for t in ticks if SUBSECOND.search(t)], ticks
    page.screenshot(path=str(ARTIFACTS / "dashboard-home-status.png"), full_page=True)
    _clean(page, local=urlparse(server["url"]).netloc)


def test_one_release_gets_no_subsecond_ticks(page: Any, tmp_path: Path) -> None:
    """Item 19: a scorecard with a single release (plotly's autorange would zoom to milliseconds)."""
    import random

    from gate.dashboard.static import write_release_report
    from gate.store.releases import record_decision, record_release

    db = str(tmp_path / "one.duckdb")
    d, g, c, rel = release_rows("solo", 0, rng=random.Random(2))
    record_decision(d, g, c, db)
    record_release(rel, db)
    page.goto(write_release_report(db, rel["release_id"], tmp_path / "solo").as_uri())
    page.wait_for_selector("#history .main-svg", timeout=30_000)
    ticks = page.locator("#history .xtick text").evaluate_all("r => r.map(x => x.textContent)")
    assert ticks and not [t for t in ticks if SUBSECOND.search(t)], ticks
    _clean(page)


def test_releases_seconds_apart_get_their_own_places_on_the_time_axis(page: Any, tmp_path: Path) -> None:
    """Issue 33 item 9: two releases 10 s apart drew on one line of a day-wide axis; the axis now fits the span."""
    import random
    from datetime import timedelta

    from gate.dashboard.static import write_release_report
    from gate.store.releases import record_decision, record_release

    db = str(tmp_path / "pair.duckdb")
    rng = random.Random(3)
    first = None
    for i in range(2):
        d, g, c, rel = release_rows("pair", i, rng=rng)
        first = first or rel["created_at"]
        rel["created_at"] = d["created_at"] = first + timedelta(seconds=10 * i)
        record_decision(d, g, c, db)
        record_release(rel, db)
    page.goto(write_release_report(db, rel["release_id"], tmp_path / "pair").as_uri())
    page.wait_for_selector("#history .main-svg", timeout=30_000)
    ticks = page.locator("#history .xtick text").evaluate_all("r => r.map(x => x.textContent)")
    assert ticks and all(re.fullmatch(r"\d\d:\d\d:\d\d", t) for t in ticks), ticks  # seconds, not ms
    xs = page.locator("#history .scatterlayer .trace .points path").evaluate_all(
        "r => r.map(x => x.getBoundingClientRect().x)")
    assert len(xs) >= 2 and max(xs) - min(xs) > 100, xs  # the two releases drawn well apart
    page.locator("#history").screenshot(path=str(ARTIFACTS / "release-history-seconds-apart.png"))
    _clean(page)


def test_release_page_collapses_the_category_table(page: Any, server: dict[str, Any]) -> None:
    """Item 19: the per-category rows are hidden until asked for; the data checks are on screen without them."""
    _logged_in(page, server, f"/releases/{server['current']}")
    page.wait_for_selector("#categories .main-svg", timeout=30_000)
    assert page.locator("#comparisons").is_hidden() and page.locator("#data-checks").is_visible()
    page.click("#comparisons-details summary")
    assert page.locator("#comparisons").is_visible() and page.locator("#comparisons tbody tr").count() == 10
    page.screenshot(path=str(ARTIFACTS / "dashboard-release-collapsed.png"), full_page=True)
    _clean(page, local=urlparse(server["url"]).netloc)
