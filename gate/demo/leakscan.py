"""Finding planted personal data and secrets where they must never be: reports, logs, DuckDB, dashboard pages.

Why this lives in the package and not only in the tests: `gate demo` ends with it, so the user who runs the demo
sees the claim "no planted value leaks" checked on their own machine, on their own record, not just in our CI.

`planted_values(dataset)` reads the dataset's FAULTS.json (which says where each planted value is and of what
kind, not the value itself), takes the value out of that row by the shape the fixture generator plants it in,
and refuses to return fewer values than there are planted faults: a scan that looks for nothing passes for the
wrong reason. `scan(...)` searches files, directory trees, DuckDB files and strings for each value and its
obvious variants (without spaces; each line of a private key) and returns every hit. `scan_demo(...)` is the
demo's last step: every file under its output folder, every column of its DuckDB, every dashboard page rendered
in-process by the real dashboard app behind a token made (and revoked) for the scan.

A leak is reported by where it was found and which planted value it is (dataset, split:row, kind), never by the
value itself: the report of a leak must not leak.
"""

from __future__ import annotations

import itertools
import json
import re
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gate.demo.paths import ROOT  # the checkout, or the files the wheel ships (gate.demo.paths)

FIXTURE_DATASETS = ROOT / "fixtures" / "datasets"
#: the fixture datasets full of planted personal data and secrets (fixtures/generate.py)
FAULTY_FIXTURES = ("triage-faulty", "tool-use-faulty")
#: above this many releases, the diff pages scanned are each release against its neighbour, not every pair
#: (n² pages of a long-lived record would make the scan minutes; the demo's record has two)
DIFF_ALL_PAIRS_MAX = 8

# how each kind of planted value appears in a row (fixtures/generate.py: pii_values, secret_values)
PATTERNS: dict[str, list[str]] = {
    "PERSON": [r"[Mm]y name is ([A-Z][a-z]+ [A-Z][a-z]+)", r"([A-Z][a-z]+ [A-Z][a-z]+) from our office"],
    "EMAIL_ADDRESS": [r"([\w.+-]+@example\.net)"],
    "PHONE_NUMBER": [r"(\+1 \d{3} 555 01\d\d)", r"(\+44 20 7946 0\d{3})"],
    "CREDIT_CARD": [r"(\d{4} \d{4} \d{4} \d{4})"],
    "IBAN_CODE": [r"\b((?:DE|GB)\d\d(?: ?[A-Z0-9]{2,4}){4,8})"],
    "LOCATION": [r"gone to (\d+ [A-Z][a-z]+ [A-Z][a-z]+, [A-Za-z ]+, [A-Z]{2} \d{5}|\d+ [A-Z][a-z]+ [A-Z][a-z]+, "
                 r"[A-Za-z]+ [A-Z]{2}\d [0-9][A-Z]{2})"],
    "jwt": [r"(eyJ[\w-]+\.eyJ[\w-]+\.[\w-]+)"],
    "github_pat": [r"(github_pat_\w+)"],
    "github_token": [r"(ghp_\w{36})"],
    "slack_token": [r"(xox[bp]-[\w-]+)"],
    "openai_api_key": [r"(sk-proj-[\w-]+)"],
    "aws_access_key": [r"(AKIA[A-Z0-9]{16})", r'aws_secret_access_key="([^"]+)"'],
    "private_key": [r"-----BEGIN RSA PRIVATE KEY-----\n((?:[A-Za-z0-9+/=]+\n)+)-----END"],
}


@dataclass(frozen=True)
class Planted:
    kind: str
    where: str  # split:row
    value: str
    dataset: str = ""

    @property
    def value_id(self) -> str:
        """Names the planted value without showing it: `triage-faulty:train:12:EMAIL_ADDRESS`."""
        return f"{self.dataset + ':' if self.dataset else ''}{self.where}:{self.kind}"

    def probes(self) -> set[str]:
        """The value as planted, and the forms a careless redaction or log line could still hold."""
        out = {self.value}
        if self.kind == "private_key":
            out = {line for line in self.value.split("\n") if len(line) >= 16}
        elif " " in self.value and len(self.value) > 8:
            out.add(self.value.replace(" ", ""))
        return out


@dataclass(frozen=True)
class Leak:
    where: str  # a file path, "duckdb:<file>:<table>.<column>", or the label of a text ("GET /releases/x")
    kind: str
    planted_at: str  # split:row of the planted value
    dataset: str = ""

    def __str__(self) -> str:  # never print the value itself: the report of a leak must not leak
        origin = f"{self.dataset}:{self.planted_at}" if self.dataset else self.planted_at
        return f"{self.kind} planted at {origin} found in {self.where}"


def _strings(node: object) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [s for v in node.values() for s in _strings(v)]
    if isinstance(node, list):
        return [s for v in node for s in _strings(v)]
    return []


def strings_of(node: object) -> list[str]:
    """Every string in a parsed JSON document (escapes undone), for scanning an API answer."""
    return _strings(node)


