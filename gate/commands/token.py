"""`gate token`: create, revoke and list the service's bearer tokens.

Locally (the DuckDB file) while no service runs; with `--url` (or GATE_URL) through a running service and an admin
token in GATE_TOKEN, because a running service holds the file and no other process may open it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from gate.errors import GateError
from gate.store.db import DatabaseLocked, db_path


def _service_url(argv: list[str] | None) -> str:
    """The address a `gate serve` command line listens on, for the hint; a placeholder when it cannot be told."""
    if not argv:
        return "URL"
    opts = {"--host": "127.0.0.1", "--port": "8080"}
    for i, a in enumerate(argv):
        for key in opts:
            if a == key and i + 1 < len(argv):
                opts[key] = argv[i + 1]
            elif a.startswith(key + "="):
                opts[key] = a.split("=", 1)[1]
    host = opts["--host"] if opts["--host"] not in ("0.0.0.0", "::") else "127.0.0.1"
    return f"http://{host}:{opts['--port']}"


@contextmanager
def _local(action: str) -> Iterator[None]:
    """Says in one line how to manage tokens when a running service holds the database."""
    try:
        yield
    except DatabaseLocked as exc:
        if exc.service_pid is None:
            raise
        raise GateError(f"a running `gate serve` (PID {exc.service_pid}) holds the gate database: {action} through "
                        f"it with `gate token ... --url {_service_url(exc.holder_argv)}` and an admin token in "
                        "GATE_TOKEN (or stop the service)", file=exc.file) from None


def _remote(url: str, call: Callable[[Any], Any]) -> Any:
    from gate.service.remote import ServiceClient

    token = os.environ.get("GATE_TOKEN")
    if not token:
        raise GateError(f"GATE_TOKEN: an admin token is needed to manage tokens through {url}")
    return call(ServiceClient(url, token))


def token_create(*, name: str, role: str, db: str | None, url: str | None = None) -> int:
    from gate.service.auth import create_token

    if url:
        token = _remote(url, lambda c: c.create_token(name, role))
    else:
        with _local("create tokens"):
            token = create_token(db_path(db), name, role)
    print(token)
    print(f"token {name!r} ({role}) created{f' on {url}' if url else ''}; it is shown only this once",
          file=sys.stderr)
    return 0


def token_revoke(*, name: str, db: str | None, url: str | None = None) -> int:
    from gate.store.service import revoke_token

    if url:
        _remote(url, lambda c: c.revoke_token(name))
    else:
        with _local("revoke tokens"):
            if not revoke_token(db_path(db), name):
                raise GateError(f"no token named {name!r}")
    print(f"token {name!r} revoked")
    return 0


def token_list(*, db: str | None, url: str | None = None) -> int:
    from gate.store.service import list_tokens

    if url:
        rows = _remote(url, lambda c: c.list_tokens())
    else:
        with _local("list tokens"):
            rows = list_tokens(db_path(db), read_only=True)
    if not rows:
        print("no tokens")
    for t in rows:
        state = f"revoked {t['revoked_at']}" if t["revoked_at"] else "active"
        print(f"{t['name']}\t{t['role']}\tcreated {t['created_at']}\t{state}")
    return 0
