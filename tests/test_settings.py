"""Site settings from environment variables (gate/settings.py): a bad value is one line naming the variable and the
value, exit 1, before the command does anything (GATE_JOB_TIMEOUT used to be a bare float() read after the job was
already submitted to the service)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from gate.errors import GateError
from gate.settings import count, positive_seconds
from tests.conftest import CONTRACTS, FIXTURES, run_gate


def _set(monkeypatch: pytest.MonkeyPatch, name: str, raw: str | None) -> None:
    """`raw` None: the variable is unset (the default applies), else set to it."""
    if raw is None:
        monkeypatch.delenv(name, raising=False)
    else:
        monkeypatch.setenv(name, raw)


@pytest.mark.parametrize(("raw", "want"), [(None, 7.5), ("", 7.5), ("  ", 7.5), ("0.25", 0.25), (" 90 ", 90.0)])
def test_positive_seconds_reads_the_value_or_the_default(monkeypatch, raw, want):
    _set(monkeypatch, "GATE_T_S", raw)
    assert positive_seconds("GATE_T_S", 7.5) == want


@pytest.mark.parametrize("bad", ["abc", "0", "-5", "nan", "inf", "1s"])
def test_a_bad_number_of_seconds_names_the_variable_and_the_value(monkeypatch, bad):
    monkeypatch.setenv("GATE_T_S", bad)
    with pytest.raises(GateError) as err:
        positive_seconds("GATE_T_S", 1.0)
    assert str(err.value) == f"GATE_T_S must be a positive number of seconds, not '{bad}'"


@pytest.mark.parametrize(("raw", "want"), [(None, 128), ("", 128), ("0", 0), ("16", 16)])
def test_count_reads_the_value_or_the_default(monkeypatch, raw, want):
    _set(monkeypatch, "GATE_N", raw)
    assert count("GATE_N", 128) == want


@pytest.mark.parametrize("bad", ["lots", "-1", "2.5"])
def test_a_bad_count_names_the_variable_and_the_value(monkeypatch, bad):
    monkeypatch.setenv("GATE_N", bad)
    with pytest.raises(GateError, match=f"^GATE_N must be a whole number of at least 0, not '{bad}'$"):
        count("GATE_N", 128)


class _Service(BaseHTTPRequestHandler):
    """Stands in for `gate serve`: accepts any job (so the old code got as far as reading the timeout) and counts
    what reached it."""

    seen: list[str] = []

    def _answer(self) -> None:
        type(self).seen.append(f"{self.command} {self.path}")
        body = json.dumps({"job_id": "job-1", "status": "queued"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.parametrize("bad", ["abc", "-5", "0"])
def test_a_bad_gate_job_timeout_is_one_line_and_submits_nothing(tmp_path: Path, bad: str) -> None:
    _Service.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Service)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        env = {"GATE_URL": f"http://127.0.0.1:{server.server_port}", "GATE_TOKEN": "t", "GATE_JOB_TIMEOUT": bad}
        res = run_gate("check", str(FIXTURES / "triage-clean"), "-c", str(CONTRACTS / "triage.yaml"), "-o",
                       str(tmp_path / "rep"), env=env, timeout=120)
    finally:
        server.shutdown()
        server.server_close()
    assert res.returncode == 1, res.stdout + res.stderr
    assert res.stderr.strip() == f"gate: error: GATE_JOB_TIMEOUT must be a positive number of seconds, not '{bad}'"
    assert _Service.seen == []  # refused before a job was left running on the service
    assert not (tmp_path / "rep").exists()


def test_a_bad_dashboard_cache_size_is_one_line(tmp_path: Path) -> None:
    """Read when the dashboard's routes are imported, before it listens: the one line comes instead of serving."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    res = run_gate("dashboard", "--db", str(tmp_path / "g.duckdb"), "--port", str(port), "--no-auth",
                   env={"GATE_DASHBOARD_CACHE_PAGES": "lots"}, timeout=120)
    assert res.returncode == 1, res.stdout + res.stderr
    assert res.stderr.strip() == "gate: error: GATE_DASHBOARD_CACHE_PAGES must be a whole number of at least 0, " \
                                 "not 'lots'"
