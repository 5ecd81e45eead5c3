"""A model server run as a child process: started, waited for, stopped by its PID, its log kept.

Why a process group: vLLM and SGLang spawn engine workers; signalling only the parent can leave a worker holding
the port and gigabytes of memory. The server gets its own session (so a Ctrl-C in the terminal reaches gate, which then
stops the whole group in order: SIGTERM, grace period, SIGKILL), and an `atexit` hook covers every other exit path.
A server that dies or never becomes healthy raises `EngineError` with one line: what, the exit code, the log path and
the last lines of the log, because "failed to start" without the reason costs a user a round trip.
"""

from __future__ import annotations

import atexit
import os
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from gate.engines.client import OpenAIClient
from gate.engines.engine import Engine, EngineError, EngineIdentity
from gate.engines.types import Request, Response

_LIVE: set[ServerProcess] = set()


def free_port(host: str = "127.0.0.1") -> int:
    """A port nobody listens on right now (the server binds it a moment later; collisions are rare and loud)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def log_tail(path: str | os.PathLike[str], lines: int = 5, width: int = 400) -> str:
    """The last non-empty lines of a log joined with ' | ': fits in the one-line error a CI log shows."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(no log)"
    kept = [ln.strip() for ln in text.splitlines() if ln.strip()][-lines:]
    tail = " | ".join(kept) or "(empty log)"
    return tail if len(tail) <= width else "…" + tail[-width:]


class ServerProcess:
    """One server child process. `start()` returns once `health_url` answers 200, or raises `EngineError`."""

    def __init__(self, cmd: Sequence[str], *, health_url: str, log_path: str | os.PathLike[str], name: str = "server",
                 env: dict[str, str] | None = None, ready_timeout_s: float = 180.0, stop_grace_s: float = 15.0,
                 cwd: str | None = None) -> None:
        self.cmd = list(cmd)
        self.health_url = health_url
        self.log_path = Path(log_path)
        self.name = name
        self.env = env
        self.ready_timeout_s = ready_timeout_s
        self.stop_grace_s = stop_grace_s
        self.cwd = cwd
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def start(self) -> None:
        if self.proc is not None:
            return
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "wb")
        env = {**os.environ, **(self.env or {})}
        try:
            self.proc = subprocess.Popen(self.cmd, stdout=self._log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, env=env, cwd=self.cwd, start_new_session=True)
        except OSError as exc:
            self._close_log()
            raise EngineError(f"{self.name} could not be started ({self.cmd[0]}: {exc.strerror or exc})") from None
        _LIVE.add(self)
        _install_handlers()
        self.log_path.with_name(self.log_path.name + ".pid").write_text(str(self.proc.pid))
        self._wait_ready()

    def _wait_ready(self) -> None:
        assert self.proc is not None
        deadline = time.monotonic() + self.ready_timeout_s
        while time.monotonic() < deadline:
            rc = self.proc.poll()
            if rc is not None:
                self.stop()
                raise EngineError(f"{self.name} exited with code {rc} before it was ready (log {self.log_path}): "
                                  f"{log_tail(self.log_path)}")
            if _healthy(self.health_url):
                return
            time.sleep(0.25)
        self.stop()
        raise EngineError(f"{self.name} not ready after {self.ready_timeout_s:g} s at {self.health_url} "
                          f"(log {self.log_path}): {log_tail(self.log_path)}")

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        """SIGTERM the process group, wait `stop_grace_s`, then SIGKILL. Safe to call twice."""
        proc = self.proc
        if proc is None:
            return
        if proc.poll() is None:
            _signal_group(proc.pid, signal.SIGTERM)
            try:
                proc.wait(self.stop_grace_s)
            except subprocess.TimeoutExpired:
                _signal_group(proc.pid, signal.SIGKILL)
                proc.wait(10)
        # Workers that outlived the parent still sit in its group.
        _signal_group(proc.pid, signal.SIGKILL)
        self.proc = None
        _LIVE.discard(self)
        self._close_log()

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(urllib.request.Request(url), timeout=5) as r:
            return 200 <= r.status < 300
    except (urllib.error.URLError, OSError, ValueError):
        return False


def _stop_all() -> None:
    for srv in list(_LIVE):
        srv.stop()


_handlers_installed = False


def _install_handlers() -> None:
    """atexit for normal exits; SIGTERM turned into SystemExit so atexit also runs when CI cancels the job."""
    global _handlers_installed
    if _handlers_installed:
        return
    _handlers_installed = True
    atexit.register(_stop_all)
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        def _term(signum: int, frame: Any) -> None:
            raise SystemExit(128 + signum)

        signal.signal(signal.SIGTERM, _term)


class ServerEngine(Engine):
    """An engine that is a server we launch and then talk to over the OpenAI API."""

    name = "server"
    health_path = "/health"

    def __init__(self, cmd: Sequence[str], *, port: int, request_model: str, identity: EngineIdentity,
                 log_path: str | os.PathLike[str], env: dict[str, str] | None = None, host: str = "127.0.0.1",
                 ready_timeout_s: float = 180.0, concurrency: int = 8, timeout_s: float | None = None,
                 retries: int = 3,
                 extra_body: dict[str, Any] | None = None, stream: bool = False) -> None:
        self.base_url = f"http://{host}:{port}"
        self.server = ServerProcess(cmd, health_url=self.base_url + self.health_path, log_path=log_path,
                                    name=self.name, env=env, ready_timeout_s=ready_timeout_s)
        self.client = OpenAIClient(self.base_url, request_model, concurrency=concurrency, timeout_s=timeout_s,
                                   retries=retries, extra_body=extra_body, stream=stream)
        self._identity = identity

    @property
    def identity(self) -> EngineIdentity:
        return self._identity

    def start(self) -> None:
        self.server.start()
        version = self._server_version()
        if version:
            from dataclasses import replace

            self._identity = replace(self._identity, engine_version=version)

    def _server_version(self) -> str:
        import json

        for path in ("/version", "/get_server_info"):
            try:
                with urllib.request.urlopen(self.base_url + path, timeout=5) as r:
                    data = json.loads(r.read())
                    if isinstance(data, dict) and data.get("version"):
                        return str(data["version"])
            except (urllib.error.URLError, OSError, ValueError):
                continue
        return self._identity.engine_version

    def stop(self) -> None:
        self.server.stop()

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        return self.client.generate(requests)

    def loglikelihood(self, pairs: Sequence[tuple[Request, str]]) -> list[float | None] | None:
        return self.client.loglikelihood(pairs)

    @property
    def pid(self) -> int | None:
        return self.server.pid
