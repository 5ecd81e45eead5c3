"""The record of dataset indexes: which index describes which dataset, built or updated when, how big.

The index itself lives in Parquet next to the work (it is large and rebuilt freely); DuckDB keeps the history,
so "which index did this pull-request check use, and how old was it" is one query.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from gate.store.db import connect

# `recorded_at`, not `at`: DuckDB 2.0 made AT a reserved word (time travel), and a column named `at` is a parser error
DDL = """CREATE TABLE IF NOT EXISTS dataset_indexes (
    index_dir VARCHAR, dataset VARCHAR, action VARCHAR, recorded_at TIMESTAMPTZ, rows BIGINT, parts INTEGER,
    config VARCHAR, contract_sha256 VARCHAR, base_commit VARCHAR, rows_added BIGINT, timings JSON)"""


def record_index_event(manifest: dict[str, Any], action: str, *, base_commit: str | None = None,
                       rows_added: int | None = None, timings: dict[str, float] | None = None,
                       path: str | None = None) -> None:
    """One row per build or update; a short writer connection like every other record."""
    with connect(path) as con:
        con.execute(DDL).fetchall()
        con.execute("INSERT INTO dataset_indexes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [manifest.get("index_dir"), manifest.get("dataset"), action, datetime.now(UTC),
                     manifest.get("rows"), len(manifest.get("parts", [])), manifest.get("config"),
                     manifest.get("contract_sha256"), base_commit, rows_added,
                     json.dumps(timings or {})]).fetchall()
