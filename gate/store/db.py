"""DuckDB as the record of every gate run.

One short-lived connection per write: DuckDB allows one writer process per file, so the CLI opens,
writes in a single transaction and closes. Bulk rows go in through Arrow (register + INSERT ... SELECT),
which is two to three orders of magnitude faster than executemany. Every result is drained, so the
same code runs on DuckDB 1.5 and 2.x.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from gate.errors import GateError

DEFAULT_DB = "gate.duckdb"
SCHEMA_VERSION = 1

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
        severity VARCHAR, message VARCHAR, snippet VARCHAR, row_id VARCHAR)""",
]


def db_path(option: str | None = None) -> str:
    """The option wins, then GATE_DB, then ./gate.duckdb."""
    return option or os.environ.get("GATE_DB") or DEFAULT_DB


@contextmanager
def connect(path: str | None = None, *, read_only: bool = False) -> Iterator[Any]:
    import duckdb

    target = db_path(path)
    if read_only and not Path(target).exists():
        raise GateError("no gate database yet (run `gate check` first)", file=target)
    try:
        con = duckdb.connect(target, read_only=read_only)
    except duckdb.Error as exc:
        raise GateError(f"cannot open the gate database ({str(exc).splitlines()[0]})", file=target) from None
    try:
        if not read_only:
            for stmt in DDL:
                con.execute(stmt).fetchall()
            con.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", [str(SCHEMA_VERSION)]).fetchall()
        yield con
    finally:
        con.close()


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
                ["run_id", "check", "split", "row", "field", "rule", "severity", "message", "snippet", "row_id"])
            con.execute("COMMIT").fetchall()
        except Exception:
            con.execute("ROLLBACK").fetchall()
            raise
