"""The leak scan `gate demo` ends with (gate/demo/leakscan.py) really finds a planted value where it is written.

A small record made by the real store writers (tests/dashboard_seed.py: two releases and a check run) is first
scanned clean; then three of the fixtures' planted values are slipped in: one into a report file under the
output folder, one into a DuckDB table the dashboard never shows, one into a release's notes (a dashboard-visible
field). The scan must name each place and each value's id, exit 1 through the demo's own step, and never print
the value. About 10 s (three scans, each rendering every dashboard page in-process).
"""

from __future__ import annotations

import io
import shutil

import duckdb
import pytest
from rich.console import Console

from gate.commands.demo import leak_scan
from gate.demo.leakscan import planted_values, scan_demo
from tests.conftest import FIXTURES
from tests.dashboard_seed import seed_small


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    work = tmp_path_factory.mktemp("leakscan")
    db = str(work / "gate.duckdb")
    ids = seed_small(db, scorecards=("triage",), releases=2)
    return db, ids


def _planted():
    planted = planted_values(FIXTURES / "triage-faulty")
    by_kind = {p.kind: p for p in planted}
    return planted, by_kind["EMAIL_ADDRESS"], by_kind["github_token"], by_kind["CREDIT_CARD"]


@pytest.fixture
def leaky(seeded, tmp_path):
    """A copy of the record and an output folder with one planted value in a file, a table and a release note."""
    src, ids = seeded
    db = str(tmp_path / "gate.duckdb")
    shutil.copy(src, db)
    out = tmp_path / "demo"
    (out / "triage-faulty").mkdir(parents=True)
    (out / "triage-faulty" / "report.md").write_text("# findings\nclean\n")
    _, in_file, in_table, in_note = _planted()
    (out / "loop").mkdir()
    (out / "loop" / "notes.txt").write_text(f"contact: {in_file.value}\n")
    release = ids["releases"][0]
    with duckdb.connect(db) as con:
        con.execute("CREATE TABLE scratch (id INTEGER, payload STRUCT(k VARCHAR, v VARCHAR[]))")
        con.execute("INSERT INTO scratch VALUES (1, {'k': 'x', 'v': [?]})", [in_table.value])
        con.execute("UPDATE releases SET notes = ? WHERE release_id = ?", [f"reviewed by {in_note.value}", release])
    return db, out, release


def test_a_clean_record_scans_clean_and_the_counts_are_real(seeded, tmp_path):
    db, ids = seeded
    copy = str(tmp_path / "gate.duckdb")
    shutil.copy(db, copy)
    out = tmp_path / "demo"
    out.mkdir()
    (out / "report.md").write_text("no findings\n")
    result = scan_demo(out, copy, datasets=[FIXTURES / "triage-faulty"])
    assert result.leaks == []
    assert result.planted == len(planted_values(FIXTURES / "triage-faulty")) >= 16
    assert result.files == 1
    assert result.tables >= 5  # runs, findings, decisions, releases, tokens...
    # home (x scorecard x verdict filters), each release, each ordered pair of the diff, the checks list, the check
    # run (x each of its checks), plotly.js
    assert result.pages >= 2 * 3 + 2 + 4 + 1 + 3 + 1
    assert result.summary().startswith("leak scan: 0 of ")
    with duckdb.connect(copy, read_only=True) as con:  # the scan's own token is revoked when it is done
        rows = con.execute("SELECT revoked_at FROM tokens WHERE name LIKE 'leak-scan-%'").fetchall()
    assert len(rows) == 1 and rows[0][0] is not None


def test_the_scan_finds_a_value_in_a_file_a_table_and_a_dashboard_page(leaky):
    db, out, release = leaky
    _, in_file, in_table, in_note = _planted()
    result = scan_demo(out, db, datasets=[FIXTURES / "triage-faulty"])
    found = {(leak.where, leak.kind, leak.planted_at) for leak in result.leaks}
    assert (str(out / "loop" / "notes.txt"), in_file.kind, in_file.where) in found
    assert ("duckdb:gate.duckdb:scratch.payload", in_table.kind, in_table.where) in found
    assert ("duckdb:gate.duckdb:releases.notes", in_note.kind, in_note.where) in found
    assert (f"dashboard GET /releases/{release}", in_note.kind, in_note.where) in found
    assert {leak.kind for leak in result.leaks} == {in_file.kind, in_table.kind, in_note.kind}
    assert not any(leak.where.endswith("report.md") for leak in result.leaks)
    for leak in result.leaks:
        assert leak.dataset == "triage-faulty"
        assert not any(p.value in str(leak) for p in (in_file, in_table, in_note))


