"""The dashboard's HTTP face: `router` is mounted by the gate service and by `gate dashboard`.

Why only wiring here: pages are rendered by gate/dashboard/pages.py (shared with the static report) and cached by
gate/dashboard/cache.py; this module maps URLs to them, finds the database, and serves plotly.js from the copy
bundled in the plotly Python package (a dashboard behind a firewall must not depend on a CDN).
The database is `app.state.gate_db`, else `app.state.config.db` (the service's configuration), else GATE_DB or
./gate.duckdb.

Every route of `router` is guarded by its route class (GuardedRoute) unless named in auth.PUBLIC_ROUTES (the login
form, logging in and out): a route added later is guarded without anyone remembering to, and the guard runs before
any parameter is read. What the guard accepts is in gate/dashboard/auth.py.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from fastapi.routing import APIRoute
from starlette.concurrency import run_in_threadpool

from gate import settings
from gate.dashboard import auth, pages
from gate.dashboard.cache import Page, PageCache
from gate.dashboard.charts import plotly_js_path
from gate.errors import GateError
from gate.service.auth import Perm, parse_token, principal_of

CACHE = PageCache(settings.count("GATE_DASHBOARD_CACHE_PAGES", 128))


def database(request: Request) -> str:
    from gate.store.db import db_path

    state = request.app.state
    db = getattr(state, "gate_db", None)
    if db is None and getattr(state, "config", None) is not None:
        db = getattr(state.config, "db", None)
    return str(db_path(db))


def _base(request: Request) -> str:
    root = request.scope.get("root_path", "") or ""
    return (root + request.app.url_path_for("dashboard_home")).rstrip("/")


def _cookie_path(base: str) -> str:
    return base or "/"


def _refuse(request: Request, base: str, status: int, message: str) -> Response:
    """A browser gets the login form (with the page it asked for as where to go next); a client gets JSON."""
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else {}
    if auth.wants_html(request):
        here = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        resp: Response = HTMLResponse(auth.login_page(base, next_path=auth.safe_next(here, base), message=message),
                                      status_code=status, headers=headers)
    else:
        resp = JSONResponse({"detail": message or "a bearer token or a dashboard session is required"},
                            status_code=status, headers=headers)
    if status == 401 and auth.SESSION_COOKIE in request.cookies:
        resp.delete_cookie(auth.SESSION_COOKIE, path=_cookie_path(base), httponly=True, samesite="strict")
    return resp


async def _guard(request: Request) -> Response | None:
    """None when the request may see the dashboard; else the refusal (401 without or with a bad credential,
    403 for a role that may not read). A known token's row is read from the cache when it can be."""
    if not auth.auth_enabled(request):
        if auth.loopback_host(request):
            return None
        return PlainTextResponse("this dashboard runs without authentication and answers only to localhost",
                                 status_code=403)
    base = _base(request)
    offered = auth.credentials(request)
    if offered is None:
        return _refuse(request, base, 401, "")
    row = None
    if offered[0] != "bad":
        db = database(request)
        hit, row = auth.cached_row(db, offered[1])
        if not hit:
            try:
                row = await run_in_threadpool(auth.token_row, db, offered[1])
            except GateError as exc:
                return PlainTextResponse(str(exc), status_code=503)
    who = auth.resolve(offered, row)
    if who is None:
        by_cookie = "authorization" not in request.headers
        return _refuse(request, base, 401, "your session ended (expired, revoked or the server restarted): log in "
                       "again" if by_cookie else "unknown, wrong or revoked token")
    if not who.can(Perm.read):
        return _refuse(request, base, 403, f"role {who.role.value!r} may not read")
    request.state.principal = who
    return None


class GuardedRoute(APIRoute):
    """A dashboard route that answers only after `_guard` let the request through (unless it is public)."""

    def get_route_handler(self) -> Callable[[Request], Any]:
        handler = super().get_route_handler()
        if self.name in auth.PUBLIC_ROUTES:
            return handler

        async def guarded(request: Request) -> Response:
            denied = await _guard(request)
            return denied if denied is not None else await handler(request)

        return guarded


