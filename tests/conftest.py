"""Shared helpers: run the real `gate` CLI in a subprocess and build small datasets on disk."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Literal, overload

import pytest

pytest_plugins = ["tests.costs_plugin"]

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures" / "datasets"
CONTRACTS = ROOT / "contracts"


def run_gate(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
             timeout: int = 300) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "CI": "true", **(env or {})}
    full_env.pop("GITHUB_ACTIONS", None)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "gate", *args], cwd=cwd or ROOT, env=full_env,
                          capture_output=True, text=True, timeout=timeout)


def write_jsonl(path: Path, rows: list[object]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    return path


def triage_row(i: int, text: str | None = None, answer: dict | None = None, **meta: object) -> dict:
    row = {"id": f"tri-{i:06d}", "source": "email", "customer": f"cus-{i:05d}",
           "created_at": "2026-03-04T10:22:31Z", "language": "en",
           "messages": [{"role": "system", "content": "You triage support tickets into JSON."},
                        {"role": "user", "content": text or f"The invoice number {i} shows a double charge for march"},
                        {"role": "assistant", "content": json.dumps(
                            answer or {"product": "billing", "severity": "medium", "next_action": "refund_review"})}]}
    row.update(meta)
    return row


@pytest.fixture
def triage_contract():
    from gate.contract import load_contract

    return load_contract(CONTRACTS / "triage.yaml")


@pytest.fixture
def tool_contract():
    from gate.contract import load_contract

    return load_contract(CONTRACTS / "tool-use.yaml")


@pytest.fixture(scope="module")
def triage_contract_module():
    from gate.contract import load_contract

    return load_contract(CONTRACTS / "triage.yaml")


@overload
def gate_inprocess(*args: str, split: Literal[False] = False) -> tuple[int, str]: ...


@overload
def gate_inprocess(*args: str, split: Literal[True]) -> subprocess.CompletedProcess[str]: ...


def gate_inprocess(*args: str, split: bool = False) -> tuple[int, str] | subprocess.CompletedProcess[str]:
    """The real entry point (`gate.cli.main`, which maps errors to exit codes) in this process: a subprocess costs
    seconds of imports on a loaded 2-core box. Tests of bad input still go through `run_gate` (a subprocess).

    Not for a command that forks worker processes (`gate index build`, `--base` over 512 changed rows, a check over
    8 MiB of input): the suite runs in pytest-xdist workers, whose threads can hold a lock at the fork, and the
    forked child then waits on it forever (seen: `gate index build` hung in a worker). Use `run_gate` there.

    `split=True` keeps stdout and stderr apart and answers in `run_gate`'s shape (returncode, stdout, stderr), for
    tests that assert what goes where ("nothing on stdout", "one line on stderr"). The environment and working
    directory are the test's own: set what `run_gate` set with the `run_gate_env` fixture and `monkeypatch.chdir`."""
    import contextlib
    import io

    from gate.cli import main

    out = io.StringIO()
    err = out if not split else io.StringIO()
    argv = sys.argv
    sys.argv = ["gate", *args]
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            main()
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    finally:
        sys.argv = argv
    if split:
        return subprocess.CompletedProcess(["gate", *args], code, out.getvalue(), err.getvalue())
    return code, out.getvalue()


@pytest.fixture
def run_gate_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """What `run_gate` gives its subprocess, for a test that calls `gate_inprocess` instead: CI=true (no live
    progress) and no GITHUB_ACTIONS (no workflow annotations)."""
    monkeypatch.setenv("CI", "true")
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)


@pytest.fixture(autouse=True)
def _forks_really_fork(request: pytest.FixtureRequest):
    """A test marked `forks` proves the forked pools: if they fell back to running inline (another thread was
    alive, e.g. inside an xdist worker), it fails instead of passing on the serial path."""
    if request.node.get_closest_marker("forks") is None:
        yield
        return
    import warnings

    from gate.io.forking import InlineFallback

    with warnings.catch_warnings():
        warnings.simplefilter("error", InlineFallback)
        yield