def test_the_demo_step_exits_1_and_names_place_and_value_id_never_the_value(leaky):
    db, out, release = leaky
    _, in_file, in_table, in_note = _planted()
    buf = io.StringIO()
    console = Console(file=buf, width=300, highlight=False)
    code = leak_scan(str(out), db, {"output of step 1": "nothing to see"}, console)
    text = buf.getvalue()
    assert code == 1, text
    assert "leak scan: 3 of " in text
    assert f"{in_file.kind} planted at triage-faulty:{in_file.where} found in {out / 'loop' / 'notes.txt'}" in text
    assert f"found in dashboard GET /releases/{release}" in text
    for p in (in_file, in_table, in_note):
        assert not any(probe in text for probe in p.probes()), p.kind


def test_a_log_line_is_scanned_too(seeded, tmp_path):
    db, _ = seeded
    copy = str(tmp_path / "gate.duckdb")
    shutil.copy(db, copy)
    _, in_file, _, _ = _planted()
    buf = io.StringIO()
    code = leak_scan(str(tmp_path), copy, {"output of step 5": f"x {in_file.value} y"}, Console(file=buf, width=300))
    assert code == 1 and "found in output of step 5" in buf.getvalue()


def test_the_scan_looks_for_its_whole_token_and_whole_secret_never_a_fragment(tmp_path):
    """issue 15 item 1: the scan looked for `token.rsplit("_", 1)[-1]`; a token_urlsafe secret often holds `_`,
    so that fragment could be one character and "match" any page (the demo failed on its first run)."""
    from gate.demo.leakscan import token_shown
    from gate.service.auth import create_token, parse_token

    db = str(tmp_path / "gate.duckdb")
    for n in range(200):  # real tokens until one's secret has a short piece after its last '_'
        token = create_token(db, f"t{n}", "viewer")
        secret = parse_token(token)[1]
        if "_" in secret and len(secret.rsplit("_", 1)[-1]) <= 3:
            break
    else:
        pytest.fail("no token with a short last fragment in 200 tries")
    fragment = secret.rsplit("_", 1)[-1]
    pages = {"dashboard GET /": f"<p>{fragment} {fragment}</p>" + "x" * 100}
    assert token_shown(token, pages) is None
    assert token_shown(token, {**pages, "dashboard GET /tokens": f"<td>{secret}</td>"}) == "dashboard GET /tokens"
    assert token_shown(token, {"GET /a": "clean", "GET /b": f"Bearer {token}"}) == "GET /b"


def test_every_page_of_a_paged_check_run_is_scanned(tmp_path):
    """The check-run page took filters and an offset; the scan refused the route (the demo's second half failed),
    and it must render the pages past the first, where a value could hide."""
    from gate.dashboard.app import create_dashboard_app
    from gate.dashboard.pages import PAGE_SIZE
    from gate.demo.leakscan import _get_routes, _page_sources, _page_urls
    from tests.dashboard_seed import seed_many_findings

    db = str(tmp_path / "g.duckdb")
    run = seed_many_findings(db, big=2 * PAGE_SIZE + 5, small=3)
    route = next(r for r in _get_routes(create_dashboard_app(db)) if r.path == "/checks/{run_id}")
    urls = _page_urls(route, _page_sources(db))
    assert f"/checks/{run}?offset={PAGE_SIZE}" in urls and f"/checks/{run}?offset={2 * PAGE_SIZE}" in urls
    assert f"/checks/{run}" in urls and f"/checks/{run}?check=contract" in urls


def test_every_dashboard_route_has_values_in_the_scan_and_a_review_queue_is_read(tmp_path):
    """The review pages were added without values for `review_id` in the demo's scan: the demo failed at its leak
    scan. Every route of the app must be enumerable, and a recorded queue's page is among the URLs."""
    from gate.dashboard.app import create_dashboard_app
    from gate.demo.leakscan import _get_routes, _page_sources, _page_urls
    from tests.conftest import CONTRACTS, FIXTURES, gate_inprocess
    from tests.dashboard_seed import seed_check_run

    db = str(tmp_path / "g.duckdb")
    seed_check_run(db)
    code, text = gate_inprocess("review", str(FIXTURES / "triage-faulty"), "-c", str(CONTRACTS / "triage.yaml"),
                                "--checks", "conflicting_answers", "-o", str(tmp_path / "review"), "--db", db, "-q")
    assert code == 0, text
    review_id = next(ln for ln in text.splitlines() if ln.startswith("review-")).split(":")[0]
    sources = _page_sources(db)
    urls = [u for r in _get_routes(create_dashboard_app(db)) for u in _page_urls(r, sources)]
    assert f"/review/{review_id}" in urls and "/review" in urls
