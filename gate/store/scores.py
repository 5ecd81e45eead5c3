"""The record of `gate score`: runs, per-item samples and per-item scores, in the same DuckDB file as `gate check`.

Same style as `gate.store.db`: one short-lived connection per write, one transaction, Arrow bulk inserts, every
result drained. A run row is written *before* any request is sent, as `incomplete`, and only turned `complete` at the
end: a run killed mid-way (Ctrl-C, OOM, lost machine) is therefore recorded as incomplete, never as a result.
Raw outputs are stored (reviewers need them); reports built from these tables redact them. Prompts are not stored
raw: `prompt_masked` holds the item's last user message already through the free-text masker (capped), so the live
per-item page can show what was asked without the scorecard at hand and without the record holding personal data.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from gate.store.db import _insert_arrow, connect

EXPLANATION_CHARS = 500  # explanations are evidence for a reviewer, not a transcript

DDL = [
    """CREATE TABLE IF NOT EXISTS score_runs (
        run_id VARCHAR PRIMARY KEY, comparison_id VARCHAR, role VARCHAR, scorecard VARCHAR,
        scorecard_version VARCHAR, scorecard_sha256 VARCHAR, suite_hashes JSON, model VARCHAR, adapter VARCHAR,
        identity_fp VARCHAR, engine VARCHAR, engine_identity JSON, decoding JSON, epoch INTEGER,
        started_at TIMESTAMPTZ, finished_at TIMESTAMPTZ, status VARCHAR, items BIGINT, errors BIGINT,
        cached BIGINT, gate_version VARCHAR, options JSON)""",
    """CREATE TABLE IF NOT EXISTS samples (
        run_id VARCHAR, suite VARCHAR, item_id VARCHAR, category VARCHAR, prompt_hash VARCHAR, output VARCHAR,
        tool_calls JSON, error VARCHAR, finish_reason VARCHAR, latency_s DOUBLE, prompt_tokens BIGINT,
        completion_tokens BIGINT, cached BOOLEAN, epoch INTEGER DEFAULT 0, ttft_s DOUBLE, prompt_masked VARCHAR,
        PRIMARY KEY (run_id, suite, item_id, epoch))""",
    """CREATE TABLE IF NOT EXISTS scores (
        run_id VARCHAR, suite VARCHAR, item_id VARCHAR, scorer VARCHAR, "key" VARCHAR, value DOUBLE,
        explanation VARCHAR, epoch INTEGER DEFAULT 0)""",
    # files created before repeated epochs were recorded (their samples key stays (run_id, suite, item_id))
    "ALTER TABLE samples ADD COLUMN IF NOT EXISTS epoch INTEGER DEFAULT 0",
    "ALTER TABLE samples ADD COLUMN IF NOT EXISTS ttft_s DOUBLE",
    # files created before the per-item page showed prompts: their rows keep a NULL (the page shows the hash)
    "ALTER TABLE samples ADD COLUMN IF NOT EXISTS prompt_masked VARCHAR",
    "ALTER TABLE scores ADD COLUMN IF NOT EXISTS epoch INTEGER DEFAULT 0",
]

SAMPLE_COLUMNS = ["run_id", "suite", "item_id", "category", "prompt_hash", "output", "tool_calls", "error",
                  "finish_reason", "latency_s", "prompt_tokens", "completion_tokens", "cached", "epoch", "ttft_s",
                  "prompt_masked"]
SCORE_COLUMNS = ["run_id", "suite", "item_id", "scorer", "key", "value", "explanation", "epoch"]


def _ddl(con: Any) -> None:
    for stmt in DDL:
        con.execute(stmt).fetchall()


def begin_score_run(row: dict[str, Any], path: str | None = None) -> None:
    """Records the run as `incomplete` before any request goes out, so an interrupted run is never mistaken for one
    that finished."""
    with connect(path) as con:
        _ddl(con)
        cols = list(row)
        con.execute(f"INSERT INTO score_runs ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                    [json.dumps(v) if isinstance(v, (dict, list)) else v for v in row.values()]).fetchall()


def finish_score_run(run_id: str, *, status: str, finished_at: datetime, items: int, errors: int, cached: int,
                     samples: list[dict[str, Any]], scores: list[dict[str, Any]], path: str | None = None) -> None:
    """Writes samples and scores and sets the final status, in one transaction (all or nothing)."""
    with connect(path) as con:
        _ddl(con)
        con.execute("BEGIN TRANSACTION").fetchall()
        try:
            con.execute("DELETE FROM samples WHERE run_id = ?", [run_id]).fetchall()
            con.execute("DELETE FROM scores WHERE run_id = ?", [run_id]).fetchall()
            _insert_arrow(con, "samples", samples, SAMPLE_COLUMNS)
            _insert_arrow(con, "scores", [{**s, "explanation": (s.get("explanation") or "")[:EXPLANATION_CHARS]}
                                          for s in scores], SCORE_COLUMNS)
            con.execute("UPDATE score_runs SET status = ?, finished_at = ?, items = ?, errors = ?, cached = ? "
                        "WHERE run_id = ?", [status, finished_at, items, errors, cached, run_id]).fetchall()
            con.execute("COMMIT").fetchall()
        except Exception:
            con.execute("ROLLBACK").fetchall()
            raise


# ---- reads: what `gate decide` pairs and a release pins --------------------------------------------------------

def has_score_runs(con: Any) -> bool:
    """Whether any `gate score` run was ever recorded in this file (its table exists)."""
    return bool(con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'score_runs'"
                            ).fetchall()[0][0])


def score_run_row(con: Any, run_id: str) -> dict[str, Any] | None:
    """One run's row as stored (JSON columns as their text), or None (also when no run was ever recorded)."""
    if not has_score_runs(con):
        return None
    cur = con.execute("SELECT * FROM score_runs WHERE run_id = ?", [run_id])
    cols = [d[0] for d in cur.description]
    rows = cur.fetchall()
    return dict(zip(cols, rows[0], strict=True)) if rows else None


