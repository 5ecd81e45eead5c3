"""`gate report-html` and `gate dashboard`: the release dashboard's two command-line faces."""

from __future__ import annotations

from pathlib import Path

from gate.errors import ExitCode, GateError


def run_report_html(*, release_id: str, out: str, db: str | None) -> int:
    """Writes the static release report (index.html + the bundled plotly.min.js) for one release."""
    from gate.dashboard.static import write_release_report
    from gate.report.console import make_console
    from gate.store.db import db_path

    path = db_path(db)
    if not Path(path).exists():
        raise GateError("no gate database yet (run `gate check` / `gate decide` first)", file=path)
    page = write_release_report(path, release_id, out)
    make_console().print(f"release report for {release_id} → {page}")
    return int(ExitCode.PASS)


def run_dashboard(*, db: str | None, host: str, port: int) -> int:
    """Serves the dashboard router alone (read-only) with uvicorn, for looking at a record locally."""
    try:
        import uvicorn
    except ImportError:
        raise GateError("the dashboard needs the service extra (pip install 'gate[service]')") from None
    from gate.dashboard.app import create_dashboard_app
    from gate.report.console import make_console
    from gate.store.db import db_path

    path = db_path(db)
    make_console().print(f"gate dashboard over {path} on http://{host}:{port}/ (Ctrl-C stops)")
    uvicorn.run(create_dashboard_app(path), host=host, port=port, log_level="warning")
    return int(ExitCode.PASS)
