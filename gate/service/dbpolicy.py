"""Inside the service process every DuckDB connection is read-write, including those the core opens read-only.

Why: the service is the one process that opens the record, and its worker thread runs the CLI's own functions,
some of which read through `read_only=True` connections (the release record, metrics, the dashboard's queries).
DuckDB shares one database instance between the read-write connections of a process but refuses a read-only
connection beside an open read-write one ("different configuration"), so a page view or a token check would make
a running job fail at random. For as long as the app runs, `duckdb.connect` opens read-only requests read-write;
those callers only read, and the file is never opened by a second process, so nothing else changes. It is
restored when the app stops, so the CLI and the tests of other modules keep DuckDB's own behaviour.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_lock = threading.Lock()
_depth = 0
_original: Any = None


@contextmanager
def read_write_only() -> Iterator[None]:
    global _depth, _original
    import duckdb

    with _lock:
        if _depth == 0:
            _original = duckdb.connect

            def connect(database: Any = ":memory:", read_only: bool = False, *args: Any, **kw: Any) -> Any:
                return _original(database, False, *args, **kw)

            connect.__doc__ = _original.__doc__
            duckdb.connect = connect
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                duckdb.connect = _original
