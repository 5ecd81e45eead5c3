"""`gate dashboard`: the release dashboard served for a local look (`gate report-html` lives in
gate/commands/report_html.py)."""

from __future__ import annotations

from gate import install_hint
from gate.errors import ExitCode, GateError


def _loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def run_dashboard(*, db: str | None, host: str, port: int, no_auth: bool = False) -> int:
    """Serves the dashboard router alone (read-only) with uvicorn, for looking at a record locally.

    Tokens are required as on `gate serve` (the record holds check findings and release evidence): a viewer logs
    in at /login with a token from `gate token create --role viewer`. `--no-auth` is for one person's own
    machine: refused unless the address is a loopback one, so nothing beyond this host can reach the pages."""
    if no_auth and not _loopback(host):
        raise GateError(f"--no-auth serves the record to anyone who can reach it: only with --host 127.0.0.1 "
                        f"(got --host {host})")
    try:
        import uvicorn
    except ImportError:
        raise GateError(f"the dashboard needs the service extra ({install_hint('service')})") from None
    from gate.dashboard.app import create_dashboard_app
    from gate.report.console import make_console
    from gate.store.db import db_path

    path = db_path(db)
    console = make_console()
    shown = f"[{host}]" if ":" in host else host
    if no_auth:
        console.print(f"gate dashboard over {path} on http://{shown}:{port}/ without authentication, for this "
                      "machine only (Ctrl-C stops)", soft_wrap=True, markup=False, highlight=False)
    else:
        console.print(f"gate dashboard over {path} on http://{shown}:{port}/ (Ctrl-C stops); log in at "
                      f"http://{shown}:{port}/login with a token (`gate token create --role viewer --name NAME`)",
                      soft_wrap=True, markup=False, highlight=False)
    uvicorn.run(create_dashboard_app(path, auth=not no_auth), host=host, port=port, log_level="warning")
    return int(ExitCode.PASS)
