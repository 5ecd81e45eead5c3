"""A FastAPI app with only the dashboard router, for `gate dashboard` (local viewing), the browser test and the
load benchmark. The shared gate service mounts the same router next to its API."""

from __future__ import annotations

from typing import Any


def create_dashboard_app(db: str, *, auth: bool = True) -> Any:
    """`auth=False` (`gate dashboard --no-auth`) serves without tokens, and then only to requests addressed to a
    loopback name; the caller is responsible for binding to a loopback address."""
    from fastapi import FastAPI

    from gate.dashboard.routes import router

    app = FastAPI(title="gate dashboard", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.gate_db = db
    app.state.dashboard_auth = auth
    app.include_router(router)
    return app


def app_from_env() -> Any:
    """uvicorn factory (`--factory gate.dashboard.app:app_from_env`): the database from GATE_DB; tokens required."""
    from gate.store.db import db_path

    return create_dashboard_app(db_path(None))
