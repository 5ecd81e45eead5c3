"""Bearer tokens with roles; only a salted digest of each token is stored.

Why sha256 and not scrypt: the tokens are 256-bit random strings, not passwords, so a slow hash adds nothing
against guessing but would cost every request tens of milliseconds. The token carries a public id so a request
costs one lookup, and the digest comparison is constant-time.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from gate.errors import GateError


class Role(StrEnum):
    ci = "ci"
    evaluator = "evaluator"
    release_manager = "release-manager"
    viewer = "viewer"
    admin = "admin"


class Perm(StrEnum):
    read = "read"
    submit_check = "submit_check"
    submit_score = "submit_score"
    release = "release"
    manage_tokens = "manage_tokens"


#: Every role reads; each writes only its own kind of thing (admin: the tokens, so they can be managed over HTTP
#: while the service holds the database file).
GRANTS: dict[Role, frozenset[Perm]] = {
    Role.ci: frozenset({Perm.read, Perm.submit_check}),
    Role.evaluator: frozenset({Perm.read, Perm.submit_score}),
    Role.release_manager: frozenset({Perm.read, Perm.release}),
    Role.viewer: frozenset({Perm.read}),
    Role.admin: frozenset({Perm.read, Perm.manage_tokens}),
}

PREFIX = "gate_"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")
_TOKEN = re.compile(r"^gate_([0-9a-f]{16})_([A-Za-z0-9_\-]{43})$")


@dataclass(frozen=True)
class Principal:
    name: str
    role: Role

    def can(self, perm: Perm) -> bool:
        return perm in GRANTS[self.role]


def _digest(salt: str, secret: str) -> str:
    return hashlib.sha256(bytes.fromhex(salt) + secret.encode()).hexdigest()


def create_token(db: str | None, name: str, role: str) -> str:
    """Stores a new token's digest and returns the token itself: the only time it is ever shown."""
    from gate.store.service import insert_token

    if not _NAME.match(name):
        raise GateError(f"token name {name!r}: use 1-64 letters, digits, '.', '_' or '-'")
    try:
        role_ = Role(role)
    except ValueError:
        raise GateError(f"unknown role {role!r} (roles: {', '.join(r.value for r in Role)})") from None
    token_id, secret, salt = secrets.token_hex(8), secrets.token_urlsafe(32), secrets.token_hex(16)
    insert_token(db, name=name, token_id=token_id, role=role_.value, salt=salt, digest=_digest(salt, secret))
    return f"{PREFIX}{token_id}_{secret}"


def parse_token(token: str) -> tuple[str, str] | None:
    """(public id, secret) of a well-formed token; None for anything else."""
    m = _TOKEN.match(token)
    return (m.group(1), m.group(2)) if m else None


def principal_of(row: dict[str, Any] | None, secret: str | None) -> Principal | None:
    """The principal a stored token row stands for, or None when it is missing or revoked, or (when a secret is
    given) the secret does not match its digest. `secret=None` is for a signed dashboard session, which proved
    the secret at login and must still lose its access the moment the token is revoked."""
    if row is None or row["revoked"]:
        return None
    if secret is not None and not hmac.compare_digest(row["digest"], _digest(row["salt"], secret)):
        return None
    try:
        return Principal(row["name"], Role(row["role"]))
    except ValueError:  # a role this version does not know grants nothing
        return None


def verify_token(db: str | None, token: str,
                 find: Callable[[str], dict[str, Any] | None] | None = None) -> Principal | None:
    """The principal a token stands for, or None when it is malformed, unknown, wrong or revoked.

    `find` looks a token row up by its public id (default: the service's read-write store); the standalone
    dashboard passes a read-only lookup so that viewing never takes the file's write lock."""
    parsed = parse_token(token)
    if parsed is None:
        return None
    if find is None:
        from gate.store.service import find_token

        return principal_of(find_token(db, parsed[0]), parsed[1])
    return principal_of(find(parsed[0]), parsed[1])