def newest_complete_comparison(con: Any, scorecard: str | None = None) -> str | None:
    """The comparison id of the newest `gate score` run whose baseline and candidate both completed."""
    rows = con.execute(
        "SELECT comparison_id FROM score_runs WHERE status = 'complete' AND (? IS NULL OR scorecard = ?) "
        "GROUP BY comparison_id HAVING count(DISTINCT role) = 2 ORDER BY max(started_at) DESC LIMIT 1",
        [scorecard, scorecard]).fetchall()
    return rows[0][0] if rows else None


def comparison_runs(con: Any, comparison: str) -> list[tuple[str, str]]:
    """(role, run id) of one comparison's runs, oldest first."""
    return [(r, i) for r, i in con.execute("SELECT role, run_id FROM score_runs WHERE comparison_id = ? "
                                           "ORDER BY started_at", [comparison]).fetchall()]


def run_items(con: Any, run_id: str) -> list[tuple[str, str, str, str]]:
    """(suite, item id, category, prompt hash) of every item a run answered (epochs folded)."""
    return [tuple(r) for r in con.execute("SELECT DISTINCT suite, item_id, category, prompt_hash FROM samples "
                                          "WHERE run_id = ?", [run_id]).fetchall()]


def run_item_values(con: Any, run_id: str) -> list[tuple[str, str, str, str, float | None]]:
    """(suite, item id, scorer, key, value) per item: repeated epochs of one item are one paired unit, so the value
    is their mean (epochs are not new items); the `error` key is not a metric."""
    return [tuple(r) for r in con.execute(
        'SELECT suite, item_id, scorer, "key", avg(value) FROM scores WHERE run_id = ? AND "key" <> \'error\' '
        'GROUP BY ALL', [run_id]).fetchall()]


def run_scorer_errors(con: Any, run_id: str) -> list[tuple[str, str, str]]:
    """(scorer, suite, item id) of every item a scorer could not score (an exception while scoring: the `error`
    key), distinct over epochs, in order."""
    return [tuple(r) for r in con.execute(
        'SELECT DISTINCT scorer, suite, item_id FROM scores WHERE run_id = ? AND "key" = \'error\' ORDER BY ALL',
        [run_id]).fetchall()]


def run_level_metrics(con: Any, run_id: str) -> list[dict[str, Any]]:
    """The run's aggregated metrics rows (suite, category, scorer, key, n, mean, p50, p95, p99); [] before any."""
    has = con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'score_metrics'").fetchall()
    if not has[0][0]:
        return []
    cur = con.execute('SELECT suite, category, scorer, "key", n, mean, p50, p95, p99 FROM score_metrics '
                      "WHERE run_id = ?", [run_id])
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]
