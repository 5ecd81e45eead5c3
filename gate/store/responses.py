"""The response cache's table: answers keyed by everything that can change them (gate.engines.cache makes the key).

Why a table of its own in the store: SQL lives in gate/store, and the cache is usually the record's own file
(`gate score` keeps it there), so its schema belongs beside the record's. The cache opens its own short
connection per batch (DuckDB allows one writer per file); these functions take that open connection.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

DDL = """CREATE TABLE IF NOT EXISTS response_cache (
    key VARCHAR PRIMARY KEY, identity_fp VARCHAR, identity JSON, request JSON, epoch INTEGER,
    response JSON, created_at TIMESTAMPTZ DEFAULT current_timestamp)"""


def connect(path: str) -> Any:
    """A new connection to the cache's file (a context manager: closed at the end of the block). Not
    `gate.store.db.connect`: the cache may be a file of its own, and makes no record schema in it."""
    import duckdb

    return duckdb.connect(path)


def ensure_table(con: Any) -> None:
    con.execute(DDL).fetchall()


def cached_responses(con: Any, keys: Sequence[str]) -> list[tuple[str, str]]:
    """(key, response JSON) for the keys the cache holds."""
    return [(k, v) for k, v in con.execute("SELECT key, response FROM response_cache WHERE key IN (SELECT unnest(?))",
                                           [list(keys)]).fetchall()]


def store_responses(con: Any, rows: Sequence[tuple[str, str, str, str, int, str]]) -> None:
    """(key, identity fingerprint, identity JSON, request JSON, epoch, response JSON) rows; a key asked again
    replaces its answer."""
    con.executemany("INSERT OR REPLACE INTO response_cache (key, identity_fp, identity, request, epoch, response) "
                    "VALUES (?, ?, ?, ?, ?, ?)", rows)


def response_count(con: Any) -> int:
    return int(con.execute("SELECT count(*) FROM response_cache").fetchone()[0])
