"""Read-only views of the record behind the dashboard's pages (and the static reports made from them).

Why here and not in gate/dashboard: SQL lives in gate/store, and the dashboard is a face with no logic of its own,
so every number it shows is read from the tables the CLI writes (runs/findings, score runs, decisions/gates/releases),
never recomputed. Each function takes an open read-only DuckDB connection (`open_read_only`; None when there is no
record yet) and returns plain dicts; timestamps come back as ISO-8601 UTC strings (formatted by DuckDB, which is
cheaper than converting Python datetimes). A table that does not exist yet (nothing released so far) reads as empty,
not as an error.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from gate.errors import GateError
from gate.store.db import SEVERITY_RANK_SQL

ISO = "strftime(timezone('UTC', {col}), '%Y-%m-%dT%H:%M:%SZ')"
JSON_FIELDS = {"alignment", "noise_floor", "warnings", "engine_flags", "suite_hashes", "scores",
               "dataset_fingerprints", "data_checks", "counts", "options", "timings", "details"}
_TABLES: dict[int, set[str]] = {}  # id(connection) -> its tables, while the connection is open
LOCK_RETRIES = 40  # x 50 ms: a writer (gate check, gate decide, the service worker) holds the file briefly


def _iso(col: str) -> str:
    return ISO.format(col=col)


@contextmanager
def open_read_only(path: str, *, retries: int = LOCK_RETRIES) -> Iterator[Any | None]:
    """A read-only connection, or None when there is no record yet; retries (x 50 ms) while a writer holds the
    file lock, then one line naming the file."""
    import duckdb

    from gate.store.db import open_duckdb  # inside `gate serve`: a cursor on the service's one database

    if not Path(path).exists():
        yield None
        return
    con = None
    for attempt in range(retries):
        try:
            con = open_duckdb(path, read_only=True)
            break
        except duckdb.IOException as exc:
            if "lock" not in str(exc).lower() or attempt == retries - 1:
                raise GateError(f"cannot open the gate database ({str(exc).splitlines()[0]})", file=path) from None
            time.sleep(0.05)
        except duckdb.Error as exc:
            raise GateError(f"cannot open the gate database ({str(exc).splitlines()[0]})", file=path) from None
    try:
        yield con
    finally:
        assert con is not None
        _TABLES.pop(id(con), None)
        con.close()


def tables(con: Any | None) -> set[str]:
    """The tables in the record, looked up once per connection (a page asks several times)."""
    if con is None:
        return set()
    if id(con) not in _TABLES:
        _TABLES[id(con)] = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    return _TABLES[id(con)]


def _rows(cur: Any) -> list[dict[str, Any]]:
    cols = [d[0] for d in cur.description]
    out = []
    for row in cur.fetchall():
        d = dict(zip(cols, row, strict=True))
        for k in JSON_FIELDS & d.keys():
            if isinstance(d[k], str):
                try:
                    d[k] = json.loads(d[k])
                except ValueError:
                    pass
        out.append(d)
    return out


def _select_list(con: Any, table: str) -> str:
    """Every column of `table`, timestamps as ISO strings (the writers own the column names; this reads any)."""
    cols = con.execute("SELECT column_name, data_type FROM information_schema.columns WHERE table_name = ? "
                       "ORDER BY ordinal_position", [table]).fetchall()
    return ", ".join(f'{_iso(chr(34) + n + chr(34))} AS "{n}"' if t.upper().startswith("TIMESTAMP") else f'"{n}"'
                     for n, t in cols)


def _pointer_row(r: dict[str, Any]) -> dict[str, Any]:
    """One move of "current" with `at` and `by` whatever the writer called them."""
    at = next((r[k] for k in ("at", "moved_at", "created_at") if k in r), None)
    by = next((r[k] for k in ("by", "moved_by", "actor", "who") if k in r), None)
    return {**r, "at": at, "by": by}


def current_release(con: Any | None) -> str | None:
    if "release_pointer" not in tables(con):
        return None
    rows = con.execute("SELECT release_id FROM release_pointer ORDER BY seq DESC LIMIT 1").fetchall()
    return rows[0][0] if rows else None


def release_series(con: Any | None, *, per_scorecard: int = 200, scorecard: str | None = None,
                   upto: str | None = None) -> dict[str, list[Any]]:
    """The gated metrics of the newest `per_scorecard` releases of every scorecard, as columns sorted by scorecard,
    gate and time (one row per release x gate).

    `observed` is the decision's value with its interval: the paired difference candidate - baseline for
    superiority and non-inferiority gates, the candidate's value for absolute gates. Columns rather than row dicts,
    and rounding and interval arms computed by DuckDB, because the home page draws 10 scorecards x 200 releases x
    their gates and Python per-row work was most of its cost. `upto` (ISO time) leaves out later releases.
    """
    cols = ["scorecard", "gate", "rule", "scorer", "metric", "release_id", "created_at", "verdict", "gate_verdict",
            "observed", "err_plus", "err_minus", "baseline", "candidate", "p_holm"]
    if not {"releases", "gate_results"} <= tables(con):
        return {c: [] for c in cols}
    where, params = [], []
    if scorecard is not None:
        where.append("scorecard = ?")
        params.append(scorecard)
    if upto is not None:
        where.append(f"{_iso('created_at')} <= ?")
        params.append(upto)
    cur = con.execute(f"""
        WITH r AS (
            SELECT release_id, created_at, scorecard, verdict, decision_id,
                   row_number() OVER (PARTITION BY scorecard ORDER BY created_at DESC, release_id DESC) AS rn
            FROM releases {'WHERE ' + ' AND '.join(where) if where else ''})
        SELECT r.scorecard, g.gate, g.rule, g.scorer, g.metric, r.release_id, {_iso('r.created_at')} AS created_at,
               r.verdict, g.verdict AS gate_verdict, round(g.observed, 5) AS observed,
               round(greatest(g.ci_high - g.observed, 0), 5) AS err_plus,
               round(greatest(g.observed - g.ci_low, 0), 5) AS err_minus,
               round(g.baseline, 5) AS baseline, round(g.candidate, 5) AS candidate, g.p_holm
        FROM r JOIN gate_results g USING (decision_id)
        WHERE r.rn <= ?
        ORDER BY r.scorecard, g.gate, r.created_at, r.release_id""", [*params, per_scorecard])
    rows = cur.fetchall()
    return {c: [row[i] for row in rows] for i, c in enumerate(cols)}


def release_list(con: Any | None, *, scorecard: str | None = None, verdict: str | None = None,
                 limit: int = 200) -> list[dict[str, Any]]:
    """Newest releases first, with their gate tallies; optional server-side filters."""
    if "releases" not in tables(con):
        return []
    has_gates = "gate_results" in tables(con)
    tally = ("LEFT JOIN (SELECT decision_id, count(*) FILTER (WHERE verdict = 'pass') AS gates_passed, "
             "count(*) FILTER (WHERE verdict = 'fail') AS gates_failed FROM gate_results GROUP BY decision_id) g "
             "USING (decision_id)") if has_gates else ""
    cols = "coalesce(g.gates_passed, 0) AS gates_passed, coalesce(g.gates_failed, 0) AS gates_failed" \
        if has_gates else "0 AS gates_passed, 0 AS gates_failed"
    where, params = [], []
    if scorecard:
        where.append("r.scorecard = ?")
        params.append(scorecard)
    if verdict:
        where.append("r.verdict = ?")
        params.append(verdict)
    sql = f"""
        SELECT r.release_id, {_iso('r.created_at')} AS created_at, r.created_by, r.scorecard, r.scorecard_version,
               r.base_model, r.adapter, r.verdict, r.decision_id, {cols}
        FROM releases r {tally}
        {'WHERE ' + ' AND '.join(where) if where else ''}
        ORDER BY r.created_at DESC, r.release_id DESC LIMIT ?"""
    return _rows(con.execute(sql, [*params, limit]))


def facets(con: Any | None) -> dict[str, list[str]]:
    """The values the filters offer: every scorecard and verdict in the record."""
    if "releases" not in tables(con):
        return {"scorecards": [], "verdicts": []}
    sc = [r[0] for r in con.execute("SELECT DISTINCT scorecard FROM releases ORDER BY 1").fetchall()]
    vd = [r[0] for r in con.execute("SELECT DISTINCT verdict FROM releases ORDER BY 1").fetchall()]
    return {"scorecards": [s for s in sc if s is not None], "verdicts": [v for v in vd if v is not None]}


def release(con: Any | None, release_id: str) -> dict[str, Any]:
    """One release with its decision, gates, comparisons (every category), data checks and pointer moves."""
    have = tables(con)
    if "releases" not in have:
        raise GateError(f"no release '{release_id}' in the record")
    rows = _rows(con.execute(f"SELECT * REPLACE ({_iso('created_at')} AS created_at) FROM releases "
                             "WHERE release_id = ?", [release_id]))
    if not rows:
        raise GateError(f"no release '{release_id}' in the record")
    rel = rows[0]
    did = rel.get("decision_id")
    rel["decision"] = None
    rel["gates"], rel["comparisons"] = [], []
    if "decisions" in have and did:
        d = _rows(con.execute(f"SELECT * REPLACE ({_iso('created_at')} AS created_at) FROM decisions "
                              "WHERE decision_id = ?", [did]))
        rel["decision"] = d[0] if d else None
    if "gate_results" in have and did:
        rel["gates"] = _rows(con.execute("SELECT * FROM gate_results WHERE decision_id = ? ORDER BY rowid", [did]))
    if "comparisons" in have and did:
        rel["comparisons"] = _rows(con.execute(
            "SELECT * FROM comparisons WHERE decision_id = ? ORDER BY suite, scorer, \"key\", category <> 'all', "
            "category", [did]))
    rel["data_check_runs"] = data_checks(con, rel.get("data_checks") or [])
    rel["pointer"] = []
    if "release_pointer" in have:
        rel["pointer"] = [_pointer_row(r) for r in _rows(con.execute(
            f"SELECT {_select_list(con, 'release_pointer')} FROM release_pointer "
            "WHERE release_id = ? OR previous_release_id = ? ORDER BY seq", [release_id, release_id]))]
    rel["is_current"] = current_release(con) == release_id
    return rel


def data_checks(con: Any | None, declared: list[Any]) -> list[dict[str, Any]]:
    """The `gate check` runs a release declares, each with the verdict the record holds (or 'not in record')."""
    ids = [d.get("run_id") if isinstance(d, dict) else str(d) for d in declared]
    ids = [i for i in ids if i]
    found: dict[str, dict[str, Any]] = {}
    if ids and "runs" in tables(con):
        marks = ", ".join("?" * len(ids))
        for r in _rows(con.execute(
                f"SELECT run_id, {_iso('started_at')} AS started_at, dataset, dataset_fingerprint, contract_name, "
                f"contract_version, verdict, rows FROM runs WHERE run_id IN ({marks})", ids)):
            found[r["run_id"]] = r
    out = []
    for d in declared:
        rid = d.get("run_id") if isinstance(d, dict) else str(d)
        rec = found.get(rid)
        out.append({"run_id": rid, "declared_verdict": d.get("verdict") if isinstance(d, dict) else None,
                    "dataset": (rec or {}).get("dataset") or (d.get("dataset") if isinstance(d, dict) else None),
                    "verdict": rec["verdict"] if rec else "not in record", "in_record": rec is not None,
                    "started_at": (rec or {}).get("started_at"), "rows": (rec or {}).get("rows"),
                    "contract": (rec or {}).get("contract_name")})
    return out


def check_runs(con: Any | None, *, limit: int = 200) -> list[dict[str, Any]]:
    """Newest dataset checks first, with their finding counts."""
    have = tables(con)
    if "runs" not in have:
        return []
    counts = ("LEFT JOIN (SELECT run_id, count(*) AS findings FROM findings GROUP BY run_id) f USING (run_id)"
              if "findings" in have else "")
    col = "coalesce(f.findings, 0) AS findings" if counts else "0 AS findings"
    return _rows(con.execute(
        f"SELECT r.run_id, {_iso('r.started_at')} AS started_at, r.dataset, r.contract_name, r.contract_version, "
        f"r.verdict, r.exit_code, r.rows, r.seconds, {col} FROM runs r {counts} WHERE r.kind = 'check' "
        "ORDER BY r.started_at DESC LIMIT ?", [limit]))


FINDING_FILTERS = ("check", "rule", "split", "severity")


def check_run(con: Any | None, run_id: str, *, check: str | None = None, rule: str | None = None,
              split: str | None = None, severity: str | None = None, limit: int = 200, offset: int = 0,
              per_check: int | None = None) -> dict[str, Any]:
    """One dataset check: its results per check, how many findings each check has, and one page of its findings
    (stored snippets are already redacted).

    Why counts per check and paging rather than one capped list: findings sorted by check name and cut at a fixed
    number hid whole checks (44,409 findings, the contract's never shown). `limit`/`offset` page through the
    filtered findings (the live dashboard); `per_check` instead takes each check's first N (the static report,
    which must stay bounded but show every check)."""
    have = tables(con)
    rows = _rows(con.execute(
        f"SELECT * REPLACE ({_iso('started_at')} AS started_at) FROM runs WHERE run_id = ?", [run_id])) \
        if "runs" in have else []
    if not rows:
        raise GateError(f"no check run '{run_id}' in the record")
    run = rows[0]
    run["results"] = _rows(con.execute(
        "SELECT name, version, status, counts, seconds, summary FROM check_results WHERE run_id = ? ORDER BY rowid",
        [run_id])) if "check_results" in have else []
    run["findings"], run["findings_total"], run["finding_counts"] = [], 0, {}
    run["facets"] = {k: [] for k in FINDING_FILTERS}
    if "findings" not in have:
        return run
    run["finding_counts"] = dict(con.execute(
        'SELECT "check", count(*) FROM findings WHERE run_id = ? GROUP BY "check" ORDER BY "check"',
        [run_id]).fetchall())
    for col in FINDING_FILTERS:
        run["facets"][col] = [r[0] for r in con.execute(
            f'SELECT DISTINCT "{col}" FROM findings WHERE run_id = ? AND "{col}" IS NOT NULL ORDER BY 1',
            [run_id]).fetchall()]
    where, params = "run_id = ?", [run_id]
    for col, value in zip(FINDING_FILTERS, (check, rule, split, severity), strict=True):
        if value:
            where += f' AND "{col}" = ?'
            params.append(value)
    run["findings_total"] = con.execute(f"SELECT count(*) FROM findings WHERE {where}", params).fetchall()[0][0]
    cols = '"check", split, "row", field, rule, severity, message, snippet, row_id'
    if per_check is not None:
        run["findings"] = _rows(con.execute(
            f'SELECT {cols} FROM (SELECT {cols}, {SEVERITY_RANK_SQL} AS sev, row_number() OVER (PARTITION BY "check" '
            f'ORDER BY {SEVERITY_RANK_SQL}, split, "row", rule) AS rn FROM findings WHERE {where}) WHERE rn <= ? '
            f'ORDER BY "check", sev, split, "row", rule', [*params, per_check]))
    else:
        run["findings"] = _rows(con.execute(
            f'SELECT {cols} FROM findings WHERE {where} ORDER BY "check", {SEVERITY_RANK_SQL}, split, "row", rule '
            'LIMIT ? OFFSET ?',
            [*params, limit, offset]))
    return run


def token_row(con: Any | None, token_id: str) -> dict[str, Any] | None:
    """A token's stored row (name, role, salt, digest, revoked) for the dashboard's login check; None if unknown.

    Read through the dashboard's read-only connection, never the write lock: a page must not wait on a writer."""
    from gate.store.service import token_by_id

    return token_by_id(con, token_id) if "tokens" in tables(con) else None
