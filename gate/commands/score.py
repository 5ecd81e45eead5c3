"""`gate score` on the terminal: run candidate (and baseline) over a scorecard, record, report, then decide on the
scorecard's gates: exit 0 PROMOTE (or the baseline-only target check), 100 BLOCK, 1 could not run or incomplete.

This module parses nothing and decides nothing: the use case is gate.score.usecase (which the service runs too);
here are its progress bars and the printing of its result.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from rich.table import Table

from gate.report.console import make_console

if TYPE_CHECKING:
    from gate.requests import ScoreRequest
    from gate.score.usecase import Scored


def show_progress(console: Any) -> bool:
    """Bars only for a person at a terminal: in CI (`CI` set) or piped into a log they would be thousands of
    carriage-return lines, and the summary printed at the end says everything a log needs."""
    return bool(console.is_terminal) and not os.environ.get("CI")


@contextmanager
def progress_bars(console: Any, *, enabled: bool = True) -> Iterator[Any]:
    """A rich bar per model and suite ("candidate · triage-heldout  37/120  0:00:41"), or None where
    `show_progress` says no; the factory is what `run_score(progress=...)` calls."""
    if not (enabled and show_progress(console)):
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    bars = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=console)

    def factory(role: str, suite: str, total: int) -> Any:
        task = bars.add_task(f"{role} · {suite}", total=total)
        return lambda n: bars.advance(task, n)

    with bars:
        yield factory


def run_score_command(req: ScoreRequest) -> int:
    """`gate score` on the terminal: the use case (gate.score.usecase) with progress bars, then its result printed."""
    import sys

    if req.scorecard_base is not None:  # the gates that decide come from the base: a loosening is refused
        from gate.score.trust import check_scorecard_change

        check_scorecard_change(req.scorecard, req.scorecard_base, allow=req.allow_scorecard_change)

    from gate.score.usecase import prepare_request, run_prepared

    plan = prepare_request(req)
    console = make_console()
    for w in plan.warnings:  # on stderr: stdout stays the one result (or error) line CI logs show
        print(f"gate: warning: {w}", file=sys.stderr)
    with progress_bars(console, enabled=not req.quiet) as progress:
        scored = run_prepared(plan, progress=progress)
    print_scored(scored, console, quiet=req.quiet)
    return scored.exit_code


def print_scored(scored: Scored, console: Any, *, quiet: bool = False) -> None:
    """The summary table, each run's line, where the reports are, then the decision (gate.commands.decide)."""
    from gate.score.run import summary_rows
    from gate.store.db import db_path

    plan = scored.plan
    if not scored.complete:
        console.print(f"gate: run incomplete: requests failed after retries ({', '.join(scored.incomplete_runs())}); "
                      "rerun the same command to resume from the cache", soft_wrap=True, markup=False)
        return
    assert scored.data is not None
    if not quiet:
        table = Table(title=f"gate score · {plan.scorecard.name} {plan.scorecard.version}", title_justify="left")
        for col in ("suite", "category", "scorer", "key", "candidate", "baseline"):
            table.add_column(col, no_wrap=True)
        for row in summary_rows(scored.data["summary"]):
            table.add_row(*row)
        console.print(table)
    for r in scored.outcome.runs:
        # a scorer that raised is no score: said here too, not only in scores.md and the decision
        errors = f", {r.scorer_errors} scorer error(s) (never promoted)" if r.scorer_errors else ""
        console.print(f"{r.spec.role}: run {r.run_id} · {len(r.samples)} items, {r.cached} cached{errors} · "
                      f"{r.seconds:.1f}s", markup=False)
    console.print(f"reports: {plan.out}/scores.md, {plan.out}/scores.json · record: {db_path(plan.db)}",
                  markup=False)
    if scored.decided is not None:
        from gate.commands.decide import print_decided

        print_decided(scored.decided, console, quiet=quiet)


def run_scorecard_lint(*, path: str, quiet: bool) -> int:
    """Loads the scorecard (a bad one is its one-line error, exit 1) and lists what each scorer and gate will do."""
    from gate.errors import ExitCode
    from gate.score.lint import lint

    _, lines = lint(path)
    print(lines[0] if quiet else "\n".join(lines))
    return int(ExitCode.PASS)
