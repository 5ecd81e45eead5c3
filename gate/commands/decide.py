"""`gate decide`: PROMOTE or BLOCK a candidate against its frozen baseline (exit 0 / 100), or measure the A/A noise
floor, or check the baseline alone against the target. Also the last step of `gate score`.

The use case (decide, record, write the reports) is gate.decide.usecase, which `gate score` and the service run
too; this module prints its result.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gate.report.console import make_console

if TYPE_CHECKING:
    from gate.decide.usecase import Decided
    from gate.requests import DecideRequest


def print_decided(decided: Decided, console: Any, *, quiet: bool = False) -> None:
    """The gates table (or, quiet, the one summary line) and where the reports and the record are."""
    from gate.decide.report import print_decision
    from gate.store.db import db_path

    decision = decided.decision
    if not quiet:
        print_decision(decision, console)
    else:
        console.print(decision.summary, markup=False, soft_wrap=True)
    where = f" · record: {db_path(decided.db)} (decision {decision.decision_id})" if decided.recorded else ""
    console.print(f"reports: {decided.md_path}, {decided.json_path}{where}", markup=False, soft_wrap=True)


def run_decide_command(req: DecideRequest) -> int:
    from gate.decide.usecase import decide_recorded_runs

    if req.scorecard_base is not None:  # the gates that decide come from the base: a loosening is refused
        from gate.score.trust import check_scorecard_change

        check_scorecard_change(req.scorecard, req.scorecard_base, allow=req.allow_scorecard_change)

    decided = decide_recorded_runs(scorecard_path=req.scorecard, db=req.db, out=req.out, comparison=req.comparison,
                                   baseline_run=req.baseline_run, candidate_run=req.candidate_run, aa=req.aa,
                                   baseline_only=req.baseline_only, seed=req.seed, resamples=req.resamples)
    print_decided(decided, make_console(), quiet=req.quiet)
    return decided.exit_code
