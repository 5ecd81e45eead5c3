"""`gate demo`: the data door on every fixture, then the release loop (split, train, score, decide, promote),
then a scan of everything the demo wrote or shows for the fixtures' planted personal data and secrets.

Rerunnable in one tree, and writing only inside `--out`: each run writes into a folder of its own
(`<out>/.runs/<stamp>`) with a record of its own (`gate.duckdb` in that folder, unless `--db` or GATE_DB names one;
then the releases get ids that record does not hold yet). Only when the run has passed do the entries of `--out`
(one relative symlink per report folder and the record, plus `.current` for the whole run) switch to it, each in
one rename: every report folder is always one whole run, and a failed run leaves the last good one in place (its
own folder is kept, and named, for a look at what went wrong). The paths the record holds (checkpoints, reports)
are the run folder's, so they stay true after the switch. A folder gate did not write is refused, never emptied:
`--out ~/reports` must not cost a user their files.
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

RUNS = ".runs"  # inside --out: one folder per run
CURRENT = ".current"  # inside --out: the whole run that passed last


def _runs_dir(out: Path) -> Path:
    return out / RUNS


def claim_out(out: Path) -> None:
    """Makes `out` a folder the demo owns, or refuses in one line before any work: a new or empty folder, or one an
    earlier demo wrote. The layout before this one (`out` a symlink into `.<name>-runs` beside it) is taken over
    and its runs folder removed, since it lay outside `out`."""
    if out.is_symlink():
        old_runs = out.parent / f".{out.name}-runs"
        if Path(os.path.realpath(out)).parent == old_runs.resolve():
            out.unlink()
            shutil.rmtree(old_runs, ignore_errors=True)
        else:
            raise GateError("--out is a symlink gate demo did not write; give a new or empty folder", file=str(out))
    if out.exists():
        if not out.is_dir():
            raise GateError("--out is a file; give a new or empty folder", file=str(out))
        foreign = [p.name for p in out.iterdir() if p.name != RUNS]
        if foreign and not (out / RUNS).is_dir():
            raise GateError(f"--out is a folder gate demo did not write ({len(foreign)} entries, e.g. "
                            f"{sorted(foreign)[0]!r}); give a new or empty folder", file=str(out))
    out.mkdir(parents=True, exist_ok=True)


def new_run_dir(out: Path) -> Path:
    """A fresh folder for one run: `<UTC stamp>-<host>-<pid>`, so a later run can tell an abandoned one."""
    claim_out(out)
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


def _ours(entry: Path) -> bool:
    """An entry of `out` that a publish made: a symlink into the runs folder."""
    return entry.is_symlink() and Path(os.readlink(entry)).parts[:1] == (RUNS,)


def _switch(out: Path, name: str, target: str) -> None:
    """`out/name` becomes a symlink to `target` in one rename; a real file or folder of that name is refused."""
    dest = out / name
    if dest.exists() and not dest.is_symlink():
        raise GateError(f"{name} is a real entry, not one gate demo wrote; move it away", file=str(out))
    link = out / f".{name}.link-{os.getpid()}"
    link.unlink(missing_ok=True)
    os.symlink(target, link)
    os.replace(link, dest)


def publish(out: Path, run_dir: Path) -> None:
    """Points every entry of `out` at `run_dir` (relative symlinks, so the whole tree can move), each in one rename,
    `.current` last; then removes the entries the new run lacks, the run shown before and any abandoned run."""
    claim_out(out)
    rel = os.path.relpath(run_dir, out)
    current = out / CURRENT
    previous = Path(os.path.realpath(current)) if current.is_symlink() else None
    names = sorted(p.name for p in run_dir.iterdir())
    for name in names:
        _switch(out, name, os.path.join(rel, name))
    _switch(out, CURRENT, rel)
    for entry in out.iterdir():
        if entry.name not in names and entry.name != CURRENT and _ours(entry):
            entry.unlink()
    for old in _runs_dir(out).iterdir():
        here = old.resolve()
        if here != run_dir.resolve() and old.is_dir() and (here == previous or _abandoned(old)):
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
    kept = f"; {out} still shows the last run that passed" if (out / CURRENT).exists() else ""
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
