"""The record of `gate train`: one row per run in `train_runs`, and its metrics in `train_metrics` as they arrive.

Same rules as `gate.store.db`: one short-lived writer connection per write (DuckDB allows one writer process per
file, and a training run lasts hours, so it never holds the file open between flushes). The run row is written as
`running` before the trainer starts, so a killed run stays visible as never finished.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from gate.store.db import _insert_arrow, connect

DDL = [
    """CREATE TABLE IF NOT EXISTS train_runs (
        run_id VARCHAR PRIMARY KEY, spec_name VARCHAR, spec_sha256 VARCHAR, runner VARCHAR, model VARCHAR,
        method VARCHAR, output_dir VARCHAR, command JSON, log_path VARCHAR, status VARCHAR, exit_code INTEGER,
        error VARCHAR, checkpoint VARCHAR, manifest_sha256 VARCHAR, started_at TIMESTAMPTZ, finished_at TIMESTAMPTZ,
        steps BIGINT, final_loss DOUBLE, gate_version VARCHAR, checks JSON)""",
    """CREATE TABLE IF NOT EXISTS train_metrics (
        run_id VARCHAR, step BIGINT, kind VARCHAR, loss DOUBLE, grad_norm DOUBLE, lr DOUBLE, tokens_per_s DOUBLE,
        epoch DOUBLE, extra JSON, logged_at TIMESTAMPTZ)""",
]
METRIC_COLUMNS = ["run_id", "step", "kind", "loss", "grad_norm", "lr", "tokens_per_s", "epoch", "extra", "logged_at"]


def _ddl(con: Any) -> None:
    for stmt in DDL:
        con.execute(stmt).fetchall()


def begin_train_run(row: dict[str, Any], path: str | None = None) -> None:
    with connect(path) as con:
        _ddl(con)
        cols = list(row)
        con.execute(f"INSERT INTO train_runs ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                    [json.dumps(v) if isinstance(v, (dict, list, tuple)) else v for v in row.values()]).fetchall()


def add_metrics(run_id: str, metrics: list[dict[str, Any]], path: str | None = None) -> None:
    """Appends a batch of parsed metrics; called every few seconds while the trainer runs."""
    if not metrics:
        return
    with connect(path) as con:
        _ddl(con)
        _insert_arrow(con, "train_metrics", [
            {**m, "run_id": run_id, "extra": json.dumps(m.get("extra")) if m.get("extra") else None}
            for m in metrics], METRIC_COLUMNS)


def finish_train_run(run_id: str, *, status: str, exit_code: int, finished_at: datetime, error: str | None = None,
                     checkpoint: str | None = None, manifest_sha256: str | None = None, steps: int | None = None,
                     final_loss: float | None = None, path: str | None = None) -> None:
    with connect(path) as con:
        _ddl(con)
        con.execute("UPDATE train_runs SET status = ?, exit_code = ?, finished_at = ?, error = ?, checkpoint = ?, "
                    "manifest_sha256 = ?, steps = ?, final_loss = ? WHERE run_id = ?",
                    [status, exit_code, finished_at, error, checkpoint, manifest_sha256, steps, final_loss,
                     run_id]).fetchall()


def train_metrics(run_id: str, path: str | None = None) -> list[dict[str, Any]]:
    with connect(path, read_only=True) as con:
        cur = con.execute("SELECT step, kind, loss, grad_norm, lr, tokens_per_s FROM train_metrics WHERE run_id = ? "
                          "ORDER BY kind, step", [run_id])
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]


def train_run(run_id: str, path: str | None = None) -> dict[str, Any] | None:
    with connect(path, read_only=True) as con:
        cur = con.execute("SELECT * FROM train_runs WHERE run_id = ?", [run_id])
        cols = [d[0] for d in cur.description]
        rows = cur.fetchall()
        return dict(zip(cols, rows[0], strict=True)) if rows else None
