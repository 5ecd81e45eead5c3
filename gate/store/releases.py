"""The release record: decisions, their gates, releases, the "current" pointer's history and watch events.

Same style as `gate.store.db`: one short-lived connection per write, one transaction, every result drained. The
dashboard reads these tables to draw releases over time, so the column names below are a stable interface.

decisions       one `gate decide` (or the last step of `gate score`), one row
    decision_id, created_at, mode ('compare' | 'baseline_only' | 'candidate_only' | 'aa'), verdict ('PROMOTE' |
    'BLOCK' | 'TARGET_MET' | 'TARGET_NOT_MET' | 'NOISE_FLOOR'), exit_code, scorecard, scorecard_version,
    scorecard_sha256, baseline_run, candidate_run (score_runs.run_id; candidate_run is NULL for baseline_only,
    baseline_run for candidate_only), n_pairs,
    alignment JSON ({missing_in_candidate, new_in_candidate, hash_mismatch, ...} counts and example ids),
    noise_floor JSON (gate name -> floor, from an A/A decision), warnings JSON (list of lines), summary, seed,
    resamples
gate_results    one row per gate of a decision
    decision_id, gate, rule, scorer, metric, suite, category, test, direction, alpha, margin, threshold,
    baseline, candidate, observed, ci_low, ci_high, p_value, p_holm, n, verdict ('pass' | 'fail' | 'skip'),
    severity ('block' | 'warn'), detail
comparisons     every paired comparison of a decision, per suite x scorer x key x category ('all' first)
    decision_id, suite, scorer, "key", category, n_pairs, baseline, candidate, delta, ci_low, ci_high, p_value,
    test, se, n_clusters, b, c
releases        one pinned candidate
    release_id, created_at, created_by, decision_id, verdict (of that decision), base_model, base_revision,
    adapter, adapter_sha256, tokenizer_sha256, chat_template_sha256, engine, engine_version, engine_flags JSON,
    system_prompt_sha256, tool_schema_sha256, scorecard, scorecard_version, scorecard_sha256, suite_hashes JSON,
    scores JSON (suite -> scorer -> key -> {baseline, candidate}), dataset_fingerprints JSON (list),
    data_checks JSON (list of {run_id, verdict, dataset, fingerprint}), training_run, notes
release_pointer the history of "current": the last row is the current release
    seq, moved_at, action ('promote' | 'rollback'), release_id, previous_release_id, moved_by, reason
watch_events    one row per rollback trigger evaluated by `gate watch`
    watch_id, watched_at, scorecard, metrics_file, metrics_sha256, release_id, "trigger", metric, aggregate, op,
    threshold, observed, n, fired, verdict ('ROLLBACK' | 'OK')
"""

from __future__ import annotations

import json
from typing import Any

from gate.errors import GateError
from gate.store.db import _insert_arrow, connect

