"""`gate report-html --check-run ID`: the static page of one dataset check (the release report is
gate/commands/dashboard.py's `run_report_html`)."""

from __future__ import annotations

from pathlib import Path

from gate.errors import ExitCode, GateError


def run_check_report_html(*, run_id: str, out: str, db: str | None) -> int:
    """Writes the check run's static page; one line naming the page on success."""
    from gate.report.console import make_console
    from gate.report.html_check import write_check_report
    from gate.store.db import db_path

    path = db_path(db)
    if not Path(path).exists():
        raise GateError("no gate database yet (run `gate check` first)", file=path)
    page = write_check_report(str(path), run_id, out)
    make_console().print(f"check report for {run_id} → {page}", soft_wrap=True)
    return int(ExitCode.PASS)
