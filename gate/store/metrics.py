"""Aggregated metrics of `gate score` runs in DuckDB, beside the per-item scores they come from.

Stored rather than recomputed on read because the dashboard, the release decision and the CLI must all show the same
numbers: one aggregation (`gate.score.metrics`), written once per complete run. Same connection discipline as
`gate.store.db`: one short-lived writer, one transaction, Arrow bulk insert.
"""

from __future__ import annotations

from typing import Any

from gate.store.db import _insert_arrow, connect

DDL = """CREATE TABLE IF NOT EXISTS score_metrics (
    run_id VARCHAR, suite VARCHAR, category VARCHAR, scorer VARCHAR, "key" VARCHAR, n BIGINT, mean DOUBLE,
    stderr DOUBLE, p50 DOUBLE, p95 DOUBLE, p99 DOUBLE, epochs INTEGER,
    PRIMARY KEY (run_id, suite, category, scorer, "key"))"""

COLUMNS = ["run_id", "suite", "category", "scorer", "key", "n", "mean", "stderr", "p50", "p95", "p99", "epochs"]


def record_metrics(run_id: str, rows: list[dict[str, Any]], path: str | None = None) -> None:
    """Replaces the run's metrics in one transaction."""
    with connect(path) as con:
        con.execute(DDL).fetchall()
        con.execute("BEGIN TRANSACTION").fetchall()
        try:
            con.execute("DELETE FROM score_metrics WHERE run_id = ?", [run_id]).fetchall()
            _insert_arrow(con, "score_metrics", [{**r, "run_id": run_id} for r in rows], COLUMNS)
            con.execute("COMMIT").fetchall()
        except Exception:
            con.execute("ROLLBACK").fetchall()
            raise


def load_metrics(run_id: str, path: str | None = None) -> list[dict[str, Any]]:
    with connect(path, read_only=True) as con:
        exists = con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'score_metrics'"
                             ).fetchall()[0][0]
        if not exists:
            return []
        cur = con.execute(f"SELECT {', '.join(chr(34) + c + chr(34) for c in COLUMNS)} FROM score_metrics "
                          "WHERE run_id = ? ORDER BY suite, category, scorer, \"key\"", [run_id])
        return [dict(zip(COLUMNS, r, strict=True)) for r in cur.fetchall()]