DDL = [
    """CREATE TABLE IF NOT EXISTS decisions (
        decision_id VARCHAR PRIMARY KEY, created_at TIMESTAMPTZ, mode VARCHAR, verdict VARCHAR, exit_code INTEGER,
        scorecard VARCHAR, scorecard_version VARCHAR, scorecard_sha256 VARCHAR, baseline_run VARCHAR,
        candidate_run VARCHAR, n_pairs BIGINT, alignment JSON, noise_floor JSON, warnings JSON, summary VARCHAR,
        seed BIGINT, resamples BIGINT)""",
    """CREATE TABLE IF NOT EXISTS gate_results (
        decision_id VARCHAR, gate VARCHAR, rule VARCHAR, scorer VARCHAR, metric VARCHAR, suite VARCHAR,
        category VARCHAR, test VARCHAR, direction VARCHAR, alpha DOUBLE, margin DOUBLE, threshold DOUBLE,
        baseline DOUBLE, candidate DOUBLE, observed DOUBLE, ci_low DOUBLE, ci_high DOUBLE, p_value DOUBLE,
        p_holm DOUBLE, n BIGINT, verdict VARCHAR, severity VARCHAR, detail VARCHAR)""",
    """CREATE TABLE IF NOT EXISTS comparisons (
        decision_id VARCHAR, suite VARCHAR, scorer VARCHAR, "key" VARCHAR, category VARCHAR, n_pairs BIGINT,
        baseline DOUBLE, candidate DOUBLE, delta DOUBLE, ci_low DOUBLE, ci_high DOUBLE, p_value DOUBLE,
        test VARCHAR, se DOUBLE, n_clusters BIGINT, b BIGINT, c BIGINT)""",
    """CREATE TABLE IF NOT EXISTS releases (
        release_id VARCHAR PRIMARY KEY, created_at TIMESTAMPTZ, created_by VARCHAR, decision_id VARCHAR,
        verdict VARCHAR, base_model VARCHAR, base_revision VARCHAR, adapter VARCHAR, adapter_sha256 VARCHAR,
        tokenizer_sha256 VARCHAR, chat_template_sha256 VARCHAR, engine VARCHAR, engine_version VARCHAR,
        engine_flags JSON, system_prompt_sha256 VARCHAR, tool_schema_sha256 VARCHAR, scorecard VARCHAR,
        scorecard_version VARCHAR, scorecard_sha256 VARCHAR, suite_hashes JSON, scores JSON,
        dataset_fingerprints JSON, data_checks JSON, training_run VARCHAR, notes VARCHAR)""",
    """CREATE TABLE IF NOT EXISTS release_pointer (
        seq BIGINT PRIMARY KEY, moved_at TIMESTAMPTZ, action VARCHAR, release_id VARCHAR, previous_release_id VARCHAR,
        moved_by VARCHAR, reason VARCHAR)""",
    """CREATE TABLE IF NOT EXISTS watch_events (
        watch_id VARCHAR, watched_at TIMESTAMPTZ, scorecard VARCHAR, metrics_file VARCHAR, metrics_sha256 VARCHAR,
        release_id VARCHAR, "trigger" VARCHAR, metric VARCHAR, aggregate VARCHAR, op VARCHAR, threshold DOUBLE,
        observed DOUBLE, n BIGINT, fired BOOLEAN, verdict VARCHAR)""",
]

GATE_COLUMNS = ["decision_id", "gate", "rule", "scorer", "metric", "suite", "category", "test", "direction", "alpha",
                "margin", "threshold", "baseline", "candidate", "observed", "ci_low", "ci_high", "p_value", "p_holm",
                "n", "verdict", "severity", "detail"]
COMPARISON_COLUMNS = ["decision_id", "suite", "scorer", "key", "category", "n_pairs", "baseline", "candidate",
                      "delta", "ci_low", "ci_high", "p_value", "test", "se", "n_clusters", "b", "c"]
WATCH_COLUMNS = ["watch_id", "watched_at", "scorecard", "metrics_file", "metrics_sha256", "release_id", "trigger",
                 "metric", "aggregate", "op", "threshold", "observed", "n", "fired", "verdict"]
JSON_COLUMNS = {"alignment", "noise_floor", "warnings", "engine_flags", "suite_hashes", "scores",
                "dataset_fingerprints", "data_checks"}


def ensure_tables(con: Any) -> None:
    for stmt in DDL:
        con.execute(stmt).fetchall()


def _j(v: Any) -> Any:
    return json.dumps(v, default=str) if isinstance(v, (dict, list, tuple)) else v


def _rows(cur: Any) -> list[dict[str, Any]]:
    """Rows as dicts with JSON columns decoded, so callers never see DuckDB's JSON-as-text."""
    cols = [d[0] for d in cur.description]
    out = []
    for row in cur.fetchall():
        d = dict(zip(cols, row, strict=True))
        for k in JSON_COLUMNS & d.keys():
            if isinstance(d[k], str):
                d[k] = json.loads(d[k])
        out.append(d)
    return out


def _insert_row(con: Any, table: str, row: dict[str, Any]) -> None:
    cols = list(row)
    names = ", ".join(f'"{c}"' for c in cols)
    con.execute(f"INSERT INTO {table} ({names}) VALUES ({', '.join('?' * len(cols))})",
                [_j(v) for v in row.values()]).fetchall()


def record_decision(decision: dict[str, Any], gates: list[dict[str, Any]], comparisons: list[dict[str, Any]],
                    path: str | None = None) -> None:
    """Writes a decision with its gates and comparisons in one transaction (all or nothing)."""
    with connect(path) as con:
        ensure_tables(con)
        con.execute("BEGIN TRANSACTION").fetchall()
        try:
            _insert_row(con, "decisions", decision)
            _insert_arrow(con, "gate_results", [{**g, "decision_id": decision["decision_id"]} for g in gates],
                          GATE_COLUMNS)
            _insert_arrow(con, "comparisons", [{**c, "decision_id": decision["decision_id"]} for c in comparisons],
                          COMPARISON_COLUMNS)
            con.execute("COMMIT").fetchall()
        except Exception:
            con.execute("ROLLBACK").fetchall()
            raise


