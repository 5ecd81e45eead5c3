"""No leaks after a demo-like run: reports, logs, DuckDB, every dashboard page and API read, the static report.

The record is made the way `make demo` makes it, minus training (the full demo takes minutes): `gate demo
--data-only` (every fixture checked, the faulty ones full of planted personal data and secrets, the tool-use set
through its chat template), two `gate score` runs served by the OpenAI-compatible test server (a PROMOTE and a
BLOCK decision), two releases whose data checks are the faulty runs, a promote, and `gate report-html` of each.

Then the service app and the standalone dashboard app are asked for every GET route they have, enumerated from
`app.routes` with their path and query parameters filled from the record (each release, each pair for the diff,
each check run, each check of it...). A route whose parameter this test has no values for fails the test: a
page added tomorrow is scanned, or this test says it is not. Every body is searched for every planted value of
the fixtures (tests/leakscan.py). This module takes about a minute (the data door dominates).
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

import duckdb
import pytest

from gate.testing.fake_openai import triage_model
from tests.conftest import FIXTURES, ROOT, gate_inprocess, run_gate
from tests.leakscan import planted_values, scan, strings_of

FAULTY = ["triage-faulty", "tool-use-faulty"]
SCORECARD = ROOT / "scorecards" / "triage.yaml"
#: GET routes the record of this run has nothing for (no job ran in it): visited, expected 404, listed here
NO_DATA = {"/jobs/{job_id}", "/jobs/{job_id}/files/{name}"}






@pytest.fixture(scope="module")
def record(tmp_path_factory):
    work = tmp_path_factory.mktemp("noleaks")
    db = str(work / "gate.duckdb")
    logs: dict[str, str] = {}
    res = run_gate("demo", "--data-only", "--db", db, "--out", str(work / "demo"), cwd=work)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    logs["demo stdout"], logs["demo stderr"] = res.stdout, res.stderr
    with duckdb.connect(db, read_only=True) as con:
        runs = dict(con.execute("SELECT regexp_extract(dataset, '[^/]+$'), run_id FROM runs "
                                "WHERE kind = 'check'").fetchall())
    assert set(FAULTY) <= set(runs), runs
    srv = triage_model(SCORECARD)
    try:
        decisions = {}
        for cand, base, expect in (("tiny", "tinylora", 0), ("tinylora", "tiny", 100)):
            code, out = gate_inprocess("score", cand, "--baseline", base, "--scorecard", str(SCORECARD), "--engine",
                                       "url", "--base-url", srv.url, "--db", db, "--out", str(work / f"score-{cand}"),
                                       "--limit", "24")
            assert code == expect, out[-2000:]
            logs[f"score {cand}"] = out
            decisions[cand] = json.loads((work / f"score-{cand}" / "decision.json").read_text())["decision_id"]
    finally:
        srv.kill()
    steps = [("release", "create", "--decision", decisions["tiny"], "--id", "leak-a", "--base-model", "tiny",
              "--data-check", runs["triage-clean"], "--by", "leak-test"),
             ("release", "create", "--decision", decisions["tinylora"], "--id", "leak-b", "--base-model", "tinylora",
              "--data-check", runs["triage-faulty"], "--data-check", runs["tool-use-faulty"], "--by", "leak-test"),
             ("promote", "leak-a", "--by", "leak-test")]
    for argv in steps:
        code, out = gate_inprocess(*argv, "--db", db)
        assert code == 0, (argv, out[-2000:])
        logs[" ".join(argv[:2])] = out
    for name, contract in (("triage-faulty", "triage"), ("tool-use-faulty", "tool-use")):  # the review queues
        code, out = gate_inprocess("review", str(FIXTURES / name), "-c", str(ROOT / "contracts" / f"{contract}.yaml"),
                                   "-o", str(work / f"review-{name}"), "--db", db, "-q")
        assert code == 0, out[-2000:]
        logs[f"review {name}"] = out
    for rid in ("leak-a", "leak-b"):
        code, out = gate_inprocess("report-html", rid, "--db", db, "--out", str(work / f"report-{rid}"))
        assert code == 0, out
        logs[f"report-html {rid}"] = out
    planted = [p for name in FAULTY for p in planted_values(FIXTURES / name)]
    return {"work": work, "db": db, "logs": logs, "runs": runs, "planted": planted}


def test_no_planted_value_in_reports_logs_or_duckdb(record):
    work = record["work"]
    paths = [work / "demo", *work.glob("score-*"), *work.glob("report-*"), *work.glob("review-*")]
    assert (work / "report-leak-a" / "index.html").is_file() and (work / "demo" / "triage-faulty").is_dir()
    leaks = scan(record["planted"], paths=paths, duckdb_files=[record["db"]], texts=record["logs"])
    assert not leaks, "\n".join(map(str, leaks))


def test_planted_values_named_by_the_findings_are_not_in_the_reports(record):
    """A second way to the values, independent of leakscan.PATTERNS: the characters each PII/secret finding of
    the demo's own report.json points at in the raw row."""
    work = record["work"]
    for name in FAULTY:
        report = json.loads((work / "demo" / name / "report.json").read_text())
        rows = {s: (FIXTURES / name / f"{s}.jsonl").read_text().splitlines() for s in ("train", "val", "test")}
        values = set()
        for f in report["findings"]:
            m = re.search(r"at characters (\d+)-(\d+)", f["message"])
            if f["check"] in ("pii", "secret") and m:
                node: Any = json.loads(rows[f["split"]][f["row"] - 1])
                for part in re.findall(r"\w+|\[\d+\]", f["field"]):
                    node = node[int(part[1:-1])] if part.startswith("[") else node[part]
                values.add(node[int(m.group(1)):int(m.group(2))].strip())
        assert len(values) >= 12, name
        texts = {p.name: p.read_bytes().decode("utf-8", "replace") for p in (work / "demo" / name).iterdir()
                 if p.is_file()}
        texts.update(record["logs"])
        for value in values:
            probes = {value} | ({value.replace(" ", "")} if len(value) > 8 else set())
            for where, text in texts.items():
                assert not any(p in text for p in probes), f"{value[:3]}… of {name} leaked into {where}"


