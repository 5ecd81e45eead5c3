"""`gate release create|list|show`, `gate promote`, `gate rollback`, `gate watch`: thin faces over gate/release."""

from __future__ import annotations

import json
from datetime import UTC, datetime

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
    """Judge the triggers on what the source says about one release (`--release`, else current), once or, with
    `--follow`, on every poll until one fires or `--for` is over; `--rollback` moves current only off that release."""
    import time
    import uuid
    from pathlib import Path

    from gate.errors import GateError
    from gate.release.watch import (
        JsonlSource,
        PrometheusSource,
        Sample,
        evaluate_prometheus,
        evaluate_triggers,
        is_url,
        parse_selector,
        select_release,
        window_seconds,
    )
    from gate.score.scorecard import load_scorecard
    from gate.store.db import db_path

    sc = load_scorecard(scorecard_path, load_suites=False)
    if not sc.rollback_triggers:
        raise GateError("the scorecard declares no rollback_triggers", file=scorecard_path,
                        field="rollback_triggers")
    url = is_url(metrics)
    for i, t in enumerate(sc.rollback_triggers):
        try:
            window_seconds(t)
            if url:
                parse_selector(t["metric"])
        except GateError as exc:
            raise GateError(exc.message, file=scorecard_path, field=f"rollback_triggers[{i}].{exc.field}") from None
    current = None
    if Path(db_path(db)).exists():
        from gate.store.releases import current_release

        current = current_release(db)
    watched = release_id or current
    if rollback:
        # Only the release the metrics are about may be rolled back, and only while it is the one serving.
        if current is None:
            raise GateError("nothing is current in the record: --rollback has nothing to act on", field="--rollback")
        if watched != current:
            raise GateError(f"--rollback acts only on the current release: the metrics are about '{watched}', "
                            f"current is '{current}' (nothing changed)", field="--release")
    spans = [window_seconds(t) for t in sc.rollback_triggers]
    longest = max((w or 0.0) for w in spans)
    # an endpoint keeps only the scrapes the longest window can still need (bounded memory for a long --follow)
    source: JsonlSource | PrometheusSource = (PrometheusSource(metrics, keep_s=longest + 2 * interval_s) if url
                                              else JsonlSource(metrics))
    failures = 0
    console = make_console()
    rows: list[Sample] = []
    other = 0
    deadline = None if duration_s is None else time.monotonic() + duration_s
    last_line = ""
    while True:
        try:
            if isinstance(source, PrometheusSource):
                try:
                    source.scrape()
                    failures = 0
                except GateError as exc:
                    # following, a scrape that fails (a restarting server) is retried; three in a row end the watch
                    failures += 1
                    if not follow or not source.scrapes or failures >= 3:
                        raise
                    console.print(f"{datetime.now(UTC):%H:%M:%S} scrape failed ({failures} of 3): {exc}",
                                  markup=False, soft_wrap=True)
                    time.sleep(interval_s)
                    continue
                results = evaluate_prometheus(sc.rollback_triggers, source.scrapes)
            else:
                new = source.poll(final=not follow)
                if not follow and not new:
                    raise GateError("metrics file has no rows", file=metrics)
                kept, left = select_release(rows + new, watched, file=metrics)
                rows, other = kept, other + left
                if follow and all(spans) and rows and rows[-1].ts is not None:
                    # every trigger has a window: rows older than the longest can never count again
                    newest = max(r.ts for r in rows if r.ts is not None)
                    rows = [r for r in rows if r.ts is None or r.ts > newest - longest]
                results = evaluate_triggers(sc.rollback_triggers, rows, file=metrics)
        except KeyboardInterrupt:
            break
        fired = [r for r in results if r["fired"]]
        if not follow or fired or (deadline is not None and time.monotonic() >= deadline):
            break
        line = " · ".join(f"{r['trigger']}: {r['note']}" for r in results)
        if line != last_line:
            console.print(f"{datetime.now(UTC):%H:%M:%S} {line}", markup=False, soft_wrap=True)
            last_line = line
        try:
            time.sleep(interval_s if deadline is None else max(0.0, min(interval_s, deadline - time.monotonic())))
        except KeyboardInterrupt:
            break
    fired = [r for r in results if r["fired"]]
    verdict = "ROLLBACK" if fired else "OK"
    if record:
        from gate.store.releases import record_watch

        watch_id, at = uuid.uuid4().hex, datetime.now(UTC)
        record_watch([{"watch_id": watch_id, "watched_at": at, "scorecard": sc.name, "metrics_file": source.label,
                       "metrics_sha256": source.sha256(), "release_id": watched,
                       **{k: v for k, v in r.items() if k != "note"}, "verdict": verdict} for r in results], db)
    from rich.table import Table

    title = f"gate watch · {sc.name} · {source.label}" + (f" · release {watched}" if watched else "")
    table = Table(title=title, title_justify="left")
    for col in ("trigger", "metric", "observed", "rule", "n", "result"):
        table.add_column(col, overflow="fold")
    for r in results:
        obs = "–" if r["observed"] is None else f"{r['observed']:.4g}"
        table.add_row(r["trigger"], r["metric"], obs, f"{r['aggregate']} {r['op']} {r['threshold']:g}", str(r["n"]),
                      "[red]FIRED[/]" if r["fired"] else r["note"])
    console.print(table)
    if other:
        console.print(f"{other} rows about other releases left out", markup=False)
    if fired:
        why = ", ".join(r["trigger"] + " (" + r["note"] + ")" for r in fired)
        console.print(f"ROLLBACK: {why}" + (f" · release {watched}" if watched else ""), markup=False,
                      soft_wrap=True)
        if rollback:
            from gate.release.promote import rollback as do_rollback
            from gate.release.record import who

            name = source.label if url else Path(metrics).name
            old, new_current = do_rollback(None, reason=f"gate watch {name}: {why}", by=who(None), db=db,
                                           only_from=watched)
            console.print(f"ROLLED BACK: current {old} -> {new_current}", markup=False)
        return int(ExitCode.GATE_FAILED)
    console.print("OK: no rollback trigger fired", markup=False)
    return int(ExitCode.PASS)