def record_release(release: dict[str, Any], path: str | None = None) -> None:
    with connect(path) as con:
        ensure_tables(con)
        _insert_row(con, "releases", release)


def record_pointer(entry: dict[str, Any], path: str | None = None) -> int:
    """Appends one move of "current"; `seq` is assigned inside the write so two moves never share one."""
    with connect(path) as con:
        ensure_tables(con)
        con.execute("BEGIN TRANSACTION").fetchall()
        try:
            seq = con.execute("SELECT coalesce(max(seq), 0) + 1 FROM release_pointer").fetchall()[0][0]
            _insert_row(con, "release_pointer", {"seq": seq, **entry})
            con.execute("COMMIT").fetchall()
        except Exception:
            con.execute("ROLLBACK").fetchall()
            raise
    return int(seq)


def record_watch(events: list[dict[str, Any]], path: str | None = None) -> None:
    with connect(path) as con:
        ensure_tables(con)
        _insert_arrow(con, "watch_events", events, WATCH_COLUMNS)


def _has_table(con: Any, name: str) -> bool:
    return bool(con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = ?",
                            [name]).fetchall()[0][0])


def _query(sql: str, params: list[Any], path: str | None, table: str) -> list[dict[str, Any]]:
    """Read-only query; an empty list when the table does not exist yet (nothing released so far)."""
    with connect(path, read_only=True) as con:
        if not _has_table(con, table):
            return []
        return _rows(con.execute(sql, params))


def list_releases(path: str | None = None) -> list[dict[str, Any]]:
    """Every release, oldest first."""
    return _query("SELECT * FROM releases ORDER BY created_at, release_id", [], path, "releases")


def get_release(release_id: str, path: str | None = None) -> dict[str, Any]:
    rows = _query("SELECT * FROM releases WHERE release_id = ?", [release_id], path, "releases")
    if not rows:
        raise GateError(f"no release '{release_id}' in the record", file=path)
    return rows[0]


def pointer_history(path: str | None = None) -> list[dict[str, Any]]:
    """Every move of "current", oldest first."""
    return _query("SELECT * FROM release_pointer ORDER BY seq", [], path, "release_pointer")


def current_release(path: str | None = None) -> str | None:
    """The release "current" points at, or None before the first promote."""
    hist = pointer_history(path)
    return hist[-1]["release_id"] if hist else None


def get_decision(decision_id: str, path: str | None = None) -> dict[str, Any]:
    rows = _query("SELECT * FROM decisions WHERE decision_id = ?", [decision_id], path, "decisions")
    if not rows:
        raise GateError(f"no decision '{decision_id}' in the record", file=path)
    return rows[0]


def list_decisions(path: str | None = None) -> list[dict[str, Any]]:
    return _query("SELECT * FROM decisions ORDER BY created_at", [], path, "decisions")


def decision_gates(decision_id: str, path: str | None = None) -> list[dict[str, Any]]:
    """The gates of one decision, in the scorecard's order."""
    return _query("SELECT * FROM gate_results WHERE decision_id = ? ORDER BY rowid", [decision_id], path,
                  "gate_results")


def latest_noise_floor(scorecard: str, path: str | None = None) -> dict[str, Any]:
    """gate -> floor from the newest A/A decision of this scorecard ({} when none was measured)."""
    rows = _query("SELECT noise_floor FROM decisions WHERE mode = 'aa' AND scorecard = ? ORDER BY created_at DESC "
                  "LIMIT 1", [scorecard], path, "decisions")
    return rows[0]["noise_floor"] if rows and rows[0]["noise_floor"] else {}


def overall_comparisons(con: Any, decision_id: str) -> list[tuple[str, str, str, Any, Any, Any]]:
    """(suite, scorer, key, baseline, candidate, delta) of a decision over all items (category 'all'): the
    scores a release pins."""
    return [tuple(r) for r in con.execute(
        'SELECT suite, scorer, "key", baseline, candidate, delta FROM comparisons WHERE decision_id = ? '
        "AND category = 'all' ORDER BY suite, scorer, \"key\"", [decision_id]).fetchall()]
