"""The service's own record: its job queue and its API tokens, in the same DuckDB file as the runs they produce.

Why in DuckDB and not in memory: a job must survive a restart of the service (it is either finished, requeued or
failed with a reason, never lost), and a token must outlive the process that checks it. Same discipline as
`gate.store.db`: short connections, every result drained. While the service runs it is the one process that opens
the file (`gate.store.db.single_writer`): every connection here is a cursor on its one database. Another process
that needs the file meanwhile is told at once, in one line, that the service holds it (`DatabaseLocked`); a
shorter holder (a CLI writer) is waited for up to LOCK_WAIT_S.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from os.path import realpath
from typing import Any

from gate.errors import GateError
from gate.store.db import SEVERITY_RANK_SQL, connect, db_path, is_held

DDL = [
    """CREATE TABLE IF NOT EXISTS jobs (
        job_id VARCHAR PRIMARY KEY, kind VARCHAR, status VARCHAR, params JSON, submitted_by VARCHAR,
        created_at TIMESTAMPTZ, started_at TIMESTAMPTZ, finished_at TIMESTAMPTZ, attempts INTEGER,
        exit_code INTEGER, result JSON, error VARCHAR, report_dir VARCHAR)""",
    """CREATE TABLE IF NOT EXISTS tokens (
        name VARCHAR PRIMARY KEY, token_id VARCHAR UNIQUE, role VARCHAR, salt VARCHAR, digest VARCHAR,
        created_at TIMESTAMPTZ, revoked_at TIMESTAMPTZ)""",
]

JOB_COLUMNS = ["job_id", "kind", "status", "params", "submitted_by", "created_at", "started_at", "finished_at",
               "attempts", "exit_code", "result", "error", "report_dir"]
LOCK_WAIT_S = 10.0


def now() -> datetime:
    return datetime.now(UTC)


@contextmanager
def service_db(path: str | None, *, read_only: bool = False, ddl: bool = True) -> Iterator[Any]:
    """A short connection; waits up to LOCK_WAIT_S for another process to let go of the file.

    `ddl=False` skips creating the tables (and the schema stamp `gate.store.db.connect` writes): the service's
    reads, which run on every request and find the tables already made at start-up. Read-only on a file that does
    not exist yet yields None: nothing has been recorded. A running `gate serve` holding the file is said at once
    (DatabaseLocked), not waited for."""
    from pathlib import Path

    target = db_path(path)
    if (read_only or not ddl) and not Path(target).exists():
        yield None
        return
    with connect(target, read_only=read_only, wait_s=LOCK_WAIT_S, extra_ddl=DDL, ddl=ddl) as con:
        yield con


def _job_dict(row: tuple[Any, ...]) -> dict[str, Any]:
    job = dict(zip(JOB_COLUMNS, row, strict=True))
    for key in ("params", "result"):
        job[key] = json.loads(job[key]) if job[key] else None
    for key in ("created_at", "started_at", "finished_at"):
        job[key] = job[key].isoformat() if job[key] else None
    return job


def insert_job(path: str | None, job_id: str, kind: str, params: dict[str, Any], submitted_by: str,
               report_dir: str, created_at: datetime | None = None) -> None:
    """Idempotent: a job already in the table (ingested before a crash) is left as it is."""
    with service_db(path) as con:
        con.execute("INSERT OR IGNORE INTO jobs (job_id, kind, status, params, submitted_by, created_at, attempts, "
                    "report_dir) VALUES (?, ?, 'queued', ?, ?, ?, 0, ?)",
                    [job_id, kind, json.dumps(params), submitted_by, created_at or now(), report_dir]).fetchall()


_EXISTING: set[tuple[str, str]] = set()  # (real path, table) seen to exist in a file this process holds


def has_table(con: Any, name: str, path: str | None = None) -> bool:
    """Whether the record has the table yet. In a process holding the file (`path` given), a table once seen is
    remembered: gate never drops one and no other process writes the file, and the lookup would otherwise be most
    of a request's cost."""
    if con is None:
        return False
    key = (realpath(db_path(path)), name) if path is not None and is_held(path) else None
    if key is not None and key in _EXISTING:
        return True
    found = bool(con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = ?", [name]).fetchall()[0][0])
    if found and key is not None:
        _EXISTING.add(key)
    return found


def get_job(path: str | None, job_id: str) -> dict[str, Any] | None:
    with service_db(path, ddl=False) as con:
        if not has_table(con, "jobs", path):
            return None
        rows = con.execute(f"SELECT {', '.join(JOB_COLUMNS)} FROM jobs WHERE job_id = ?", [job_id]).fetchall()
    return _job_dict(rows[0]) if rows else None


def list_jobs(path: str | None, *, status: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
    where, args = ("WHERE status = ?", [status]) if status else ("", [])
    with service_db(path, ddl=False) as con:
        if not has_table(con, "jobs", path):
            return []
        rows = con.execute(f"SELECT {', '.join(JOB_COLUMNS)} FROM jobs {where} ORDER BY created_at DESC LIMIT ?",
                           [*args, limit]).fetchall()
    return [_job_dict(r) for r in rows]


def claim_next_job(path: str | None) -> dict[str, Any] | None:
    """Moves the oldest queued job to `running` (attempts + 1) and returns it; None when the queue is empty."""
    with service_db(path) as con:
        con.execute("BEGIN TRANSACTION").fetchall()
        rows = con.execute("SELECT job_id FROM jobs WHERE status = 'queued' ORDER BY created_at LIMIT 1").fetchall()
        if not rows:
            con.execute("COMMIT").fetchall()
            return None
        con.execute("UPDATE jobs SET status = 'running', started_at = ?, attempts = attempts + 1 WHERE job_id = ?",
                    [now(), rows[0][0]]).fetchall()
        con.execute("COMMIT").fetchall()
        got = con.execute(f"SELECT {', '.join(JOB_COLUMNS)} FROM jobs WHERE job_id = ?", [rows[0][0]]).fetchall()
    return _job_dict(got[0])


def finish_job(path: str | None, job_id: str, *, status: str, exit_code: int | None, result: dict[str, Any] | None,
               error: str | None) -> None:
    with service_db(path) as con:
        con.execute("UPDATE jobs SET status = ?, finished_at = ?, exit_code = ?, result = ?, error = ? "
                    "WHERE job_id = ?",
                    [status, now(), exit_code, json.dumps(result) if result is not None else None, error,
                     job_id]).fetchall()


def recover_interrupted(path: str | None, max_attempts: int) -> list[tuple[str, str]]:
    """Jobs left `running` by a killed service: requeued while attempts remain, else failed with the reason.

    Returns (job_id, new status) for each, so the service can log what it did."""
    changed: list[tuple[str, str]] = []
    with service_db(path) as con:
        con.execute("BEGIN TRANSACTION").fetchall()
        rows = con.execute("SELECT job_id, attempts FROM jobs WHERE status = 'running'").fetchall()
        for job_id, attempts in rows:
            if attempts < max_attempts:
                con.execute("UPDATE jobs SET status = 'queued', error = ? WHERE job_id = ?",
                            [f"interrupted by a service restart during attempt {attempts}; requeued",
                             job_id]).fetchall()
                changed.append((job_id, "queued"))
            else:
                con.execute("UPDATE jobs SET status = 'failed', finished_at = ?, error = ? WHERE job_id = ?",
                            [now(), f"interrupted by a service restart during attempt {attempts} of {max_attempts}; "
                                    "not retried", job_id]).fetchall()
                changed.append((job_id, "failed"))
        con.execute("COMMIT").fetchall()
    return changed


def insert_token(path: str | None, *, name: str, token_id: str, role: str, salt: str, digest: str) -> None:
    with service_db(path) as con:
        if con.execute("SELECT 1 FROM tokens WHERE name = ?", [name]).fetchall():
            raise GateError(f"a token named {name!r} already exists (revoke it first or pick another name)")
        con.execute("INSERT INTO tokens VALUES (?, ?, ?, ?, ?, ?, NULL)",
                    [name, token_id, role, salt, digest, now()]).fetchall()


def token_by_id(con: Any, token_id: str) -> dict[str, Any] | None:
    """A token's stored row on an open connection whose record has the tokens table (the service's check and the
    dashboard's, which reads through its own read-only connection)."""
    rows = con.execute("SELECT name, role, salt, digest, revoked_at FROM tokens WHERE token_id = ?",
                       [token_id]).fetchall()
    if not rows:
        return None
    name, role, salt, digest, revoked_at = rows[0]
    return {"name": name, "role": role, "salt": salt, "digest": digest, "revoked": revoked_at is not None}


def find_token(path: str | None, token_id: str) -> dict[str, Any] | None:
    with service_db(path, ddl=False) as con:
        if not has_table(con, "tokens", path):
            return None
        return token_by_id(con, token_id)


def revoke_token(path: str | None, name: str) -> bool:
    with service_db(path) as con:
        rows = con.execute("SELECT revoked_at FROM tokens WHERE name = ?", [name]).fetchall()
        if not rows:
            return False
        if rows[0][0] is None:
            con.execute("UPDATE tokens SET revoked_at = ? WHERE name = ?", [now(), name]).fetchall()
    return True


def list_tokens(path: str | None, *, read_only: bool = False) -> list[dict[str, Any]]:
    with service_db(path, read_only=read_only) as con:
        if not has_table(con, "tokens", path):
            return []
        rows = con.execute("SELECT name, role, created_at, revoked_at FROM tokens ORDER BY created_at").fetchall()
    return [{"name": n, "role": r, "created_at": c.isoformat(), "revoked_at": v.isoformat() if v else None}
            for n, r, c, v in rows]


# ---- the record as the HTTP API lists it ------------------------------------------------------------------------
# Plain rows of the record's tables for the service's read routes: JSON columns decoded, timestamps as ISO strings,
# an empty list while a table does not exist yet (nothing of that kind recorded so far).

def _table_rows(path: str | None, table: str, sql: str, args: list[Any]) -> list[dict[str, Any]]:
    with service_db(path, ddl=False) as con:
        if not has_table(con, table, path):
            return []
        cur = con.execute(sql, args)
        cols = [d[0] for d in cur.description]
        types = [str(d[1]) for d in cur.description]
        out = []
        for row in cur.fetchall():
            d: dict[str, Any] = {}
            for c, t, v in zip(cols, types, row, strict=True):
                if t == "JSON" and isinstance(v, str):
                    v = json.loads(v)
                elif hasattr(v, "isoformat"):
                    v = v.isoformat()
                d[c] = v
            out.append(d)
        return out


def api_check_runs(path: str | None, limit: int) -> list[dict[str, Any]]:
    """The newest `gate check` runs."""
    return _table_rows(path, "runs", "SELECT run_id, started_at, seconds, dataset, dataset_fingerprint, "
                       "contract_name, contract_version, verdict, exit_code, rows FROM runs WHERE kind = 'check' "
                       "ORDER BY started_at DESC LIMIT ?", [limit])


def api_check_run(path: str | None, run_id: str) -> dict[str, Any] | None:
    """One run's id and verdict, or None when the record has no such run."""
    rows = _table_rows(path, "runs", "SELECT run_id, verdict FROM runs WHERE run_id = ?", [run_id])
    return rows[0] if rows else None


def api_findings(path: str | None, run_id: str, limit: int) -> list[dict[str, Any]]:
    """A run's findings as stored (snippets already redacted by the checks; the route masks them again)."""
    return _table_rows(path, "findings", 'SELECT "check", split, "row", field, rule, severity, message, snippet, '
                       f'row_id FROM findings WHERE run_id = ? ORDER BY {SEVERITY_RANK_SQL}, "check", split, "row" '
                       'LIMIT ?', [run_id, limit])


def api_score_runs(path: str | None, limit: int) -> list[dict[str, Any]]:
    """The newest `gate score` runs (not their samples)."""
    return _table_rows(path, "score_runs", "SELECT run_id, comparison_id, role, scorecard, scorecard_version, "
                       "model, adapter, engine, started_at, finished_at, status, items, errors, cached "
                       "FROM score_runs ORDER BY started_at DESC LIMIT ?", [limit])


def api_decisions(path: str | None, limit: int) -> list[dict[str, Any]]:
    """The newest decisions."""
    return _table_rows(path, "decisions", "SELECT * FROM decisions ORDER BY created_at DESC LIMIT ?", [limit])


def api_releases(path: str | None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(every release oldest first, every move of "current" in order)."""
    return (_table_rows(path, "releases", "SELECT * FROM releases ORDER BY created_at, release_id", []),
            _table_rows(path, "release_pointer", "SELECT * FROM release_pointer ORDER BY seq", []))