def planted_values(dataset: str | Path) -> list[Planted]:
    """Every planted PII value and secret of a faulty fixture dataset, taken from the rows FAULTS.json names."""
    from gate.errors import GateError

    dataset = Path(dataset)
    faults = [f for f in json.loads((dataset / "FAULTS.json").read_text()) if f["check"] in ("pii", "secret")]
    lines: dict[str, list[str]] = {}
    out: list[Planted] = []
    for f in faults:
        rows = lines.setdefault(f["split"], (dataset / f"{f['split']}.jsonl").read_text().splitlines())
        text = "\n".join(_strings(json.loads(rows[f["row"] - 1])))
        where = f"{f['split']}:{f['row']}"
        found = [m.group(1).strip() for rx in PATTERNS.get(f["note"], []) for m in [re.search(rx, text)] if m]
        if not found:  # a scan that silently looks for fewer values than were planted would pass for nothing
            raise GateError(f"leak scan: no {f['note']} value found in the planted row (update PATTERNS in "
                            "gate/demo/leakscan.py)", file=str(dataset / f"{f['split']}.jsonl"), line=f["row"])
        out += [Planted(f["note"], where, v, dataset.name) for v in found]
    return out


def duckdb_texts(path: str | Path) -> list[tuple[str, str]]:
    """(`duckdb:<file>:<table>.<column>`, every value of the column as text) for every column of every table."""
    from gate.store.inspect import column_texts

    path = Path(path)
    return [(f"duckdb:{path.name}:{table}.{col}", text) for table, col, text in column_texts(path)]


def _file_texts(f: Path) -> list[tuple[str, str]]:
    raw = f.read_bytes().decode("utf-8", "replace")
    out = [(str(f), raw)]
    if f.suffix == ".json":  # JSON escapes (\n, \u00e9) would hide a value from a plain search
        try:
            out.append((str(f), "\n".join(_strings(json.loads(raw)))))
        except ValueError:
            pass
    return out


def _files(paths: Iterable[str | Path], skip: set[Path] | None = None) -> list[Path]:
    skip = skip or set()
    out: list[Path] = []
    for p in map(Path, paths):
        found = sorted(q for q in p.rglob("*") if q.is_file()) if p.is_dir() else [p] if p.is_file() else []
        out += [q for q in found if q.resolve() not in skip]
    return out


def search(planted: Sequence[Planted], haystacks: Iterable[tuple[str, str]]) -> list[Leak]:
    """Every (place, planted value) pair where one of the value's probes occurs in the place's text."""
    probes = [(item, item.probes()) for item in planted]
    leaks = []
    for where, text in haystacks:
        for item, forms in probes:
            if any(probe in text for probe in forms):
                leaks.append(Leak(where, item.kind, item.where, item.dataset))
    return leaks


def scan(planted: Sequence[Planted], *, paths: Sequence[str | Path] = (), duckdb_files: Sequence[str | Path] = (),
         texts: dict[str, str] | None = None) -> list[Leak]:
    """Searches files (directories recursively), DuckDB files (every column of every table) and named texts."""
    haystacks: list[tuple[str, str]] = list((texts or {}).items())
    for f in _files(paths):
        haystacks += duckdb_texts(f) if f.suffix == ".duckdb" else _file_texts(f)
    for d in duckdb_files:
        haystacks += duckdb_texts(d)
    return search(planted, haystacks)


# ---- the dashboard, every page, in-process ---------------------------------------------------------------------

def all_routes(app: Any) -> list[Any]:
    """Every route of the app, included routers expanded (FastAPI nests them), so a new page is never missed."""
    out: list[Any] = []

    def walk(items: Any) -> None:
        for r in items:
            if hasattr(r, "effective_candidates"):
                walk(r.effective_candidates())
            else:
                out.append(r)

    walk(app.routes)
    return out


def _get_routes(app: Any) -> list[Any]:
    return [r for r in all_routes(app) if "GET" in (getattr(r, "methods", None) or set())]


def _page_sources(db: str) -> dict[str, Any]:
    """Each route parameter's values, from the record (a callable gets the path parameters chosen so far)."""
    from gate.dashboard.pages import PAGE_SIZE
    from gate.store.inspect import page_ids

    ids = page_ids(db)
    releases, scorecards, runs, checks = ids["releases"], ids["scorecards"], ids["runs"], ids["checks"]
    if len(releases) <= DIFF_ALL_PAIRS_MAX:
        pairs = list(itertools.product(releases, releases))
    else:
        pairs = list(itertools.pairwise(releases))
    return {"release_id": releases, "run_id": runs, "review_id": ids["reviews"], "scorecard": [None, *scorecards],
            "verdict": [None, "PROMOTE", "BLOCK"], "(a, b)": pairs,
            "check": lambda chosen: [None, *checks.get(chosen.get("run_id"), [])], "next": [None],
            # every finding is on some page: the unfiltered pages at each offset (a filter only narrows them)
            "rule": [None], "split": [None], "severity": [None],
            "offset": lambda chosen: [None, *range(PAGE_SIZE, ids["findings"].get(chosen.get("run_id"), 0),
                                                   PAGE_SIZE)]}


