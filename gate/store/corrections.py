"""The record of `gate apply`: one row per applied correction in `corrections`, so a release's data provenance and
the dashboard can say how many rows were corrected and by which rule (the SQL of corrections lives here).
`input_fingerprint` / `output_fingerprint` are the datasets' `gate check` fingerprints (gate.data.corrections).

The record is shared (the dashboard, the service), so it holds masked snippets of the old and new values and of a
free-text reason, never the values: a correction of an answer that names a customer would otherwise put the name in
the database. The values themselves stay in corrections.jsonl and the output's MANIFEST.json, beside the data."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from gate.store.db import _insert_arrow, connect

DDL = [
    """CREATE TABLE IF NOT EXISTS corrections (
        apply_id VARCHAR, applied_at TIMESTAMPTZ, dataset VARCHAR, output VARCHAR, input_fingerprint VARCHAR,
        output_fingerprint VARCHAR, corrections_sha256 VARCHAR, row_id VARCHAR, split VARCHAR, "row" BIGINT,
        field VARCHAR, old JSON, new JSON, reason VARCHAR, rule VARCHAR, reviewer VARCHAR, decided_at VARCHAR)""",
]
COLUMNS = ["apply_id", "applied_at", "dataset", "output", "input_fingerprint", "output_fingerprint",
           "corrections_sha256", "row_id", "split", "row", "field", "old", "new", "reason", "rule", "reviewer",
           "decided_at"]


def record_apply(manifest: dict[str, Any], out: str, path: str | None = None) -> int:
    """Records the corrections of one `gate apply` (its manifest); an apply already recorded (same `key`: the same
    input and corrections) is not recorded twice. Returns the rows written."""
    with connect(path, extra_ddl=DDL) as con:
        seen = con.execute("SELECT count(*) FROM corrections WHERE apply_id = ?", [manifest["key"]]).fetchall()[0][0]
        if seen:
            return 0
        now = datetime.now(UTC)
        rows = [{"apply_id": manifest["key"], "applied_at": now, "dataset": manifest["dataset"], "output": out,
                 "input_fingerprint": manifest["input_fingerprint"],
                 "output_fingerprint": manifest["output_fingerprint"],
                 "corrections_sha256": manifest["corrections_sha256"], "row_id": c["id"], "split": c["split"],
                 "row": c["row"], "field": c["field"], "old": json.dumps(_masked(c["old"])),
                 "new": json.dumps(_masked(c["new"])), "reason": c["reason"] if c["rule"] else _masked(c["reason"]),
                 "rule": c["rule"], "reviewer": c["reviewer"], "decided_at": c["time"]}
                for c in manifest["applied"]]
        _insert_arrow(con, "corrections", rows, COLUMNS)
        return len(rows)


def _masked(value: Any) -> Any:
    """A value as the record may hold it: numbers, booleans and null as they are; text and structures as a masked
    snippet (gate.pii.redact.value_snippet, free text with every word reduced to its initial)."""
    if value is None or isinstance(value, bool | int | float):
        return value
    from gate.pii.redact import value_snippet

    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    return value_snippet(text, 80, words=len(text.split()) > 2)


def corrections_by_rule(path: str | None = None) -> list[tuple[str | None, int, int]]:
    """(rule or None for free-text reasons, corrections, distinct rows) over every recorded apply."""
    with connect(path, extra_ddl=DDL) as con:
        return [tuple(r) for r in con.execute(  # type: ignore[misc]
            "SELECT rule, count(*), count(DISTINCT row_id) FROM corrections GROUP BY rule ORDER BY rule NULLS LAST"
        ).fetchall()]


def corrections_of(fingerprints: list[str], path: str | None = None) -> dict[str, int]:
    """Rows corrected per rule (`free text` for reasons without one) in the datasets with these `gate check`
    fingerprints (a release's `dataset_fingerprints`): what its training data owes to reviewed corrections."""
    with connect(path, extra_ddl=DDL) as con:
        return corrections_in(con, fingerprints)


def corrections_in(con: Any, fingerprints: list[str]) -> dict[str, int]:
    """`corrections_of` on an open (possibly read-only) connection; {} when the record has no corrections yet."""
    if not fingerprints:
        return {}
    has = con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'corrections'").fetchall()
    if not has[0][0]:
        return {}
    marks = ", ".join("?" * len(fingerprints))
    rows = con.execute(
        f"SELECT coalesce(rule, 'free text'), count(DISTINCT row_id) FROM corrections "
        f"WHERE output_fingerprint IN ({marks}) GROUP BY 1 ORDER BY 1", list(fingerprints)).fetchall()
    return {str(r): int(n) for r, n in rows}


def corrections_view(con: Any | None) -> dict[str, list[dict[str, Any]]]:
    """The dashboard's corrections page: per rule (free-text reasons under `free text`, with their masked reasons),
    how many corrections, rows, reviewers and applies; and the newest applies. Empty without a record or table."""
    from gate.store.views import _iso, _rows, tables

    if "corrections" not in tables(con):
        return {"rules": [], "applies": [], "reasons": []}
    assert con is not None
    rules = _rows(con.execute(
        "SELECT coalesce(rule, 'free text') AS rule, count(*) AS corrections, count(DISTINCT row_id) AS rows, "
        "count(DISTINCT reviewer) AS reviewers, count(DISTINCT apply_id) AS applies, "
        f"{_iso('max(applied_at)')} AS last_applied FROM corrections GROUP BY 1 ORDER BY 2 DESC, 1"))
    reasons = _rows(con.execute(
        "SELECT reason, count(*) AS corrections FROM corrections WHERE rule IS NULL GROUP BY 1 ORDER BY 2 DESC, 1 "
        "LIMIT 50"))
    applies = _rows(con.execute(
        f"SELECT apply_id, {_iso('min(applied_at)')} AS applied_at, any_value(dataset) AS dataset, "
        "any_value(output) AS output, count(*) AS corrections, count(DISTINCT row_id) AS rows FROM corrections "
        "GROUP BY apply_id ORDER BY min(applied_at) DESC LIMIT 100"))
    return {"rules": rules, "applies": applies, "reasons": reasons}
