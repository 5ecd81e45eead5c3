"""Whole-file reads of a DuckDB file: every column of every table as text, and the ids the dashboard's pages take.

Why in the store: the leak scan (`gate demo`'s last step, gate.demo.leakscan) must look at everything the record
holds, whoever wrote it, and SQL lives in gate/store. The file is opened read-only with DuckDB directly (not
through `gate.store.db.connect`): the scan reads any DuckDB file it is given, the response cache and copies
included, and must never create a schema in it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def _columns(con: Any) -> list[tuple[str, str, list[str]]]:
    tables = con.execute("SELECT table_schema, table_name FROM information_schema.tables "
                         "ORDER BY table_schema, table_name").fetchall()
    return [(schema, table, [c for (c,) in con.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_schema = ? AND table_name = ? "
        "ORDER BY ordinal_position", [schema, table]).fetchall()]) for schema, table in tables]


def column_texts(path: str | Path) -> list[tuple[str, str, str]]:
    """(table, column, every non-null value of the column cast to text, one a line) for every column of every
    table: JSON, structs and lists hold strings too."""
    import duckdb

    con = duckdb.connect(str(path), read_only=True)
    try:
        out = []
        for schema, table, cols in _columns(con):
            for col in cols:
                rows = con.execute(f'SELECT CAST("{col}" AS VARCHAR) FROM "{schema}"."{table}" '
                                   f'WHERE "{col}" IS NOT NULL').fetchall()
                out.append((table, col, "\n".join(r[0] for r in rows)))
        return out
    finally:
        con.close()


def page_ids(db: str) -> dict[str, Any]:
    """The ids the dashboard's routes take, from the record: release ids, scorecards, check run ids, each check
    run's checks and findings count, review queue ids (empty for tables not made yet)."""
    import duckdb

    con = duckdb.connect(db, read_only=True)
    try:
        have = {t for (t,) in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
        releases = [r for (r,) in con.execute("SELECT release_id FROM releases ORDER BY release_id").fetchall()] \
            if "releases" in have else []
        scorecards = [s for (s,) in con.execute("SELECT DISTINCT scorecard FROM releases ORDER BY 1").fetchall()] \
            if "releases" in have else []
        runs = [r for (r,) in con.execute("SELECT run_id FROM runs WHERE kind = 'check' ORDER BY run_id").fetchall()] \
            if "runs" in have else []
        checks = {r: [c for (c,) in con.execute('SELECT DISTINCT "check" FROM findings WHERE run_id = ? ORDER BY 1',
                                                 [r]).fetchall()] for r in runs} if "findings" in have else {}
        findings = {r: int(con.execute("SELECT count(*) FROM findings WHERE run_id = ?", [r]).fetchone()[0])
                    for r in runs} if "findings" in have else {}
        reviews = [r for (r,) in con.execute("SELECT DISTINCT review_id FROM review_queue ORDER BY 1").fetchall()] \
            if "review_queue" in have else []
    finally:
        con.close()
    return {"releases": releases, "scorecards": scorecards, "runs": runs, "checks": checks, "findings": findings,
            "reviews": reviews}


def table_count(path: str | Path) -> int:
    """How many tables the file holds (the scan says how much it looked at)."""
    import duckdb

    con = duckdb.connect(str(path), read_only=True)
    try:
        return len(_columns(con))
    finally:
        con.close()
