"""What the browser suites share: one headless Chromium per session, a real `gate dashboard` process over a seeded
record, the login form and a page that records its requests and script errors.

Why one place: both suites launched Chromium and started and awaited the server with the same lines; a fix to one
(a longer start deadline, the server's output on failure) reached only that one.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / ".cache" / "artifacts"
CHROMIUM = os.environ.get("GATE_CHROMIUM", "/usr/bin/chromium")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def dashboard(db: str, log: Path, start_s: float = 60) -> Iterator[str]:
    """`gate dashboard` on a free port of 127.0.0.1 until the block ends; yields its URL once /login answers.

    Its output goes to `log` (a file, not a pipe nobody drains while the tests run), so a test can read it
    afterwards, e.g. to prove no token was logged; a server that does not start fails the test with its output."""
    import httpx

    url = f"http://127.0.0.1:{free_port()}"
    with open(log, "w", encoding="utf-8") as out:
        proc = subprocess.Popen([sys.executable, "-m", "gate", "dashboard", "--db", db, "--host", "127.0.0.1",
                                 "--port", url.rsplit(":", 1)[1]], cwd=ROOT, env=dict(os.environ), stdout=out,
                                stderr=subprocess.STDOUT)
    deadline = time.monotonic() + start_s
    try:
        while True:
            try:
                if httpx.get(url + "/login", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"dashboard server did not start: {log.read_text(encoding='utf-8')[-2000:]}")
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


# Package scope, not session: Playwright's sync API keeps an event loop running in the main thread while it is
# open, and every later test that calls asyncio.run() in-process would fail ("cannot be called from a running
# event loop"); it must close when the last browser test is done.
@pytest.fixture(scope="package")
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install 'finetune-gate[browser]'")
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        yield b
        b.close()


def log_in(pg: Any, token: str) -> None:
    """Through the form the server answers with when there is no session (it names where to go next)."""
    pg.fill("#token", token)
    with pg.expect_navigation():
        pg.click("#login button[type=submit]")


def tracked_page(browser: Any, **context: Any) -> Iterator[Any]:
    """A fresh 1280x900 context's page that keeps every request URL (`requests_seen`) and script error
    (`errors_seen`); for `yield from` in a page fixture."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 900}, **context)
    pg = ctx.new_page()
    pg.requests_seen, pg.errors_seen = [], []
    pg.on("request", lambda r: pg.requests_seen.append(r.url))
    pg.on("pageerror", lambda e: pg.errors_seen.append(str(e)))
    yield pg
    ctx.close()
