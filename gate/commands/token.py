"""`gate token`: create, revoke and list the service's bearer tokens (CLI only, never over HTTP)."""

from __future__ import annotations

from gate.store.db import db_path


def token_create(*, name: str, role: str, db: str | None) -> int:
    from gate.service.auth import create_token

    token = create_token(db_path(db), name, role)
    print(token)
    import sys

    print(f"token {name!r} ({role}) created; it is shown only this once", file=sys.stderr)
    return 0


def token_revoke(*, name: str, db: str | None) -> int:
    from gate.errors import GateError
    from gate.store.service import revoke_token

    if not revoke_token(db_path(db), name):
        raise GateError(f"no token named {name!r}")
    print(f"token {name!r} revoked")
    return 0


def token_list(*, db: str | None) -> int:
    from gate.store.service import list_tokens

    rows = list_tokens(db_path(db), read_only=True)
    if not rows:
        print("no tokens")
    for t in rows:
        state = f"revoked {t['revoked_at']}" if t["revoked_at"] else "active"
        print(f"{t['name']}\t{t['role']}\tcreated {t['created_at']}\t{state}")
    return 0
