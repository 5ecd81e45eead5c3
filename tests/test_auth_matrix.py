"""Every route of the service and of the standalone dashboard, enumerated from `app.routes`, under every credential.

Why enumerate instead of listing: a route added tomorrow is in `app.routes` and so in this test, with no one having
to remember it. Each route must give 401 with no token, a malformed, wrong or revoked token (the service's
convention: a revoked token is unknown, not forbidden), 403 for a role without its permission, and neither for a
role with it. Dashboard routes also take the browser session from /login: a live session passes, one whose token
was revoked or whose signature is not the server's gives 401, and a session never opens the API (the API takes
bearer tokens only, so a page of another site cannot make a browser act through it).

Only the routes in PUBLIC answer without a token, and that list is asserted small. What each writing route needs
is in WRITES; every other route needs `read`. A new route that needs more than `read` fails here until listed.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient

from gate.service.auth import GRANTS, Perm, Role, create_token
from tests.tamper import tampered

PUBLIC = {("GET", "/health"), ("GET", "/openapi.json"), ("GET", "/docs"), ("GET", "/docs/oauth2-redirect"),
          ("GET", "/redoc"), ("GET", "/dashboard/login"), ("POST", "/dashboard/login"), ("POST", "/dashboard/logout"),
          ("GET", "/login"), ("POST", "/login"), ("POST", "/logout")}
MAX_PUBLIC = 8  # per app: health, the API's docs (4), the dashboard's login form, log in, log out
WRITES = {
    ("POST", "/checks"): Perm.submit_check,
    ("POST", "/checks/upload"): Perm.submit_check,
    ("POST", "/reviews"): Perm.submit_check,  # the queue and corrections are data work, as a check is
    ("POST", "/corrections"): Perm.submit_check,
    ("POST", "/scores"): Perm.submit_score,
    ("POST", "/releases/{release_id}/promote"): Perm.release,
    ("POST", "/releases/rollback"): Perm.release,
    ("GET", "/tokens"): getattr(Perm, "manage_tokens", None),
    ("POST", "/tokens"): getattr(Perm, "manage_tokens", None),
    ("DELETE", "/tokens/{name}"): getattr(Perm, "manage_tokens", None),
}


def routes(app: Any) -> list[tuple[str, str]]:
    """(method, path template) of every route, routers included by the app expanded (FastAPI keeps them nested)."""
    from gate.demo.leakscan import all_routes

    out: list[tuple[str, str]] = []
    for r in all_routes(app):
        methods, path = getattr(r, "methods", None), getattr(r, "path", None)
        assert methods and path, f"a route of a kind this test does not know: {r!r}; teach routes() about it"
        out.extend((m, path) for m in sorted(methods - {"HEAD"}))
    return sorted(set(out))


def _url(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "none", path)


@pytest.fixture(scope="module")
def apps(tmp_path_factory):
    from gate.dashboard.app import create_dashboard_app
    from gate.service.app import create_app
    from gate.service.config import ServiceConfig
    from gate.store.service import revoke_token
    from tests.dashboard_seed import seed_small

    base = tmp_path_factory.mktemp("authmatrix")
    (base / "root").mkdir()
    db = str(base / "g.duckdb")
    seed_small(db, releases=2)
    roles = list(Role)
    tokens = {r: create_token(db, f"t-{r.value}", r.value) for r in roles}
    revoked = {r: create_token(db, f"gone-{r.value}", r.value) for r in roles}
    for r in roles:
        assert revoke_token(db, f"gone-{r.value}")
    cfg = ServiceConfig(roots=[base / "root"], db=db, state_dir=base / "state", run_jobs=False)
    with TestClient(create_app(cfg)) as service:
        dash = TestClient(create_dashboard_app(db), base_url="http://127.0.0.1:8050")
        yield {"service": service, "dashboard": dash, "tokens": tokens, "revoked": revoked}


def _needs(method: str, path: str) -> Perm | None:
    return WRITES[(method, path)] if (method, path) in WRITES else Perm.read


def _session(client: TestClient, prefix: str, token: str) -> str:
    """A real session: the login form posted with the token, the cookie taken from the answer."""
    res = client.post(f"{prefix}/login", data={"token": token}, follow_redirects=False)
    assert res.status_code == 303, res.text
    cookie = res.headers["set-cookie"]
    client.cookies.clear()  # each request below says exactly what it offers
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and token not in cookie
    return cookie.split(";", 1)[0].split("=", 1)[1]


def _check_app(client: TestClient, tokens: dict[Role, str], revoked: dict[Role, str], prefix: str) -> dict[str, int]:
    from gate.dashboard import auth as dash_auth

    counts = {"routes": 0, "public": 0, "401": 0, "403": 0, "allowed": 0}
    listed = routes(client.app)
    public = [(m, p) for m, p in listed if (m, p) in PUBLIC]
    assert len(public) <= MAX_PUBLIC, f"too many public routes: {public}"
    session = _session(client, prefix, tokens[Role.viewer])
    tid_revoked = revoked[Role.viewer].split("_")[1]
    revoked_session = dash_auth.issue_session(client.app, tid_revoked)
    for method, path in listed:
        url = _url(path)
        counts["routes"] += 1
        if (method, path) in PUBLIC:
            # answered by the route itself: the page or form, a login that works with a token, a logout
            form = {"data": {"token": tokens[Role.viewer]}} if path.endswith("/login") and method == "POST" else {}
            res = client.request(method, url, follow_redirects=False, **form)
            assert res.status_code == (200 if method == "GET" else 303), (method, path, res.status_code)
            client.cookies.clear()
            counts["public"] += 1
            continue
        need = _needs(method, path)
        assert need is not None, f"{method} {path}: needs a permission this version does not define"
        is_page = _is_dashboard(path, prefix)
        for bad in (None, "not-a-token", "Basic dXNlcjpwYXNz", tampered(tokens[Role.ci]),
                    "gate_0123456789abcdef_" + "A" * 43, *revoked.values()):
            headers = {} if bad is None else {"Authorization": bad if bad.startswith("Basic") else f"Bearer {bad}"}
            res = client.request(method, url, headers=headers)
            assert res.status_code == 401, (method, path, str(bad)[:10], res.status_code, res.text[:200])
            assert res.headers.get("www-authenticate") == "Bearer", (method, path)
            counts["401"] += 1
        for role, token in tokens.items():
            res = client.request(method, url, headers={"Authorization": f"Bearer {token}"})
            if need in GRANTS[role]:
                assert res.status_code not in (401, 403), (method, path, role, res.status_code, res.text[:300])
                counts["allowed"] += 1
            else:
                assert res.status_code == 403, (method, path, role, res.status_code, res.text[:300])
                assert role.value in res.json()["detail"]
                counts["403"] += 1
        cookie = {"Cookie": f"{dash_auth.SESSION_COOKIE}={session}"}
        res = client.request(method, url, headers=cookie)
        if is_page:
            assert res.status_code not in (401, 403), (method, path, "session", res.status_code)
            for bad_cookie in (revoked_session, tampered(session), "x.1.y"):
                res = client.request(method, url, headers={"Cookie": f"{dash_auth.SESSION_COOKIE}={bad_cookie}"})
                assert res.status_code == 401, (method, path, "bad session", res.status_code)
                counts["401"] += 1
        else:
            assert res.status_code == 401, (method, path, "a dashboard session must not open the API")
    return counts


def _is_dashboard(path: str, prefix: str) -> bool:
    return not prefix or path.startswith(prefix + "/")


def test_every_service_route_refuses_what_it_must(apps):
    counts = _check_app(apps["service"], apps["tokens"], apps["revoked"], "/dashboard")
    # the enumeration found the API and the mounted dashboard, and every kind of refusal was exercised
    listed = routes(apps["service"].app)
    assert ("GET", "/dashboard/") in listed and ("GET", "/dashboard/static/plotly.min.js") in listed
    assert ("POST", "/checks") in listed and ("GET", "/releases") in listed
    assert counts["routes"] >= 20 and counts["403"] >= 10 and counts["allowed"] >= counts["routes"]
    missing = [k for k, v in WRITES.items() if v is not None and k not in listed]
    assert not missing, f"WRITES lists routes the service no longer has: {missing}"


def test_every_standalone_dashboard_route_refuses_what_it_must(apps):
    counts = _check_app(apps["dashboard"], apps["tokens"], apps["revoked"], "")
    listed = routes(apps["dashboard"].app)
    assert ("GET", "/") in listed and ("GET", "/static/plotly.min.js") in listed
    assert counts["public"] == 3 and counts["routes"] >= 9


def test_public_routes_show_nothing_of_the_record(apps):
    """The login form and the API's docs carry no record data and no token."""
    import json

    service = apps["service"]
    releases = json.dumps(service.get("/releases", headers={
        "Authorization": f"Bearer {apps['tokens'][Role.viewer]}"}).json())
    ids = re.findall(r'"release_id": "([^"]+)"', releases)
    assert ids
    for method, path in routes(service.app):
        if (method, path) in PUBLIC and method == "GET":
            body = service.get(_url(path)).text
            assert not any(i in body for i in ids), path
            assert "gate_" not in body.replace("gate_session", ""), path


def test_viewer_reads_but_never_writes():
    assert GRANTS[Role.viewer] == frozenset({Perm.read})
    assert all(Perm.read in perms for perms in GRANTS.values())


def test_the_matrix_covers_a_route_added_later(apps, tmp_path: Path):
    """A read route mounted on the dashboard router after the fact is enumerated and guarded like the rest."""
    from fastapi import APIRouter, FastAPI

    from gate.dashboard.routes import GuardedRoute

    extra = APIRouter(route_class=GuardedRoute)

    @extra.get("/extra.json", name="dashboard_extra")
    def extra_json() -> dict[str, str]:
        return {"secret": "nothing"}

    app = FastAPI()
    app.state.gate_db = apps["dashboard"].app.state.gate_db
    from gate.dashboard.routes import router

    app.include_router(router)
    app.include_router(extra)
    client = TestClient(app)
    assert ("GET", "/extra.json") in routes(app)
    assert client.get("/extra.json").status_code == 401
    ok = client.get("/extra.json", headers={"Authorization": f"Bearer {apps['tokens'][Role.viewer]}"})
    assert ok.status_code == 200 and ok.json() == {"secret": "nothing"}
