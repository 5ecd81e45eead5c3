"""`gate demo`: the data door on every fixture, then the release loop (split, train, score, decide, promote)."""

from __future__ import annotations

from pathlib import Path

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
    return int(ExitCode.PASS)
