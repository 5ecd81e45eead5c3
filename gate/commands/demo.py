"""`gate demo`: the data door on every fixture, then the release loop (split, train, score, decide, promote),
then a scan of everything the demo wrote or shows for the fixtures' planted personal data and secrets."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from rich.table import Table

from gate.errors import ExitCode
from gate.report.console import make_console


def run_demo(out_dir: str = "gate-report/demo", db: str | None = None, data_only: bool = False) -> int:
    from gate.demo.data_door import run_data_door
    from gate.demo.release_loop import run_release_loop
    from gate.store.db import db_path

    console = make_console()
    code, runs = run_data_door(out_dir, db, console)
    if code != ExitCode.PASS or data_only:
        return code
    target = str(Path(db_path(db)).resolve())
    transcript = run_release_loop(out_dir, target, runs, console)
    table = Table(title="gate demo: the release loop", title_justify="left")
    for col in ("step", "exit", "expected", "seconds"):
        table.add_column(col)
    for s in transcript.steps:
        table.add_row(s.title, str(s.code), str(s.expect), f"{s.seconds:.1f}")
    console.print(table)
    console.print(f"Release A promoted, release B blocked and refused. Release report: "
                  f"{Path(out_dir) / 'release-report' / 'index.html'}; record: {target}", soft_wrap=True)
    return leak_scan(out_dir, target, {f"output of step {s.title}": s.tail for s in transcript.steps}, console)


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
