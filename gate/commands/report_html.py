"""`gate report-html`: the static release report (index.html, items.html) or, with --check-run, the static page
of one dataset check."""

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


def run_release_report_html(*, release_id: str, out: str, db: str | None, scorecard: str | None) -> int:
    """Writes the release report; `scorecard` (the scorecard file the decision used) adds the items' prompts,
    which the record keeps only as hashes. A scorecard other than the decision's is refused (its prompts would
    not be the ones the answers replied to)."""
    from gate.dashboard.static import write_release_report
    from gate.report.console import make_console
    from gate.store.db import db_path

    path = db_path(db)
    if not Path(path).exists():
        raise GateError("no gate database yet (run `gate check` / `gate decide` first)", file=path)
    if scorecard is not None:
        _same_scorecard(str(path), release_id, scorecard)
    page = write_release_report(str(path), release_id, out, scorecard=scorecard)
    make_console().print(f"release report for {release_id} → {page}", soft_wrap=True)
    return int(ExitCode.PASS)


def _same_scorecard(db: str, release_id: str, scorecard: str) -> None:
    from gate.score.scorecard import load_scorecard
    from gate.store.releases import get_release

    rel = get_release(release_id, db)
    sc = load_scorecard(scorecard)
    if rel.get("scorecard_sha256") and sc.sha256 != rel["scorecard_sha256"]:
        raise GateError(f"release {release_id} was decided with scorecard {rel['scorecard']} "
                        f"{rel.get('scorecard_version') or ''} (sha256 {str(rel['scorecard_sha256'])[:12]}), not "
                        f"this file (sha256 {sc.sha256[:12]})", file=scorecard, field="--scorecard")