# ---- every GET route, enumerated from the app ------------------------------------------------------------------

def _routes(app: Any) -> list[Any]:
    from gate.demo.leakscan import all_routes

    return all_routes(app)


def _sources(db: str) -> dict[str, Any]:
    with duckdb.connect(db, read_only=True) as con:
        releases = [r for (r,) in con.execute("SELECT release_id FROM releases ORDER BY release_id").fetchall()]
        scorecards = [s for (s,) in con.execute("SELECT DISTINCT scorecard FROM releases").fetchall()]
        runs = [r for (r,) in con.execute("SELECT run_id FROM runs WHERE kind = 'check'").fetchall()]
        checks = {r: [c for (c,) in con.execute('SELECT DISTINCT "check" FROM findings WHERE run_id = ?',
                                                 [r]).fetchall()] for r in runs}
        counts = dict(con.execute("SELECT run_id, count(*) FROM findings GROUP BY run_id").fetchall())
        reviews = [r for (r,) in con.execute("SELECT DISTINCT review_id FROM review_queue ORDER BY 1").fetchall()]
    assert len(releases) >= 2 and runs and any(checks.values())
    from gate.dashboard.pages import PAGE_SIZE
    from gate.service.jobs import REPORT_FILES

    return {  # parameter name -> its values; a callable gets the path parameters chosen so far
        "release_id": releases, "run_id": runs, "job_id": ["job-none"], "name": sorted(REPORT_FILES),
        "review_id": reviews,
        "scorecard": [None, *scorecards], "verdict": [None, "PROMOTE", "BLOCK"],
        "a": releases, "b": releases, "check": lambda chosen: [None, *checks.get(chosen.get("run_id"), [])],
        "limit": [None], "status": [None], "next": [None],
        # the check-run page's filters only narrow it: every finding is on an unfiltered page at some offset
        "rule": [None], "split": [None], "severity": [None],
        "offset": lambda chosen: [None, *range(PAGE_SIZE, counts.get(chosen.get("run_id"), 0), PAGE_SIZE)],
    }


def _urls(route: Any, sources: dict[str, Any]) -> list[str]:
    path_names = re.findall(r"\{([^}:]+)", route.path)
    dependant = route.dependant
    query = [(q.alias, q.field_info.is_required()) for q in dependant.query_params]
    unknown = [n for n in path_names + [q for q, _ in query] if n not in sources]
    assert not unknown, f"{route.path}: no values for {unknown} in this leak scan; add them to _sources()"
    urls = []
    for combo in itertools.product(*(sources[n] for n in path_names)):
        chosen = dict(zip(path_names, combo, strict=True))
        path = route.path
        for n, v in chosen.items():
            path = path.replace("{" + n + "}", v)
        qvalues = [sources[q](chosen) if callable(sources[q]) else sources[q] for q, _ in query]
        for qcombo in itertools.product(*qvalues):
            params = {q: v for (q, _), v in zip(query, qcombo, strict=True) if v is not None}
            if any(req and q not in params for q, req in query):
                continue
            urls.append(path + ("?" + "&".join(f"{k}={v}" for k, v in params.items()) if params else ""))
    return urls


