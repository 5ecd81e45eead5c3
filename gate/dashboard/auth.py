"""Who may see the dashboard: the same bearer tokens as the API, or a browser session made from one at /login.

Why a signed session cookie and not the token itself: a session proves the token once and then names only its
public id, so the browser never stores the secret that also opens the API, and a stolen cookie dies after
SESSION_SECONDS. The session is re-checked against the token's row on every request, so revoking the token
(`gate token revoke`) ends the session at once. The signing key lives in the server process: a restart logs
everyone out, which is the safe side. The cookie is HttpOnly (no script reads it) and SameSite=Strict (no other
site's page can make the browser send it); the token is never written into a page, a URL or a log line.

Why the token lookups are cached by the database's signature (gate/dashboard/cache.py): a cached page costs
microseconds, a DuckDB open a millisecond (service) to a hundred (standalone). Any committed write (a revoke
included) changes the signature, so a cached answer never outlives the row it came from.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import html
import ipaddress
import secrets
import threading
import time
from collections import OrderedDict
from typing import Any
from urllib.parse import parse_qs

from gate.dashboard.cache import db_signature
from gate.service.auth import Principal, parse_token, principal_of

SESSION_COOKIE = "gate_session"
SESSION_SECONDS = 8 * 3600
MAX_FORM_BYTES = 8192
#: routes of the dashboard router anyone may reach: the login form, logging in and out (they show no record)
PUBLIC_ROUTES = frozenset({"dashboard_login_form", "dashboard_login", "dashboard_logout"})
LOOPBACK_NAMES = frozenset({"localhost"})

_ROWS: OrderedDict[tuple[Any, ...], dict[str, Any] | None] = OrderedDict()
_ROWS_MAX = 1024
_guard = threading.Lock()


def token_row(db: str, token_id: str) -> dict[str, Any] | None:
    """A token's stored row through a read-only connection (never the write lock), cached until the file changes."""
    from gate.dashboard import queries

    key = (db_signature(db), token_id)
    with _guard:
        if key in _ROWS:
            _ROWS.move_to_end(key)
            return _ROWS[key]
    from gate.store.views import token_row as stored_token

    with queries.read_only(db) as con:
        row = stored_token(con, token_id)
    with _guard:
        _ROWS[key] = row
        while len(_ROWS) > _ROWS_MAX:
            _ROWS.popitem(last=False)
    return row


def cached_row(db: str, token_id: str) -> tuple[bool, dict[str, Any] | None]:
    """(found in the cache, row) without touching the database: lets a cached page be answered on the event loop."""
    key = (db_signature(db), token_id)
    with _guard:
        if key in _ROWS:
            return True, _ROWS[key]
    return False, None


def _session_key(app: Any) -> bytes:
    with _guard:
        key = getattr(app.state, "dashboard_session_key", None)
        if key is None:
            key = secrets.token_bytes(32)
            app.state.dashboard_session_key = key
        return key


def _mac(key: bytes, payload: str) -> str:
    return base64.urlsafe_b64encode(hmac.new(key, payload.encode(), hashlib.sha256).digest()).decode().rstrip("=")


def issue_session(app: Any, token_id: str, now: float | None = None) -> str:
    """`<token id>.<expiry>.<mac>`: names the token, never holds its secret."""
    payload = f"{token_id}.{int((now or time.time()) + SESSION_SECONDS)}"
    return f"{payload}.{_mac(_session_key(app), payload)}"


def session_token_id(app: Any, value: str, now: float | None = None) -> str | None:
    """The token id a session cookie names, when this server signed it and it has not expired."""
    parts = value.split(".")
    if len(parts) != 3 or not parts[1].isdigit():
        return None
    payload = f"{parts[0]}.{parts[1]}"
    if not hmac.compare_digest(parts[2], _mac(_session_key(app), payload)):
        return None
    if int(parts[1]) < (now or time.time()):
        return None
    return parts[0]


def credentials(request: Any) -> tuple[str, str, str | None] | None:
    """What the request offers: ("bearer", token id, secret) or ("session", token id, None); ("bad", "", None)
    for something offered that cannot be right; None for nothing at all."""
    header = request.headers.get("authorization")
    if header is not None:
        scheme, _, value = header.partition(" ")
        parsed = parse_token(value.strip()) if scheme.lower() == "bearer" else None
        return ("bearer", parsed[0], parsed[1]) if parsed else ("bad", "", None)
    cookie = request.cookies.get(SESSION_COOKIE)
    if cookie is not None:
        tid = session_token_id(request.app, cookie)
        return ("session", tid, None) if tid else ("bad", "", None)
    return None


def resolve(offered: tuple[str, str, str | None], row: dict[str, Any] | None) -> Principal | None:
    kind, _, secret = offered
    if kind == "bad":
        return None
    return principal_of(row, secret if kind == "bearer" else None)


def auth_enabled(request: Any) -> bool:
    """Off only on an app built with `create_dashboard_app(..., auth=False)` (`gate dashboard --no-auth`)."""
    return bool(getattr(request.app.state, "dashboard_auth", True))


def loopback_host(request: Any) -> bool:
    """The Host header names this machine: without a token, a page for a rebound DNS name must not be served."""
    host = request.headers.get("host", "")
    name = host.rsplit(":", 1)[0] if not host.startswith("[") else host[1:].split("]", 1)[0]
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def same_origin(request: Any) -> bool:
    """A form post from a page of this server (or from a client that sends no Origin, like curl)."""
    origin = request.headers.get("origin")
    if origin is None:
        return True
    return origin == f"{request.url.scheme}://{request.headers.get('host', '')}"


async def read_form(request: Any) -> dict[str, str] | None:
    """The url-encoded form of a small POST (no multipart dependency for a token and a path); None when too big."""
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            return None
    return {k: v[0] for k, v in parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True).items()}


def safe_next(value: str | None, base: str) -> str:
    """Where to go after logging in: only a path of this dashboard (never another site, never `//host`)."""
    home = f"{base}/"
    if not value or not value.startswith(home) or value.startswith("//") or "\\" in value:
        return home
    if any(ord(c) < 0x20 for c in value):
        return home
    return value


def login_page(base: str, *, next_path: str, message: str = "") -> str:
    """The login form. It carries no token and no data from the record, and loads no script."""
    esc = html.escape
    note = f'<p class="msg" role="alert">{esc(message)}</p>' if message else ""
    return (f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Log in · gate</title>"
            "<style>body{font:14px/1.45 system-ui,sans-serif;margin:40px auto;max-width:480px;color:#1f2328}"
            "input[type=password]{width:100%;padding:6px;margin:6px 0 12px}.msg{color:#cf222e}</style></head><body>"
            "<h1>gate dashboard</h1>"
            f"{note}<form id=\"login\" method=\"post\" action=\"{esc(base)}/login\">"
            "<label for=\"token\">API token (<code>gate token create --role viewer --name you</code>)</label>"
            "<input id=\"token\" name=\"token\" type=\"password\" autocomplete=\"off\" required autofocus>"
            f"<input type=\"hidden\" name=\"next\" value=\"{esc(next_path)}\">"
            "<button type=\"submit\">Log in</button></form></body></html>")


def wants_html(request: Any) -> bool:
    return "text/html" in request.headers.get("accept", "")

