"""Logging in to the dashboard: the session cookie, its limits, and the --no-auth mode for one's own machine.

In-process (FastAPI TestClient) over a record written by the real writers; tokens made by `create_token` and
revoked by `revoke_token`, as `gate token` does. Every route's refusals are in tests/test_auth_matrix.py.
"""

from __future__ import annotations

import logging

import pytest

from tests.conftest import run_gate
from tests.dashboard_seed import seed_small

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient

HTML = {"Accept": "text/html,application/xhtml+xml"}


@pytest.fixture(scope="module")
def record(tmp_path_factory):
    db = str(tmp_path_factory.mktemp("dashauth") / "gate.duckdb")
    info = seed_small(db, releases=2)
    return {"db": db, **info}


def _app(db: str, **kw):
    from gate.dashboard.app import create_dashboard_app

    return create_dashboard_app(db, **kw)


def _token(db: str, name: str, role: str = "viewer") -> str:
    from gate.service.auth import create_token

    return create_token(db, name, role)


def test_a_browser_without_a_session_gets_the_login_form_and_then_the_page(record, caplog):
    caplog.set_level(logging.DEBUG)
    token = _token(record["db"], "alice")
    c = TestClient(_app(record["db"]), base_url="http://127.0.0.1:8050")
    refused = c.get("/checks", headers=HTML)
    assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
    assert 'id="login"' in refused.text and 'action="/login"' in refused.text
    assert 'name="next" value="/checks"' in refused.text and record["check_run"] not in refused.text
    assert "<script" not in refused.text
    wrong = c.post("/login", data={"token": token[:-3] + "abc", "next": "/checks"}, follow_redirects=False)
    assert wrong.status_code == 401 and "unknown, wrong or revoked token" in wrong.text
    assert "set-cookie" not in wrong.headers
    ok = c.post("/login", data={"token": token, "next": "/checks"}, follow_redirects=False)
    assert ok.status_code == 303 and ok.headers["location"] == "/checks"
    cookie = ok.headers["set-cookie"]
    for attr in ("HttpOnly", "SameSite=strict", "Path=/", "Max-Age=28800"):
        assert attr in cookie, cookie
    assert "Secure" not in cookie  # plain http on localhost: a Secure cookie would never come back
    assert token not in cookie and token.split("_", 2)[2] not in cookie  # names the token's id, never its secret
    page = c.get("/checks", headers=HTML)
    assert page.status_code == 200 and record["check_run"] in page.text
    assert 'action="/logout"' in page.text and token not in page.text
    assert token not in caplog.text and token.split("_", 2)[2] not in caplog.text
    out = c.post("/logout", follow_redirects=False)
    assert out.status_code == 303 and 'gate_session=""' in out.headers["set-cookie"]
    assert c.get("/checks", headers=HTML).status_code == 401


def test_https_gets_a_secure_cookie_and_the_service_scopes_it_to_the_dashboard(record, tmp_path):
    from gate.service.app import create_app
    from gate.service.config import ServiceConfig

    token = _token(record["db"], "bob")
    c = TestClient(_app(record["db"]), base_url="https://127.0.0.1")
    assert "Secure" in c.post("/login", data={"token": token}, follow_redirects=False).headers["set-cookie"]

    db = str(tmp_path / "g.duckdb")
    seed_small(db, releases=1)
    token = _token(db, "carol")
    cfg = ServiceConfig(roots=[tmp_path], db=db, state_dir=tmp_path / "state", run_jobs=False)
    with TestClient(create_app(cfg)) as svc:
        form = svc.get("/dashboard/releases/x", headers=HTML)
        assert form.status_code == 401 and 'action="/dashboard/login"' in form.text
        res = svc.post("/dashboard/login", data={"token": token, "next": "/dashboard/checks"}, follow_redirects=False)
        assert res.status_code == 303 and res.headers["location"] == "/dashboard/checks"
        assert "Path=/dashboard" in res.headers["set-cookie"]
        assert svc.get("/dashboard/checks").status_code == 200
        assert svc.get("/releases").status_code == 401  # the session is for the pages, never the API


@pytest.mark.parametrize("target", ["https://evil.example/", "//evil.example/x", "/\\evil.example", "checks",
                                    "/%0d%0aSet-Cookie:x=1", ""])
def test_after_login_only_a_path_of_this_dashboard(record, target):
    from gate.dashboard.auth import safe_next

    token = _token(record["db"], f"next-{abs(hash(target)) % 10**8}")
    c = TestClient(_app(record["db"]), base_url="http://127.0.0.1")
    res = c.post("/login", data={"token": token, "next": target}, follow_redirects=False)
    assert res.status_code == 303
    assert res.headers["location"] == ("/" if not target.startswith("/%") else target)
    assert safe_next("/checks?check=pii", "") == "/checks?check=pii"
    assert safe_next("/dashboard/x", "/dashboard") == "/dashboard/x" and safe_next("/x", "/dashboard") == "/dashboard/"


