"""Running tool calls against Python tool implementations in a sandboxed subprocess.

Never `eval` a model's call (BFCL's executable checker does, behind a 7-word blocklist): the call is already
parsed into (name, arguments) and the child dispatches through the module's `TOOLS` table. The child runs with
layered defences, each reported when it trips:
- its own empty temporary directory as cwd; reads allowed there, in the tool module and the standard library,
  writes only there (a Python audit hook, which cannot be removed once installed);
- no network: a fresh network namespace when running as root, and the audit hook blocks sockets either way;
- no new processes: fork, exec, spawn, os.system, subprocess and ctypes are blocked by the hook; RLIMIT_NPROC
  and a drop to an unprivileged uid when started as root;
- resource limits (CPU seconds, address space, file size, open files) via `resource.setrlimit`, a wall-clock
  timeout after which the whole process group is killed, and output capped by RLIMIT_FSIZE on the files its
  stdout and stderr go to (so gigabytes of output never reach the parent's memory).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_CHILD = Path(__file__).with_name("_sandbox_child.py")
_NOBODY = 65534


@dataclass(frozen=True)
class Limits:
    """Per-execution budget. Defaults suit the fixture tools (each call takes microseconds)."""

    cpu_s: int = 2
    wall_s: float = 5.0
    memory_mb: int = 256
    output_bytes: int = 1 << 20
    # 0: leave RLIMIT_NPROC alone (it counts all of the user's processes); fork is blocked by the hook anyway
    nproc: int = 0
    # standard-library modules imported before the sandbox closes (tools may use them; others may be unreadable)
    preload: tuple[str, ...] = ("__future__", "typing", "collections", "dataclasses", "datetime", "decimal",
                                "math", "re", "copy", "functools", "itertools", "string", "hashlib", "enum")


@dataclass(frozen=True)
class Execution:
    """What happened. `status`: ok | execution_error (the tool raised; results say which) | timeout |
    sandbox_violation | crashed. `results` has one entry per call: {"result": ...} or {"error", "message"}."""

    status: str
    results: tuple[dict[str, Any], ...] = ()
    state: Any = None
    detail: str = ""
    wall_s: float = 0.0
    network: str = ""
    meta: dict[str, Any] = field(default_factory=dict)


def _tail(path: Path, limit: int = 2000) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(max(0, path.stat().st_size - limit))
            return fh.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _printable(text: str) -> str:
    """A detail ends up in reports and on terminals: a tool's newlines and escape sequences are shown escaped."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _no_constants(name: str) -> Any:
    """NaN and Infinity are not JSON: a result holding them would make every report that quotes it invalid."""
    raise ValueError(f"{name} in a tool result")


def run_calls(module: str | Path, calls: list[tuple[str, dict[str, Any]]], state: Any = None,
              limits: Limits | None = None) -> Execution:
    """Executes `calls` in order, in one fresh sandbox, starting from `state` (None: the module's
    `initial_state()`), and returns every result and the final state."""
    lim = limits or Limits()
    module = Path(module).resolve()
    outdir = Path(tempfile.mkdtemp(prefix="gate-sbx-out-"))
    home = Path(tempfile.mkdtemp(prefix="gate-sbx-"))
    root = os.geteuid() == 0
    if root:
        os.chown(home, _NOBODY, _NOBODY)
    job = {"module": str(module), "calls": [[n, a] for n, a in calls], "state": state, "netns": root,
           "uid": _NOBODY if root else None, "gid": _NOBODY if root else None,
           "limits": {"cpu_s": lim.cpu_s, "memory_mb": lim.memory_mb, "output_bytes": lim.output_bytes,
                      "nproc": lim.nproc}, "preload": list(lim.preload)}
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1"}
    out_path, err_path = outdir / "stdout", outdir / "stderr"
    t0 = time.monotonic()
    try:
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            proc = subprocess.Popen([sys.executable, "-I", "-S", "-B", str(_CHILD)], cwd=home, env=env,
                                    stdin=subprocess.PIPE, stdout=out, stderr=err, start_new_session=True)
            timed_out = False
            try:
                proc.stdin.write(json.dumps(job).encode())  # type: ignore[union-attr]
                proc.stdin.close()  # type: ignore[union-attr]
            except BrokenPipeError:
                pass
            try:
                proc.wait(timeout=lim.wall_s)
            except subprocess.TimeoutExpired:
                timed_out = True
            finally:
                try:  # the whole session: anything the tool managed to start goes with it
                    os.killpg(proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
                proc.wait()
        wall = time.monotonic() - t0
        rc = proc.returncode
        err_tail = _tail(err_path)
        sandbox_line = _printable(next((ln[len("SANDBOX: "):] for ln in reversed(err_tail.splitlines())
                                        if ln.startswith("SANDBOX: ")), ""))
        if timed_out:
            return Execution("timeout", detail=f"wall-clock limit of {lim.wall_s:g} s", wall_s=wall)
        if rc in (-signal.SIGXCPU, -signal.SIGKILL):
            return Execution("timeout", detail=f"CPU limit of {lim.cpu_s} s", wall_s=wall)
        if rc == -signal.SIGXFSZ:
            return Execution("sandbox_violation", wall_s=wall,
                             detail=f"file size limit of {lim.output_bytes} bytes (output or a written file)")
        if rc == 86:
            return Execution("sandbox_violation", detail=sandbox_line or "blocked operation", wall_s=wall)
        if rc == 87:
            return Execution("sandbox_violation", detail=f"memory limit of {lim.memory_mb} MiB", wall_s=wall)
        if rc != 0:
            last = err_tail.strip().splitlines()[-1:] or [f"exit status {rc}"]
            return Execution("crashed", detail=_printable(last[0][:300]), wall_s=wall)
        size = out_path.stat().st_size
        if size > lim.output_bytes:
            return Execution("sandbox_violation", detail=f"output over {lim.output_bytes} bytes", wall_s=wall)
        try:
            payload = json.loads(out_path.read_bytes(), parse_constant=_no_constants)
        except ValueError:
            return Execution("crashed", detail="the sandbox returned no readable result (not strict JSON)",
                             wall_s=wall)
        if "fatal" in payload:
            return Execution("crashed", detail=_printable(str(payload["fatal"])), wall_s=wall,
                             network=payload.get("network", ""))
        results = tuple(payload["results"])
        status = "execution_error" if any("error" in r for r in results) else "ok"
        detail = _printable(next((f"{r['error']}: {r.get('message', '')}" for r in results if "error" in r), ""))
        return Execution(status, results, payload.get("state"), detail, wall, payload.get("network", ""))
    finally:
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(outdir, ignore_errors=True)
