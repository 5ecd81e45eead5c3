"""The `gate decide` use case: decide, record, write decision.md/json; also the last step of `gate score`.

Why in the core and not in gate/commands: `gate score` runs it in the CLI and in the service's job worker, and
nothing may print from a service thread. It returns a `Decided` (the decision and where its reports are); the
command prints it. The decision is recorded before the reports are written, so a decision.md on disk always has
its row in DuckDB.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gate.errors import GateError


@dataclass
class Decided:
    """A decision made, recorded (when `recorded`) and written: what the faces show of it."""

    decision: Any  # gate.decide.decision.Decision
    json_path: Path
    md_path: Path
    recorded: bool
    db: str | None = None  # the record it went to (as given: None is GATE_DB or ./gate.duckdb)

    @property
    def exit_code(self) -> int:
        return int(self.decision.exit_code)


def check_scorecard(scorecard: Any, aligned: Any) -> list[str]:
    """The gates may evolve after scoring, the items may not: a changed suite file would pair different questions."""
    notes = []
    for run in (aligned.baseline_run, aligned.candidate_run):
        if run is None:
            continue
        if run["scorecard"] != scorecard.name:
            raise GateError(f"run {run['run_id']} answered scorecard '{run['scorecard']}', not '{scorecard.name}'",
                            file=scorecard.path)
        recorded = run["suite_hashes"]
        if isinstance(recorded, str):
            import json

            recorded = json.loads(recorded)
        for name, sha in (recorded or {}).items():
            if scorecard.suite_hashes.get(name, sha) != sha:
                raise GateError(f"suite '{name}' changed since run {run['run_id']} was scored (sha256 differs)",
                                file=scorecard.path)
        if run["scorecard_sha256"] != scorecard.sha256:
            notes.append(f"the scorecard changed since run {run['run_id']} was scored (same suites; gates as in "
                         "the file now)")
    return sorted(set(notes))


def decide_and_record(scorecard: Any, aligned: Any, *, mode: str, out: str, db: str | None, record: bool = True,
                      seed: int | None = None, resamples: int | None = None) -> Decided:
    """Decide on the scorecard's gates (with the newest A/A noise floor in compare mode), record, write reports."""
    from gate.decide import stats
    from gate.decide.decision import decide
    from gate.decide.report import write_decision
    from gate.store.db import db_path
    from gate.store.releases import latest_noise_floor, record_decision

    notes = check_scorecard(scorecard, aligned)
    floor = {}
    if mode == "compare" and record and Path(db_path(db)).exists():
        floor = latest_noise_floor(scorecard.name, db)
    decision = decide(scorecard, aligned, mode=mode, seed=stats.DEFAULT_SEED if seed is None else seed,
                      resamples=resamples or stats.DEFAULT_RESAMPLES, noise_floor=floor)
    decision.warnings[:0] = notes
    if record:
        record_decision(decision.record_row(), decision.gates, decision.comparisons, db)
    json_path, md_path = write_decision(decision, out)
    return Decided(decision, json_path, md_path, record, db)


def decide_recorded_runs(*, scorecard_path: str, db: str | None, out: str, comparison: str | None = None,
                         baseline_run: str | None = None, candidate_run: str | None = None, aa: bool = False,
                         baseline_only: str | None = None, seed: int | None = None, resamples: int | None = None,
                         record: bool = True) -> Decided:
    """`gate decide`: the runs named (or the newest complete comparison of the scorecard) paired and decided."""
    from gate.decide.align import load_aligned
    from gate.score.scorecard import load_scorecard

    if baseline_only and (aa or baseline_run or candidate_run or comparison):
        raise GateError("--baseline-only takes one run and no other run options")
    scorecard = load_scorecard(scorecard_path)
    if baseline_only:
        aligned = load_aligned(db, single=baseline_only)
        mode = "baseline_only"
    else:
        aligned = load_aligned(db, comparison=comparison, baseline_run=baseline_run, candidate_run=candidate_run,
                               scorecard=scorecard.name)
        mode = "aa" if aa else "compare"
    return decide_and_record(scorecard, aligned, mode=mode, out=out, db=db, record=record, seed=seed,
                             resamples=resamples)


def decide_after_score(scorecard: Any, runs: dict[str, str], *, out: str, db: str | None,
                       candidate_alone: bool = False) -> Decided:
    """`gate score`'s last step: with a baseline, the release decision; with one model, the baseline-first check
    of the absolute gates (is training needed at all for this target?), unless that one model is a trained
    candidate (`candidate_alone`: it has an adapter), which is decided without a baseline and cannot be promoted."""
    from gate.decide.align import load_aligned

    if "baseline" in runs and "candidate" in runs:
        aligned = load_aligned(db, baseline_run=runs["baseline"], candidate_run=runs["candidate"])
        return decide_and_record(scorecard, aligned, mode="compare", out=out, db=db)
    if candidate_alone:
        aligned = load_aligned(db, single=next(iter(runs.values())), single_role="candidate")
        return decide_and_record(scorecard, aligned, mode="candidate_only", out=out, db=db)
    aligned = load_aligned(db, single=next(iter(runs.values())))
    return decide_and_record(scorecard, aligned, mode="baseline_only", out=out, db=db)