router = APIRouter(route_class=GuardedRoute)


def _respond(request: Request, page: Page) -> Response:
    """The stored bytes: gzip when the client takes it, 304 when it already holds this version."""
    headers = {"ETag": page.etag, "Vary": "Accept-Encoding", "Cache-Control": "private, no-cache"}  # behind a login
    if request.headers.get("if-none-match") == page.etag:
        return Response(status_code=304, headers=headers)
    if "gzip" in request.headers.get("accept-encoding", ""):
        return Response(page.gz, media_type="text/html; charset=utf-8",
                        headers={**headers, "Content-Encoding": "gzip"})
    return Response(page.body, media_type="text/html; charset=utf-8", headers=headers)


async def _page(request: Request, key: tuple[Any, ...], render: Callable[..., str]) -> Response:
    """A fresh cached page is answered on the event loop; rendering (DuckDB, jinja2) runs in the thread pool."""
    db = database(request)
    base = _base(request)
    logout = auth.auth_enabled(request)
    full = (base, logout, *key)
    page = CACHE.peek(db, full)
    if page is None:
        try:
            page = await run_in_threadpool(
                CACHE.get, db, full,
                lambda: render(db, base=base, plotly_src=f"{base}/static/plotly.min.js", logout=logout))
        except GateError as exc:
            missing = str(exc.message).startswith("no ")  # an unknown id: the viewer's mistake, not the server's
            status = 404 if missing else 500
            line = exc.message if missing else str(exc)
            body = (f"<!doctype html><title>gate: error</title><p>{html.escape(line)}</p>"
                    f"<p><a href=\"{html.escape(base)}/\">back to the releases</a></p>")
            return HTMLResponse(body, status_code=status)
    return _respond(request, page)


@router.get("/", name="dashboard_home", response_class=HTMLResponse)
async def home(request: Request, scorecard: str | None = None, verdict: str | None = None) -> Response:
    return await _page(request, ("home", scorecard or None, verdict or None),
                       lambda db, **ctx: pages.home(db, scorecard=scorecard or None, verdict=verdict or None, **ctx))


@router.get("/releases/{release_id}", name="dashboard_release", response_class=HTMLResponse)
async def release(request: Request, release_id: str) -> Response:
    return await _page(request, ("release", release_id), lambda db, **ctx: pages.release(db, release_id, **ctx))


@router.get("/releases/{release_id}/items", name="dashboard_release_items", response_class=HTMLResponse)
async def release_items(request: Request, release_id: str) -> Response:
    return await _page(request, ("items", release_id), lambda db, **ctx: pages.items(db, release_id, **ctx))


@router.get("/diff", name="dashboard_diff", response_class=HTMLResponse)
async def diff(request: Request, a: str, b: str) -> Response:
    return await _page(request, ("diff", a, b), lambda db, **ctx: pages.diff(db, a, b, **ctx))


@router.get("/checks", name="dashboard_checks", response_class=HTMLResponse)
async def checks(request: Request) -> Response:
    return await _page(request, ("checks",), lambda db, **ctx: pages.checks(db, **ctx))


@router.get("/corrections", name="dashboard_corrections", response_class=HTMLResponse)
async def corrections(request: Request) -> Response:
    return await _page(request, ("corrections",), lambda db, **ctx: pages.corrections(db, **ctx))


@router.get("/review", name="dashboard_reviews", response_class=HTMLResponse)
async def reviews(request: Request) -> Response:
    return await _page(request, ("reviews",), lambda db, **ctx: pages.reviews(db, **ctx))


@router.get("/review/{review_id}", name="dashboard_review", response_class=HTMLResponse)
async def review(request: Request, review_id: str) -> Response:
    return await _page(request, ("review", review_id), lambda db, **ctx: pages.review(db, review_id, **ctx))