def _fetch_all(client: Any, headers_for: list[dict[str, str]], sources: dict[str, Any],
               public: set[str]) -> tuple[dict[str, str], dict[str, set[int]]]:
    """Every GET route's every URL, with the first credential its role may use; bodies and statuses by route."""
    bodies: dict[str, str] = {}
    statuses: dict[str, set[int]] = {}
    for route in _routes(client.app):
        if "GET" not in (getattr(route, "methods", None) or set()) or route.path in public:
            continue
        assert hasattr(route, "dependant"), f"{route.path}: a GET route of a kind this scan cannot fill"
        for url in _urls(route, sources):
            for headers in headers_for:  # the session opens the pages only; the API takes a role's bearer token
                res = client.get(url, headers=headers)
                if res.status_code not in (401, 403):
                    break
            statuses.setdefault(route.path, set()).add(res.status_code)
            bodies[f"GET {url}"] = res.text
            if res.headers.get("content-type", "").startswith("application/json"):  # \u escapes hide values
                bodies[f"GET {url} (json strings)"] = "\n".join(strings_of(res.json()))
    return bodies, statuses


def _assert_covered(statuses: dict[str, set[int]], public: set[str], app: Any) -> None:
    gets = {r.path for r in _routes(app) if "GET" in (getattr(r, "methods", None) or set())} - public
    assert gets == set(statuses), f"GET routes not scanned: {gets - set(statuses)}"
    for path, got in statuses.items():
        if path.removeprefix("/dashboard") in NO_DATA or path in NO_DATA:
            assert got == {404}, (path, got)
        else:
            assert 200 in got, f"{path} never answered 200 in the scan (got {got}): its page was not looked at"


def test_every_page_and_read_of_the_service_holds_no_planted_value(record, tmp_path):
    from fastapi.testclient import TestClient

    from gate.service.app import create_app
    from gate.service.auth import Role, create_token
    from gate.service.config import ServiceConfig

    db = record["db"]
    tokens = {r: create_token(db, f"leak-{r.value}", r.value) for r in Role}
    sources = _sources(db)
    cfg = ServiceConfig(roots=[record["work"]], db=db, state_dir=tmp_path / "state", run_jobs=False)
    public = {"/health", "/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc", "/dashboard/login"}
    with TestClient(create_app(cfg)) as client:
        login = client.post("/dashboard/login", data={"token": tokens[Role.viewer]}, follow_redirects=False)
        assert login.status_code == 303
        session = {"Cookie": login.headers["set-cookie"].split(";", 1)[0]}
        client.cookies.clear()
        bearers = [{"Authorization": f"Bearer {tokens[r]}"} for r in Role]
        bodies, statuses = _fetch_all(client, [session, *bearers], sources, public)
        bodies["GET /dashboard/login"] = client.get("/dashboard/login").text
    _assert_covered(statuses, public, client.app)
    assert sum(1 for k in bodies if k.startswith("GET /dashboard/checks/")) >= len(record["runs"])
    assert sum(1 for k in bodies if k.startswith("GET /dashboard/")) >= 30
    # the scan is not vacuous: the pages name the faulty runs and show their masked findings
    faulty_page = bodies[f"GET /dashboard/checks/{record['runs']['triage-faulty']}"]
    assert "pii" in faulty_page and "***" in faulty_page
    leaks = scan(record["planted"], texts=bodies)
    assert not leaks, "\n".join(map(str, leaks))
    for token in tokens.values():
        assert not any(token in b or token.split("_", 2)[2] in b for b in bodies.values())


def test_every_page_of_the_standalone_dashboard_holds_no_planted_value(record):
    from fastapi.testclient import TestClient

    from gate.dashboard.app import create_dashboard_app

    sources = _sources(record["db"])
    client = TestClient(create_dashboard_app(record["db"], auth=False), base_url="http://127.0.0.1:8050")
    bodies, statuses = _fetch_all(client, [{}], sources, {"/login"})
    _assert_covered(statuses, {"/login"}, client.app)
    leaks = scan(record["planted"], texts=bodies)
    assert not leaks, "\n".join(map(str, leaks))


def test_the_scan_would_see_a_leak(record):
    """Positive control: one planted value slipped into a page body is found, and named without the value."""
    item = record["planted"][0]
    leaks = scan(record["planted"], texts={"GET /dashboard/": f"<td>{item.value}</td>"})
    assert [(leak.kind, leak.planted_at) for leak in leaks] == [(item.kind, item.where)]
    assert item.value not in str(leaks[0])
    kinds = {p.kind for p in record["planted"]}
    assert {"EMAIL_ADDRESS", "CREDIT_CARD", "github_token", "private_key"} <= kinds
