"""DuckDB as the record of every gate run.

One short-lived connection per write: DuckDB allows one writer process per file, so the CLI opens,
writes in a single transaction and closes. Bulk rows go in through Arrow (register + INSERT ... SELECT),
which is two to three orders of magnitude faster than executemany. Every result is drained, so the
same code runs on DuckDB 1.5 and 2.x. A process that owns the file for its whole life (`gate serve`) takes it
with `single_writer()`, and every connection in it is then a cursor on that one database (see there).
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from gate.errors import GateError
from gate.severity import SEVERITIES

DEFAULT_DB = "gate.duckdb"
SCHEMA_VERSION = 2

DDL = [
    """CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR)""",
    """CREATE TABLE IF NOT EXISTS runs (
        run_id VARCHAR PRIMARY KEY, kind VARCHAR, started_at TIMESTAMPTZ, seconds DOUBLE,
        gate_version VARCHAR, dataset VARCHAR, dataset_fingerprint VARCHAR, contract_name VARCHAR,
        contract_version VARCHAR, contract_hash VARCHAR, verdict VARCHAR, exit_code INTEGER, rows BIGINT,
        options JSON, timings JSON)""",
    """CREATE TABLE IF NOT EXISTS dataset_versions (
        fingerprint VARCHAR, split VARCHAR, file VARCHAR, format VARCHAR, rows BIGINT, bytes BIGINT,
        sha256 VARCHAR, first_seen TIMESTAMPTZ, PRIMARY KEY (fingerprint, split))""",
    """CREATE TABLE IF NOT EXISTS check_results (
        run_id VARCHAR, name VARCHAR, version VARCHAR, status VARCHAR, counts JSON, seconds DOUBLE,
        summary VARCHAR, details JSON, PRIMARY KEY (run_id, name))""",
    """CREATE TABLE IF NOT EXISTS findings (
        run_id VARCHAR, "check" VARCHAR, split VARCHAR, "row" BIGINT, field VARCHAR, rule VARCHAR,
        severity VARCHAR, message VARCHAR, snippet VARCHAR, row_id VARCHAR, partner_row BIGINT, partner_id VARCHAR,
        score DOUBLE, cluster_id VARCHAR, cluster_size BIGINT)""",
]
# Each step takes a database of the previous schema version to the next; all are idempotent, so they simply run on
# every read-write connection (a new database already has the columns and they are no-ops).
MIGRATIONS = [
    # 2: a pairwise finding's evidence (near_duplicate: the verified partner, its Jaccard, the cluster)
    *(f"ALTER TABLE findings ADD COLUMN IF NOT EXISTS {col}" for col in (
        "partner_row BIGINT", "partner_id VARCHAR", "score DOUBLE", "cluster_id VARCHAR", "cluster_size BIGINT")),
]
#: findings read top down or cut at a limit show what fails the gate first (gate.severity.severity_rank, in SQL)
SEVERITY_RANK_SQL = ("CASE severity " + " ".join(f"WHEN '{s}' THEN {k}" for k, s in enumerate(SEVERITIES))
                     + f" ELSE {len(SEVERITIES)} END")

FINDING_COLUMNS = ["check", "split", "row", "field", "rule", "severity", "message", "snippet", "row_id",
                   "partner_row", "partner_id", "score", "cluster_id", "cluster_size"]


def db_path(option: str | None = None) -> str:
    """The option wins, then GATE_DB, then ./gate.duckdb."""
    return option or os.environ.get("GATE_DB") or DEFAULT_DB


class DatabaseLocked(GateError):
    """Another process holds the record's file lock.

    `service_pid` is set when that process is a running `gate serve`: it holds the file for its whole life, so
    waiting is pointless and the caller can point the user at the service instead (`holder_argv`: its command
    line, where it listens)."""

    def __init__(self, target: str, holder_pid: int | None, holder_argv: list[str] | None) -> None:
        service = _is_service(holder_argv)
        who = f"a running `gate serve` (PID {holder_pid})" if service else \
            f"another process{f' (PID {holder_pid})' if holder_pid else ''}"
        hint = "send this through the service (GATE_URL) or stop it; its jobs survive the restart" if service \
            else "try again when it has finished"
        super().__init__(f"{who} holds the gate database ({hint})", file=target)
        self.holder_pid = holder_pid
        self.holder_argv = holder_argv
        self.service_pid = holder_pid if service else None


_HOLDER_PID = re.compile(r"\(PID (\d+)\)")


def _is_service(argv: list[str] | None) -> bool:
    return argv is not None and "serve" in argv and any(Path(a).name == "gate" for a in argv)


def _lock_holder(message: str) -> tuple[int | None, list[str] | None]:
    """PID and command line of the process DuckDB names in a lock error (Linux /proc; else unknown)."""
    m = _HOLDER_PID.search(message)
    if not m:
        return None, None
    pid = int(m.group(1))
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return pid, None
    return pid, [a.decode(errors="replace") for a in raw.split(b"\0") if a]


# Single-writer mode. DuckDB lets one process open a file read-write, and inside that process every read-write
# connection shares one database instance, but it refuses a read-only connection beside a read-write one
# ("different configuration"). The service is such a process for its whole life: its worker thread runs the CLI's
# own functions, some of which read through `read_only=True`. So while a process holds a file with
# `single_writer()`, every connection to that file this module hands out (read-only requests included) is a new
# connection (cursor) on the one held database: reads see committed writes, and nothing reopens the file.
_held: dict[str, list[Any]] = {}  # real path -> [held connection, nesting depth]
_held_lock = threading.Lock()
# a module's own tables (`extra_ddl`) made on a held file, once per statement: the service holds the file with its
# own schema only, and a job that writes another module's table (the review queue, corrections) must find it made
_made: set[tuple[str, str]] = set()
_made_lock = threading.Lock()


def _key(target: str) -> str:
    return os.path.realpath(target)


def is_held(path: str | None = None) -> bool:
    """True while this process holds the file with `single_writer()` (its schema was made when it was taken)."""
    return bool(_held) and _key(db_path(path)) in _held


def open_duckdb(target: str, *, read_only: bool = False) -> Any:
    """A new DuckDB connection to `target`; DuckDB's own errors propagate (the caller decides to wait or say so).

    The one place a connection to the record is made. Under `single_writer()` it is a cursor on the held database,
    read-write even when `read_only` is asked: those callers only read."""
    if _held:
        with _held_lock:
            held = _held.get(_key(target))
            if held is not None:
                return held[0].cursor()
    import duckdb

    return duckdb.connect(target, read_only=read_only)


@contextmanager
def single_writer(path: str | None = None, *, ddl: Sequence[str] = ()) -> Iterator[None]:
    """Makes this process the record's one opener for the block: see `_held` above. Nests (same file).

    The schema (and `ddl`, the caller's own tables) is made once here, so the many short connections that follow
    skip it: concurrent schema statements on a busy service are write conflicts waiting to happen."""
    target = db_path(path)
    with connect(target, extra_ddl=ddl) as con:
        key = _key(target)
        with _held_lock:
            if key not in _held:  # a new hold (the file may have been replaced since): its tables are asked again
                with _made_lock:
                    _made.difference_update({m for m in _made if m[0] == key})
            entry = _held.setdefault(key, [con, 0])
            entry[1] += 1
        try:
            yield
        finally:
            with _held_lock:
                entry[1] -= 1
                if entry[1] == 0:
                    del _held[key]


def _open(target: str, read_only: bool, wait_s: float) -> Any:
    import duckdb

    deadline = time.monotonic() + wait_s
    while True:
        try:
            return open_duckdb(target, read_only=read_only)
        except duckdb.Error as exc:
            first = str(exc).splitlines()[0]
            if "lock" not in first.lower():
                raise GateError(f"cannot open the gate database ({first})", file=target) from None
            pid, argv = _lock_holder(first)
            if _is_service(argv) or time.monotonic() >= deadline:
                raise DatabaseLocked(target, pid, argv) from None
            time.sleep(0.05)


@contextmanager
def connect(path: str | None = None, *, read_only: bool = False, wait_s: float = 0.0,
            extra_ddl: Sequence[str] = (), ddl: bool = True) -> Iterator[Any]:
    """A short connection to the record, closed at the end of the block.

    `wait_s`: how long to retry while another process holds the file (not when it is `gate serve`, which holds it
    for good: DatabaseLocked at once). A read-write connection makes the schema (plus `extra_ddl`) unless `ddl` is
    False or this process holds the file (made then)."""
    target = db_path(path)
    if read_only and not Path(target).exists():
        raise GateError("no gate database yet (run `gate check` first)", file=target)
    con = _open(target, read_only, wait_s)
    try:
        if ddl and not read_only and not is_held(target):
            for stmt in (*DDL, *MIGRATIONS, *extra_ddl):
                con.execute(stmt).fetchall()
            con.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", [str(SCHEMA_VERSION)]).fetchall()
        elif ddl and not read_only and extra_ddl:
            _make_once(con, target, extra_ddl)
        yield con
    finally:
        con.close()


def _make_once(con: Any, target: str, stmts: Sequence[str]) -> None:
    """The caller's own tables on a file this process holds: made the first time they are asked for, serialised, so
    that concurrent jobs never race on schema statements."""
    key = _key(target)
    with _made_lock:
        for stmt in stmts:
            if (key, stmt) not in _made:
                con.execute(stmt).fetchall()
                _made.add((key, stmt))


def _insert_arrow(con: Any, table: str, rows: list[dict[str, Any]], columns: list[str]) -> None:
    if not rows:
        return
    import pyarrow as pa

    tbl = pa.table({c: [r.get(c) for r in rows] for c in columns})
    con.register("_gate_bulk", tbl)
    try:
        cols = ", ".join(f'"{c}"' for c in columns)
        con.execute(f"INSERT INTO {table} ({cols}) SELECT {cols} FROM _gate_bulk").fetchall()
    finally:
        con.unregister("_gate_bulk")


def record_check_run(run: Any, exit_code: int, path: str | None = None) -> None:
    """Writes one `gate check` run (run, dataset version, check results, findings) in one transaction."""
    with connect(path) as con:
        con.execute("BEGIN TRANSACTION").fetchall()
        try:
            con.execute(
                "INSERT INTO runs VALUES (?, 'check', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [run.run_id, run.started_at, run.seconds, run.gate_version, run.dataset, run.fingerprint,
                 run.contract.name, run.contract.version, run.contract.sha256, run.verdict, exit_code, run.rows,
                 json.dumps(run.options), json.dumps(run.timings)]).fetchall()
            for s in run.splits:
                con.execute("INSERT OR IGNORE INTO dataset_versions VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                            [run.fingerprint, s.split, s.file, s.format, s.rows, s.bytes, s.sha256,
                             run.started_at]).fetchall()
            _insert_arrow(con, "check_results", [
                {"run_id": run.run_id, "name": r.name, "version": r.version, "status": r.status,
                 "counts": json.dumps(r.counts), "seconds": r.seconds, "summary": r.summary,
                 "details": json.dumps(r.details, default=str)} for r in run.results],
                ["run_id", "name", "version", "status", "counts", "seconds", "summary", "details"])
            _insert_arrow(con, "findings", [
                {"run_id": run.run_id, **f.to_dict()} for r in run.results for f in r.findings],
                ["run_id", *FINDING_COLUMNS])
            con.execute("COMMIT").fetchall()
        except Exception:
            con.execute("ROLLBACK").fetchall()
            raise


def check_run_summary(con: Any, run_id: str) -> dict[str, Any] | None:
    """A `gate check` run's verdict and what it checked (run_id, verdict, dataset, fingerprint, contract,
    checked_at as text), or None when the record has no such check run: a release or a promote names runs by id,
    and an unknown id must be an error, not a pass."""
    has = con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'runs'").fetchall()[0][0]
    rows = con.execute("SELECT run_id, verdict, dataset, dataset_fingerprint, contract_name, started_at "
                       "FROM runs WHERE run_id = ? AND kind = 'check'", [run_id]).fetchall() if has else []
    if not rows:
        return None
    r = rows[0]
    return {"run_id": r[0], "verdict": r[1], "dataset": r[2], "fingerprint": r[3], "contract": r[4],
            "checked_at": str(r[5])}