@router.get("/checks/{run_id}", name="dashboard_check_run", response_class=HTMLResponse)
async def check_run(request: Request, run_id: str, check: str | None = None, rule: str | None = None,
                    split: str | None = None, severity: str | None = None, offset: int = 0) -> Response:
    """Filters (check, rule, split, severity) and paging (offset) are query parameters, answered by the store."""
    f = {"check": check or None, "rule": rule or None, "split": split or None, "severity": severity or None}
    offset = max(0, offset)
    return await _page(request, ("check_run", run_id, *f.values(), offset),
                       lambda db, **ctx: pages.check_run(db, run_id, **f, offset=offset, **ctx))


@router.get("/checks/{run_id}/report.html", name="dashboard_check_report", response_class=HTMLResponse)
async def check_report(request: Request, run_id: str) -> Response:
    """The static check-run page (what `gate report-html --check-run` writes), served with this server's plotly."""
    return await _page(request, ("check_report", run_id), lambda db, **ctx: pages.check_report(db, run_id, **ctx))


@router.get("/static/plotly.min.js", name="dashboard_plotly_js")
def plotly_js() -> Response:
    return FileResponse(plotly_js_path(), media_type="application/javascript",
                        headers={"Cache-Control": "private, max-age=86400"})


@router.get("/login", name="dashboard_login_form", response_class=HTMLResponse)
async def login_form(request: Request, next: str | None = None) -> Response:
    base = _base(request)
    if not auth.auth_enabled(request):
        return RedirectResponse(f"{base}/", status_code=303)
    return HTMLResponse(auth.login_page(base, next_path=auth.safe_next(next, base)),
                        headers={"Cache-Control": "no-store"})


@router.post("/login", name="dashboard_login")
async def login(request: Request) -> Response:
    """Trades a token (a form field, never a URL) for a session cookie, then goes where the user was headed."""
    base = _base(request)
    if not auth.auth_enabled(request):
        return RedirectResponse(f"{base}/", status_code=303)
    if not auth.same_origin(request):
        return PlainTextResponse("a login from another site's page is refused", status_code=403)
    form = await auth.read_form(request)
    if form is None:
        return PlainTextResponse("login form too large", status_code=413)
    nxt = auth.safe_next(form.get("next"), base)
    parsed = parse_token(form.get("token", "").strip())
    try:
        row = await run_in_threadpool(auth.token_row, database(request), parsed[0]) if parsed else None
    except GateError as exc:
        return PlainTextResponse(str(exc), status_code=503)
    who = principal_of(row, parsed[1]) if parsed else None
    if who is None:
        return HTMLResponse(auth.login_page(base, next_path=nxt, message="unknown, wrong or revoked token"),
                            status_code=401, headers={"Cache-Control": "no-store"})
    if not who.can(Perm.read):
        return HTMLResponse(auth.login_page(base, next_path=nxt, message=f"role {who.role.value!r} may not read"),
                            status_code=403)
    assert parsed is not None
    resp = RedirectResponse(nxt, status_code=303, headers={"Cache-Control": "no-store"})
    resp.set_cookie(auth.SESSION_COOKIE, auth.issue_session(request.app, parsed[0]), max_age=auth.SESSION_SECONDS,
                    path=_cookie_path(base), httponly=True, samesite="strict", secure=request.url.scheme == "https")
    return resp


@router.post("/logout", name="dashboard_logout")
async def logout(request: Request) -> Response:
    base = _base(request)
    if not auth.same_origin(request):
        return PlainTextResponse("a logout from another site's page is refused", status_code=403)
    resp = RedirectResponse(f"{base}/login", status_code=303)
    resp.delete_cookie(auth.SESSION_COOKIE, path=_cookie_path(base), httponly=True, samesite="strict")
    return resp