def _page_urls(route: Any, sources: dict[str, Any]) -> list[str]:
    from gate.errors import GateError

    path_names = re.findall(r"\{([^}:]+)", route.path)
    query = [(q.alias, q.field_info.is_required()) for q in route.dependant.query_params]
    qnames = [q for q, _ in query]
    paired = {"a", "b"} <= set(qnames)  # the diff page: a pair of releases, not two free parameters
    unknown = [n for n in path_names + qnames if n not in sources and not (paired and n in ("a", "b"))]
    if unknown:
        raise GateError(f"leak scan: dashboard route {route.path} has parameters {unknown} the scan has no values "
                        "for (add them to _page_sources in gate/demo/leakscan.py)")
    urls = []
    for combo in itertools.product(*(sources[n] for n in path_names)):
        chosen = dict(zip(path_names, combo, strict=True))
        path = route.path
        for n, v in chosen.items():
            path = path.replace("{" + n + "}", v)
        free = [q for q in qnames if not (paired and q in ("a", "b"))]
        choices = [sources[q](chosen) if callable(sources[q]) else sources[q] for q in free]
        for qcombo in itertools.product(*choices):
            for pair in (sources["(a, b)"] if paired else [None]):
                params = {q: v for q, v in zip(free, qcombo, strict=True) if v is not None}
                if pair is not None:
                    params.update(a=pair[0], b=pair[1])
                if any(req and q not in params for q, req in query):
                    continue
                urls.append(path + ("?" + "&".join(f"{k}={v}" for k, v in params.items()) if params else ""))
    return urls


def dashboard_pages(db: str) -> dict[str, str]:
    """Every GET page of the real dashboard app for this record, rendered in-process: label -> body.

    The app runs with authentication on, behind a viewer token made for the scan with gate's own token code and
    revoked when the scan ends (its row stays, unusable): the pages scanned are the ones a logged-in viewer gets.
    A page that does not answer 200 is an error, not a page scanned.
    """
    from fastapi.testclient import TestClient

    from gate.dashboard.app import create_dashboard_app
    from gate.errors import GateError
    from gate.service.auth import create_token
    from gate.store.service import revoke_token

    sources = _page_sources(db)
    name = f"leak-scan-{secrets.token_hex(4)}"
    token = create_token(db, name, "viewer")
    bodies: dict[str, str] = {}
    try:
        app = create_dashboard_app(db, auth=True)
        headers = {"Authorization": f"Bearer {token}"}
        with TestClient(app, base_url="http://127.0.0.1:8050") as client:
            for route in _get_routes(app):
                if route.name in ("dashboard_login_form",):  # the login form shows no record
                    continue
                for url in _page_urls(route, sources):
                    res = client.get(url, headers=headers)
                    if res.status_code != 200:
                        raise GateError(f"leak scan: dashboard page GET {url} answered {res.status_code}, not 200")
                    bodies[f"dashboard GET {url}"] = res.text
    finally:
        revoke_token(db, name)
    shown = token_shown(token, bodies)
    if shown:
        raise GateError(f"leak scan: the scan's own token is shown on {shown}")
    return bodies


def token_shown(token: str, bodies: dict[str, str]) -> str | None:
    """The label of the first body that shows the whole token or its whole secret, else None.

    The whole secret, parsed the way the service parses a token, and never a fragment of it: a `token_urlsafe`
    secret often contains `_`, so the last `_`-separated piece can be one or two characters and match any page."""
    from gate.service.auth import parse_token

    parts = parse_token(token)
    probes = [token, parts[1]] if parts else [token]
    return next((label for label, body in bodies.items() if any(p in body for p in probes)), None)


# ---- the demo's last step ----------------------------------------------------------------------------------------

@dataclass
class ScanResult:
    planted: int
    files: int
    tables: int
    pages: int
    leaks: list[Leak] = field(default_factory=list)

    def summary(self) -> str:
        found = len({(leak.dataset, leak.planted_at, leak.kind) for leak in self.leaks})
        return (f"leak scan: {found} of {self.planted} planted values found in {self.files} files, "
                f"{self.tables} tables, {self.pages} dashboard pages")


def scan_demo(out_dir: str | Path, db: str | Path, *, datasets: Sequence[str | Path] | None = None,
              texts: dict[str, str] | None = None) -> ScanResult:
    """The planted values of the faulty fixtures, looked for in every file under `out_dir`, every column of every
    table of `db` and every dashboard page of `db` (plus any named `texts`, e.g. captured log lines)."""
    planted = [p for d in (datasets or [FIXTURE_DATASETS / n for n in FAULTY_FIXTURES]) for p in planted_values(d)]
    db = str(Path(db).resolve())
    pages = dashboard_pages(db)  # first: it adds (and revokes) the scan's token row, which the table scan then sees
    wal = Path(db + ".wal")
    files = _files([out_dir], skip={Path(db), wal.resolve()})
    haystacks: list[tuple[str, str]] = list((texts or {}).items()) + list(pages.items())
    for f in files:
        haystacks += duckdb_texts(f) if f.suffix == ".duckdb" else _file_texts(f)
    haystacks += duckdb_texts(db)
    from gate.store.inspect import table_count

    return ScanResult(len(planted), len(files), table_count(db), len(pages), search(planted, haystacks))
