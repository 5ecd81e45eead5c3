"""The record of `gate review`: one row per queued case in `review_queue` (the SQL of the queue lives here).

Like every table of the shared record it holds masked snippets only (the queue's own `masked`), never a row's text."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from gate.store.db import _insert_arrow, connect

DDL = [
    """CREATE TABLE IF NOT EXISTS review_queue (
        review_id VARCHAR, created_at TIMESTAMPTZ, dataset VARCHAR, contract_sha256 VARCHAR, model VARCHAR,
        engine VARCHAR, "rank" INTEGER, reason VARCHAR, split VARCHAR, "row" BIGINT, row_id VARCHAR,
        detail VARCHAR, prompt VARCHAR, gold VARCHAR, answer VARCHAR, margin DOUBLE, partner_row BIGINT,
        partner_id VARCHAR)""",
]
COLUMNS = ["review_id", "created_at", "dataset", "contract_sha256", "model", "engine", "rank", "reason", "split",
           "row", "row_id", "detail", "prompt", "gold", "answer", "margin", "partner_row", "partner_id"]


def record_review(review_id: str, review: Any, path: str | None = None) -> int:
    """Records one queue under `review_id`; returns the rows written."""
    now = datetime.now(UTC)
    rows = [{"review_id": review_id, "created_at": now, "dataset": review.dataset,
             "contract_sha256": review.contract_sha256, "model": review.model, "engine": review.engine,
             **c.to_dict()} for c in review.cases]
    with connect(path, extra_ddl=DDL) as con:
        _insert_arrow(con, "review_queue", rows, COLUMNS)
    return len(rows)


def queue_of(review_id: str, path: str | None = None) -> list[dict[str, Any]]:
    """One recorded queue in rank order (the dashboard's and the tests' read)."""
    with connect(path, read_only=True) as con:
        if not con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'review_queue'"
                           ).fetchall()[0][0]:
            return []
        cols = ", ".join(f'"{c}"' for c in COLUMNS)
        cur = con.execute(f"SELECT {cols} "
                          "FROM review_queue WHERE review_id = ? ORDER BY \"rank\"", [review_id])
        return [dict(zip(COLUMNS, r, strict=True)) for r in cur.fetchall()]


def reviews_view(con: Any | None, limit: int = 100) -> list[dict[str, Any]]:
    """The dashboard's list of queues, newest first: when, what was reviewed, by which model, cases per reason.
    Empty without a record or table."""
    from gate.store.views import _iso, _rows, tables

    if "review_queue" not in tables(con):
        return []
    assert con is not None
    queues = _rows(con.execute(
        f"SELECT review_id, {_iso('any_value(created_at)')} AS created_at, any_value(dataset) AS dataset, "
        "any_value(model) AS model, any_value(engine) AS engine, count(*) AS cases, "
        "count(*) FILTER (WHERE reason = 'model_disagrees') AS disagreements, "
        "count(*) FILTER (WHERE reason = 'conflicting_answers') AS conflicts "
        "FROM review_queue GROUP BY review_id ORDER BY any_value(created_at) DESC, review_id LIMIT ?", [limit]))
    return queues


def review_cases(con: Any | None, review_id: str) -> list[dict[str, Any]] | None:
    """One queue's cases in rank order; None when the record has no such queue."""
    from gate.store.views import _rows, tables

    if "review_queue" not in tables(con):
        return None
    assert con is not None
    cols = ", ".join(f'"{c}"' for c in COLUMNS if c != "created_at")
    cases = _rows(con.execute(f'SELECT {cols} FROM review_queue WHERE review_id = ? ORDER BY "rank"', [review_id]))
    return cases or None
