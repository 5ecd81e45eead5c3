"""`gate demo`: the data door on every fixture, then the release loop (split, train, score, decide, promote),
then a scan of everything the demo wrote or shows for the fixtures' planted personal data and secrets.

Rerunnable in one tree: each run writes into a folder of its own (`.<out>-runs/<stamp>` beside
`--out`) with a record of its own (`gate.duckdb` in that folder, unless `--db` or GATE_DB names one; then the
releases get ids that record does not hold yet). Only when the run has passed does `--out` switch to it, in one
rename of a symlink: `gate-report/demo` always shows one whole run, never a mix of two, and a failed run leaves
the last good one in place (its own folder is kept, and named, for a look at what went wrong). The paths the
record holds (checkpoints, reports) are the run folder's, so they stay true after the switch.
"""

from __future__ import annotations

import os
import shutil
import socket
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.table import Table

from gate.errors import ExitCode, GateError
from gate.report.console import make_console


def _runs_dir(out: Path) -> Path:
    return out.parent / f".{out.name}-runs"


def new_run_dir(out: Path) -> Path:
    """A fresh folder for one run: `<UTC stamp>-<host>-<pid>`, so a later run can tell an abandoned one."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f")
    path = _runs_dir(out) / f"{stamp}-{socket.gethostname().replace('-', '_')}-{os.getpid()}"
    path.mkdir(parents=True)
    return path


def _abandoned(run: Path) -> bool:
    """A run folder whose process (on this host) is gone."""
    try:
        _, host, pid = run.name.rsplit("-", 2)
        if host != socket.gethostname().replace("-", "_"):
            return False
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except (ValueError, OSError):
        return False
    return False


def publish(out: Path, run_dir: Path) -> None:
    """Points `out` at `run_dir` in one rename (a relative symlink, so the whole tree can move), then removes the
    run it pointed at before and any abandoned run folder. A real folder at `out` (an older gate's demo) is moved
    aside first and removed after."""
    out.parent.mkdir(parents=True, exist_ok=True)
    link = out.parent / f".{out.name}.link-{os.getpid()}"
    link.unlink(missing_ok=True)
    os.symlink(os.path.relpath(run_dir, out.parent), link)
    previous = out.resolve() if out.is_symlink() else None
    aside = None
    if out.exists() and not out.is_symlink():
        aside = out.parent / f".{out.name}.old-{os.getpid()}"
        os.replace(out, aside)
    os.replace(link, out)
    if aside is not None:
        shutil.rmtree(aside, ignore_errors=True)
    runs = _runs_dir(out).resolve()
    for old in runs.iterdir():
        if old != run_dir.resolve() and old.is_dir() and (old == previous or _abandoned(old)):
            shutil.rmtree(old, ignore_errors=True)


def _release_ids(db: str, fresh: bool, run_dir: Path) -> tuple[str, str]:
    if fresh:
        return "demo-a", "demo-b"
    from gate.store.releases import list_releases

    have = {r["release_id"] for r in list_releases(db)}
    if not {"demo-a", "demo-b"} & have:
        return "demo-a", "demo-b"
    tag = run_dir.name.split("-")[0]
    return f"demo-a-{tag}", f"demo-b-{tag}"


def run_demo(out_dir: str = "gate-report/demo", db: str | None = None, data_only: bool = False) -> int:
    from gate.demo.data_door import run_data_door
    from gate.demo.release_loop import run_release_loop
    from gate.store.db import db_path

    console = make_console()
    out = Path(out_dir)
    run_dir = new_run_dir(out)
    fresh = db is None and not os.environ.get("GATE_DB")
    target = str((run_dir / "gate.duckdb").resolve()) if fresh else str(Path(db_path(db)).resolve())
    try:
        code, runs = run_data_door(str(run_dir), target, console, shown_as=str(out))
        if code != ExitCode.PASS:
            return _failed(console, out, run_dir, code)
        if data_only:
            publish(out, run_dir)
            console.print(f"Reports: {out}/<dataset>/report.md; record: {_shown(target, run_dir, out)}",
                          soft_wrap=True)
            return code
        transcript = run_release_loop(run_dir, target, runs, console, _release_ids(target, fresh, run_dir))
    except GateError:
        _failed(console, out, run_dir, int(ExitCode.ERROR))
        raise
    console.print(_steps_table("gate demo: the release loop", transcript))
    code = leak_scan(str(run_dir), target, {f"output of step {s.title}": s.tail for s in transcript.steps}, console)
    if code != ExitCode.PASS:
        return _failed(console, out, run_dir, code)
    publish(out, run_dir)
    console.print(f"Release A promoted, release B blocked and refused. Release report: "
                  f"{out / 'release-report' / 'index.html'}; record: {_shown(target, run_dir, out)}", soft_wrap=True)
    return code


def _steps_table(title: str, transcript: Any) -> Table:
    """Each step of a loop with the exit code it gave and the one it had to give: what a reader checks first."""
    table = Table(title=title, title_justify="left")
    for col in ("step", "exit", "expected", "seconds"):
        table.add_column(col)
    for s in transcript.steps:
        table.add_row(s.title, str(s.code), str(s.expect), f"{s.seconds:.1f}")
    return table


def run_real_demo(out_dir: str = "gate-report/demo-real", db: str | None = None) -> int:
    """`gate demo --real`: the real-model release loop (gate.demo.real_loop) into a run folder of its own, published
    to `out_dir` only when every step gave its expected exit code; prints the steps and the measured scores."""
    from gate.demo.real_loop import run_real_loop

    console = make_console()
    out = Path(out_dir)
    run_dir = new_run_dir(out)
    try:
        result = run_real_loop(run_dir, console, db=db)
    except GateError:
        _failed(console, out, run_dir, int(ExitCode.ERROR))
        raise
    console.print(_steps_table("gate demo --real: SmolLM2-135M-Instruct through the release door",
                               result.transcript))
    publish(out, run_dir)
    sm = result.summary
    for name in ("local", "swift", "broken"):
        g = {k: "-" if v is None else (f"{v:+.3f}" if isinstance(v, float) else v)
             for k, v in sm[name]["task_success_gate"].items()}
        console.print(f"{name} adapter: task success {g['candidate']} vs baseline {g['baseline']} (paired "
                      f"difference {g['observed']}, interval {g['ci_low']} to {g['ci_high']}, p {g['p_value']}, "
                      f"n {g['n']}) -> {sm[name]['decision']}", highlight=False, soft_wrap=True)
    console.print(f"{sm['heldout_items']} held-out items, {sm['steps']} training steps; {sm['wall_s']:.0f} s wall, "
                  f"{sm['cpu_s']:.0f} s CPU. Summary: {out / 'real-loop.json'}", highlight=False, soft_wrap=True)
    return int(ExitCode.PASS)


def _shown(target: str, run_dir: Path, out: Path) -> str:
    """The record's path as the user reaches it: through `out` when it is the run's own."""
    t = Path(target)
    return str(out / t.relative_to(run_dir.resolve())) if t.is_relative_to(run_dir.resolve()) else target


def _failed(console: Any, out: Path, run_dir: Path, code: int) -> int:
    kept = f"; {out} still shows the last run that passed" if out.exists() else ""
    console.print(f"[bold red]This demo run did not pass[/]: its outputs are in {run_dir}{kept}", soft_wrap=True,
                  highlight=False)
    return code


def leak_scan(out_dir: str, db: str, logs: dict[str, str], console: Any) -> int:
    """The demo's last word: none of the fixtures' planted PII or secrets in anything the demo wrote or shows."""
    from gate.demo.leakscan import scan_demo

    t0 = time.perf_counter()
    result = scan_demo(out_dir, db, texts=logs)
    console.print(f"\n{result.summary()} ({time.perf_counter() - t0:.1f} s)", soft_wrap=True, highlight=False)
    if not result.leaks:
        return int(ExitCode.PASS)
    for leak in result.leaks[:20]:  # where and which planted value, never the value
        console.print(f"[bold red]leak:[/] {leak}", soft_wrap=True, highlight=False)
    if len(result.leaks) > 20:
        console.print(f"... and {len(result.leaks) - 20} more", highlight=False)
    return int(ExitCode.ERROR)
