"""`gate release create|list|show`, `gate promote`, `gate rollback`, `gate watch`: thin faces over gate/release."""

from __future__ import annotations

import json

from gate.errors import ExitCode
from gate.report.console import make_console


def run_release_create(*, decision: str, release_id: str | None, base_model: str | None, base_revision: str | None,
                       tokenizer: str | None, scorecard: str | None, data_checks: list[str], fingerprints: list[str],
                       training_run: str | None, by: str | None, notes: str | None, db: str | None,
                       quiet: bool = False) -> int:
    """Records the release; `quiet` prints its id alone, for `REL=$(gate release create -q ...)` in scripts."""
    from gate.release.record import create_release

    row = create_release(decision_id=decision, db=db, release_id=release_id, base_model=base_model,
                         base_revision=base_revision, tokenizer=tokenizer, scorecard=scorecard,
                         data_checks=data_checks, fingerprints=fingerprints, training_run=training_run, by=by,
                         notes=notes)
    if quiet:
        print(row["release_id"])
        return int(ExitCode.PASS)
    console = make_console()
    checks = ", ".join(f"{c['run_id'][:12]}={c['verdict']}" for c in row["data_checks"]) or "none"
    console.print(f"release {row['release_id']} recorded · decision {decision} ({row['verdict']}) · data checks: "
                  f"{checks}", markup=False, soft_wrap=True)
    return int(ExitCode.PASS)


def run_release_list(*, db: str | None) -> int:
    from rich.table import Table

    from gate.store.releases import current_release, list_releases

    current = current_release(db)
    table = Table(title="releases", title_justify="left")
    for col in ("release", "created", "by", "decision", "verdict", "scorecard", "data checks", "current"):
        table.add_column(col, overflow="fold")
    for r in list_releases(db):
        checks = ", ".join(c["verdict"] for c in r["data_checks"] or []) or "–"
        table.add_row(r["release_id"], f"{r['created_at']:%Y-%m-%d %H:%M}", r["created_by"] or "",
                      r["decision_id"][:12], r["verdict"], f"{r['scorecard']} {r['scorecard_version']}", checks,
                      "*" if r["release_id"] == current else "")
    make_console().print(table)
    return int(ExitCode.PASS)


def run_release_show(*, release_id: str, db: str | None) -> int:
    from gate.store.releases import current_release, get_release

    r = get_release(release_id, db)
    r["current"] = current_release(db) == release_id
    print(json.dumps(r, indent=2, default=str))
    return int(ExitCode.PASS)


def run_promote(*, release_id: str, by: str | None, db: str | None, quiet: bool = False) -> int:
    """Promotes; `quiet` keeps the verdict line and leaves out the refusal reasons."""
    from gate.release.promote import promote
    from gate.release.record import who

    console = make_console()
    status, reasons = promote(release_id, by=who(by), db=db)
    if status == "refused":
        console.print(f"REFUSED: {release_id} is not promoted; current is unchanged", markup=False)
        for r in [] if quiet else reasons:
            console.print(f"  - {r}", markup=False, soft_wrap=True)
        return int(ExitCode.GATE_FAILED)
    if status == "already-current":
        console.print(f"{release_id} is already current; nothing changed", markup=False)
        return int(ExitCode.PASS)
    console.print(f"PROMOTED: current -> {release_id} (by {who(by)})", markup=False)
    return int(ExitCode.PASS)


def run_rollback(*, release_id: str | None, reason: str, by: str | None, db: str | None) -> int:
    from gate.release.promote import rollback
    from gate.release.record import who

    old, new = rollback(release_id, reason=reason, by=who(by), db=db)
    make_console().print(f"ROLLED BACK: current {old} -> {new} (by {who(by)}: {reason.strip()})", markup=False,
                         soft_wrap=True)
    return int(ExitCode.PASS)


def run_watch(*, metrics: str, scorecard_path: str, release_id: str | None, db: str | None, record: bool,
              rollback: bool = False, follow: bool = False, interval_s: float = 10.0,
              duration_s: float | None = None) -> int:
    """Prints what gate.release.watch_loop judged: the triggers' table, then ROLLBACK (and the rollback when
    `--rollback`) or OK."""
    from rich.table import Table

    from gate.release.watch_loop import roll_back_watched, watch_release

    console = make_console()
    w = watch_release(metrics=metrics, scorecard_path=scorecard_path, release_id=release_id, db=db, record=record,
                      rollback=rollback, follow=follow, interval_s=interval_s, duration_s=duration_s,
                      progress=lambda line: console.print(line, markup=False, soft_wrap=True))
    title = f"gate watch · {w.scorecard} · {w.label}" + (f" · release {w.watched}" if w.watched else "")
    table = Table(title=title, title_justify="left")
    for col in ("trigger", "metric", "observed", "rule", "n", "result"):
        table.add_column(col, overflow="fold")
    for r in w.results:
        obs = "–" if r["observed"] is None else f"{r['observed']:.4g}"
        table.add_row(r["trigger"], r["metric"], obs, f"{r['aggregate']} {r['op']} {r['threshold']:g}", str(r["n"]),
                      "[red]FIRED[/]" if r["fired"] else r["note"])
    console.print(table)
    if w.other:
        console.print(f"{w.other} rows about other releases left out", markup=False)
    if w.fired:
        console.print(f"ROLLBACK: {w.why}" + (f" · release {w.watched}" if w.watched else ""), markup=False,
                      soft_wrap=True)
        if rollback:
            old, new_current = roll_back_watched(w, metrics, db)
            console.print(f"ROLLED BACK: current {old} -> {new_current}", markup=False)
        return int(ExitCode.GATE_FAILED)
    console.print("OK: no rollback trigger fired", markup=False)
    return int(ExitCode.PASS)
