"""The dashboard's HTTP face: `router` is mounted by the gate service and by `gate dashboard`.

Why only wiring here: pages are rendered by gate/dashboard/pages.py (shared with the static report) and cached by
gate/dashboard/cache.py; this module maps URLs to them, finds the database, and serves plotly.js from the copy
bundled in the plotly Python package (a dashboard behind a firewall must not depend on a CDN).
The database is `app.state.gate_db`, else `app.state.config.db` (the service's configuration), else GATE_DB or
./gate.duckdb.
"""

from __future__ import annotations

import html
import os
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, HTMLResponse, Response
from starlette.concurrency import run_in_threadpool

from gate.dashboard import pages
from gate.dashboard.cache import Page, PageCache
from gate.dashboard.charts import plotly_js_path
from gate.errors import GateError

router = APIRouter()
CACHE = PageCache(int(os.environ.get("GATE_DASHBOARD_CACHE_PAGES", "128")))


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


def _respond(request: Request, page: Page) -> Response:
    """The stored bytes: gzip when the client takes it, 304 when it already holds this version."""
    headers = {"ETag": page.etag, "Vary": "Accept-Encoding", "Cache-Control": "no-cache"}
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
    full = (base, *key)
    page = CACHE.peek(db, full)
    if page is None:
        try:
            page = await run_in_threadpool(
                CACHE.get, db, full, lambda: render(db, base=base, plotly_src=f"{base}/static/plotly.min.js"))
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


@router.get("/diff", name="dashboard_diff", response_class=HTMLResponse)
async def diff(request: Request, a: str, b: str) -> Response:
    return await _page(request, ("diff", a, b), lambda db, **ctx: pages.diff(db, a, b, **ctx))


@router.get("/checks", name="dashboard_checks", response_class=HTMLResponse)
async def checks(request: Request) -> Response:
    return await _page(request, ("checks",), lambda db, **ctx: pages.checks(db, **ctx))


@router.get("/checks/{run_id}", name="dashboard_check_run", response_class=HTMLResponse)
async def check_run(request: Request, run_id: str, check: str | None = None) -> Response:
    return await _page(request, ("check_run", run_id, check or None),
                       lambda db, **ctx: pages.check_run(db, run_id, check=check or None, **ctx))


@router.get("/static/plotly.min.js", name="dashboard_plotly_js")
def plotly_js() -> Response:
    return FileResponse(plotly_js_path(), media_type="application/javascript",
                        headers={"Cache-Control": "public, max-age=86400"})
