"""The dashboard's door to the record: a read-only connection, and the page reads (which live in gate.store.views).

Why this module stays: the dashboard's pages, its auth and the tests reach the record through it, and
`LOCK_RETRIES` here is the dashboard's patience with a writer (read at each call, so a test or a deployment can
lower it). The SQL itself lives in gate/store: the names below are gate.store.views' own functions.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from gate.store.views import (
    ISO,
    JSON_FIELDS,
    check_run,
    check_runs,
    current_release,
    data_checks,
    facets,
    open_read_only,
    release,
    release_list,
    release_series,
    tables,
    token_row,
)

__all__ = ["ISO", "JSON_FIELDS", "LOCK_RETRIES", "check_run", "check_runs", "current_release", "data_checks",
           "facets", "read_only", "release", "release_list", "release_series", "tables", "token_row"]

LOCK_RETRIES = 40  # x 50 ms: a writer (gate check, gate decide, the service worker) holds the file briefly


@contextmanager
def read_only(path: str) -> Iterator[Any | None]:
    """A read-only connection, or None when there is no record yet; retries while a writer holds the file lock."""
    with open_read_only(path, retries=LOCK_RETRIES) as con:
        yield con