def test_a_login_posted_from_another_site_is_refused(record):
    token = _token(record["db"], "dave")
    c = TestClient(_app(record["db"]), base_url="http://127.0.0.1:8050")
    res = c.post("/login", data={"token": token}, headers={"Origin": "https://evil.example"}, follow_redirects=False)
    assert res.status_code == 403 and "set-cookie" not in res.headers
    same = c.post("/login", data={"token": token}, headers={"Origin": "http://127.0.0.1:8050"}, follow_redirects=False)
    assert same.status_code == 303


def test_revoking_the_token_ends_its_session_at_once(record):
    from gate.store.service import revoke_token

    token = _token(record["db"], "erin")
    c = TestClient(_app(record["db"]), base_url="http://127.0.0.1")
    assert c.post("/login", data={"token": token}, follow_redirects=False).status_code == 303
    assert c.get("/").status_code == 200 and c.get("/").status_code == 200  # the second answered from the caches
    assert revoke_token(record["db"], "erin")
    res = c.get("/", headers=HTML)
    assert res.status_code == 401 and "your session ended" in res.text
    assert 'gate_session=""' in res.headers["set-cookie"]  # the dead cookie is cleared


def test_expired_forged_and_foreign_sessions_are_refused(record):
    import time

    from gate.dashboard.auth import SESSION_COOKIE, SESSION_SECONDS, issue_session

    token = _token(record["db"], "frank")
    tid = token.split("_")[1]
    app, other = _app(record["db"]), _app(record["db"])
    c = TestClient(app, base_url="http://127.0.0.1")
    for value, code in ((issue_session(app, tid), 200),
                        (issue_session(app, tid, now=time.time() - SESSION_SECONDS - 1), 401),
                        (issue_session(other, tid), 401),  # signed by another server process
                        (issue_session(app, tid).replace(tid, "0" * 16), 401),
                        (f"{tid}.9999999999.", 401)):
        c.cookies.clear()
        assert c.get("/", headers={"Cookie": f"{SESSION_COOKIE}={value}"}).status_code == code, value


def test_a_bad_bearer_header_is_refused_even_with_a_good_session(record):
    token = _token(record["db"], "gina")
    c = TestClient(_app(record["db"]), base_url="http://127.0.0.1")
    c.post("/login", data={"token": token}, follow_redirects=False)
    assert c.get("/").status_code == 200
    assert c.get("/", headers={"Authorization": "Bearer nope"}).status_code == 401


def test_no_auth_answers_only_to_loopback_names(record):
    c = TestClient(_app(record["db"], auth=False), base_url="http://127.0.0.1:8050")
    page = c.get("/")
    assert page.status_code == 200 and "/logout" not in page.text
    assert c.get("/static/plotly.min.js").status_code == 200
    assert c.get("/login", follow_redirects=False).headers["location"] == "/"
    for host in ("localhost:8050", "[::1]:8050"):
        assert c.get("/", headers={"Host": host}).status_code == 200
    # a DNS name rebound to 127.0.0.1 by some web page is not this machine's name: refused
    assert c.get("/", headers={"Host": "evil.example:8050"}).status_code == 403


def test_cli_refuses_no_auth_beyond_loopback(tmp_path):
    res = run_gate("dashboard", "--no-auth", "--host", "0.0.0.0", "--db", str(tmp_path / "g.duckdb"))
    assert res.returncode == 1 and "Traceback" not in res.stderr
    assert res.stderr.strip().splitlines() == [
        "gate: error: --no-auth serves the record to anyone who can reach it: only with --host 127.0.0.1 "
        "(got --host 0.0.0.0)"]
    helped = run_gate("dashboard", "--help")
    assert "--no-auth" in helped.stdout and "gate token create --role viewer" in helped.stdout


def test_the_login_form_escapes_the_address_it_echoes(record):
    c = TestClient(_app(record["db"]), base_url="http://127.0.0.1")
    res = c.get('/checks?x="><script>alert(1)</script>', headers=HTML)
    assert res.status_code == 401 and "<script>alert(1)" not in res.text
    from gate.dashboard.auth import login_page

    page = login_page('/x"><b', next_path='/a"><script>alert(1)</script>', message="<i>no</i>")
    assert "<script>alert" not in page and "<i>no" not in page and "&lt;i&gt;no" in page
    assert 'value="/a&quot;&gt;&lt;script&gt;' in page and 'action="/x&quot;&gt;&lt;b/login"' in page


def test_a_forged_session_is_refused_even_where_the_real_mac_ends_as_the_forgery_would():
    """The auth matrix forges a session by changing its MAC; a forgery that overwrote the last two characters with
    "AA" left about one session in a thousand unchanged (and accepted), so the matrix failed by chance."""
    from types import SimpleNamespace

    from gate.dashboard import auth as dash_auth
    from tests.tamper import tampered

    app = SimpleNamespace(state=SimpleNamespace())
    session = next(s for s in (dash_auth.issue_session(app, f"{i:016x}") for i in range(100_000)) if s.endswith("AA"))
    assert dash_auth.session_token_id(app, session[:-2] + "AA") is not None  # the old forgery: the real session
    assert tampered(session) != session
    assert dash_auth.session_token_id(app, tampered(session)) is None
