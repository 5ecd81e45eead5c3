"""`gate watch` as a use case: judge a scorecard's rollback triggers on what a metrics source says about one
release, once or on every poll, record the verdict, and (asked) roll back. The command only prints.

Why here and not in gate/commands: the polling loop, the record and the rollback are the release door's
behaviour; a service or a scheduler must be able to run them without a terminal (progress goes to a callback).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gate.errors import GateError
from gate.release.metrics_jsonl import JsonlSource, select_release
from gate.release.metrics_prometheus import PrometheusSource, evaluate_prometheus, is_url, parse_selector
from gate.release.watch import Sample, evaluate_triggers, window_seconds


@dataclass
class Watched:
    """What one watch judged: every trigger's result (`fired` those that fired), the release it was about, and
    how many rows were about other releases."""

    scorecard: str
    label: str
    watched: str | None
    results: list[dict[str, Any]]
    other: int = 0
    url: bool = False
    fired: list[dict[str, Any]] = field(default_factory=list)

    @property
    def why(self) -> str:
        return ", ".join(r["trigger"] + " (" + r["note"] + ")" for r in self.fired)


def _prepare(scorecard_path: str, metrics: str, release_id: str | None, db: str | None,
             rollback: bool) -> tuple[Any, bool, str | None]:
    """The scorecard's triggers checked (file:field errors), and the release the metrics are about."""
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
    return sc, url, watched


def watch_release(*, metrics: str, scorecard_path: str, release_id: str | None, db: str | None, record: bool,
                  rollback: bool = False, follow: bool = False, interval_s: float = 10.0,
                  duration_s: float | None = None, progress: Callable[[str], None] = lambda _line: None) -> Watched:
    """Judge the triggers once or, with `follow`, on every poll until one fires or `duration_s` is over; each
    changed status line (and a failed scrape) goes to `progress`. Records the verdict when `record`."""
    sc, url, watched = _prepare(scorecard_path, metrics, release_id, db, rollback)
    spans = [window_seconds(t) for t in sc.rollback_triggers]
    longest = max((w or 0.0) for w in spans)
    # an endpoint keeps only the scrapes the longest window can still need (bounded memory for a long --follow)
    source: JsonlSource | PrometheusSource = (PrometheusSource(metrics, keep_s=longest + 2 * interval_s) if url
                                              else JsonlSource(metrics))
    failures = 0
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
                    progress(f"{datetime.now(UTC):%H:%M:%S} scrape failed ({failures} of 3): {exc}")
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
            progress(f"{datetime.now(UTC):%H:%M:%S} {line}")
            last_line = line
        try:
            time.sleep(interval_s if deadline is None else max(0.0, min(interval_s, deadline - time.monotonic())))
        except KeyboardInterrupt:
            break
    out = Watched(sc.name, source.label, watched, results, other, url, [r for r in results if r["fired"]])
    if record:
        from gate.store.releases import record_watch

        watch_id, at = uuid.uuid4().hex, datetime.now(UTC)
        verdict = "ROLLBACK" if out.fired else "OK"
        record_watch([{"watch_id": watch_id, "watched_at": at, "scorecard": sc.name, "metrics_file": source.label,
                       "metrics_sha256": source.sha256(), "release_id": watched,
                       **{k: v for k, v in r.items() if k != "note"}, "verdict": verdict} for r in results], db)
    return out


def roll_back_watched(w: Watched, metrics: str, db: str | None) -> tuple[str | None, str | None]:
    """Moves current off the watched release for the triggers that fired: (old current, new current)."""
    from gate.release.promote import rollback as do_rollback
    from gate.release.record import who

    name = w.label if w.url else Path(metrics).name
    return do_rollback(None, reason=f"gate watch {name}: {w.why}", by=who(None), db=db, only_from=w.watched)
