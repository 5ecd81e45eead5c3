"""Pairing baseline and candidate answers item by item, from the score tables `gate score` wrote to DuckDB.

A pair is the same (suite, item id) asked with the same prompt hash: equal hashes prove both models got
byte-identical requests. Items only one side has, and items whose prompts differ, are counted and named in the
decision, never silently dropped (lm-eval aligns by doc_hash for the same reason).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gate.errors import GateError
from gate.store import scores

EXAMPLE_IDS = 10  # ids quoted per alignment problem


@dataclass
class RunSide:
    """One run's per-item values: (suite, item_id) -> category, prompt hash, and (scorer, key) -> value."""

    run: dict[str, Any]
    items: dict[tuple[str, str], dict[str, Any]]
    values: dict[tuple[str, str], dict[tuple[str, str], float]]
    metrics: list[dict[str, Any]] = field(default_factory=list)  # score_metrics rows (run-level: peak memory)
    #: scorer -> the (suite, item id) it could not score (an exception while scoring): no evidence either way
    scorer_errors: dict[str, list[tuple[str, str]]] = field(default_factory=dict)


@dataclass
class Aligned:
    """The paired items and, per (scorer, key), a baseline and a candidate value per item (NaN = not scored)."""

    baseline_run: dict[str, Any] | None
    candidate_run: dict[str, Any] | None
    suites: np.ndarray
    item_ids: np.ndarray
    categories: np.ndarray
    metrics: list[tuple[str, str]]
    base: np.ndarray  # items x metrics
    cand: np.ndarray  # items x metrics
    problems: dict[str, Any] = field(default_factory=dict)
    subject_metrics: list[dict[str, Any]] = field(default_factory=list)  # the candidate's (else the only run's)
    #: scorer -> {"count", "examples": ["role:suite/item", ...]} over both runs (gate.decide.decision blocks on any)
    scorer_errors: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return len(self.item_ids)

    def column(self, scorer: str, key: str) -> int | None:
        try:
            return self.metrics.index((scorer, key))
        except ValueError:
            return None


def _run_row(con: Any, run_id: str) -> dict[str, Any]:
    row = scores.score_run_row(con, run_id)
    if row is None:
        raise GateError(f"no score run '{run_id}' in the record (see `gate score`)")
    return row


def find_runs(con: Any, *, comparison: str | None = None, baseline_run: str | None = None,
              candidate_run: str | None = None, scorecard: str | None = None) -> tuple[str | None, str | None]:
    """Run ids to compare: given ones, else those of one `gate score` comparison, else the newest complete one."""
    if baseline_run or candidate_run:
        return baseline_run, candidate_run
    if comparison is None:
        comparison = scores.newest_complete_comparison(con, scorecard)
        if comparison is None:
            raise GateError("no complete baseline-vs-candidate `gate score` run in the record; "
                            "pass --baseline-run and --candidate-run")
    rows = scores.comparison_runs(con, comparison)
    if not rows:
        raise GateError(f"no `gate score` comparison '{comparison}' in the record")
    roles = {r: i for r, i in rows}
    return roles.get("baseline"), roles.get("candidate")


def load_side(con: Any, run_id: str) -> RunSide:
    run = _run_row(con, run_id)
    if run["status"] != "complete":
        raise GateError(f"score run '{run_id}' is {run['status']}: rerun `gate score` to finish it before deciding")
    items = {(s, i): {"category": c, "prompt_hash": h} for s, i, c, h in scores.run_items(con, run_id)}
    # repeated epochs of one item are one paired unit: their mean is the item's value (epochs are not new items)
    values: dict[tuple[str, str], dict[tuple[str, str], float]] = {}
    for s, i, scorer, key, v in scores.run_item_values(con, run_id):
        values.setdefault((s, i), {})[(scorer, key)] = float("nan") if v is None else float(v)
    errors: dict[str, list[tuple[str, str]]] = {}
    for scorer, s, i in scores.run_scorer_errors(con, run_id):
        errors.setdefault(scorer, []).append((s, i))
    return RunSide(run, items, values, scores.run_level_metrics(con, run_id), errors)


def _examples(keys: list[tuple[str, str]]) -> list[str]:
    return [f"{s}/{i}" for s, i in sorted(keys)[:EXAMPLE_IDS]]


def align(base: RunSide | None, cand: RunSide | None) -> Aligned:
    """Pairs two runs (or wraps one, for baseline-only and single-model gates); reports what could not be paired."""
    sides = [s for s in (base, cand) if s is not None]
    if not sides:
        raise GateError("nothing to decide on: no score run given")
    problems: dict[str, Any] = {}
    if base is not None and cand is not None:
        if base.run["scorecard_sha256"] != cand.run["scorecard_sha256"]:
            raise GateError(f"baseline run {base.run['run_id']} and candidate run {cand.run['run_id']} answered "
                            "different scorecards (sha256 differs): they cannot be paired")
        missing = sorted(set(base.items) - set(cand.items))
        new = sorted(set(cand.items) - set(base.items))
        common = sorted(set(base.items) & set(cand.items))
        mismatch = [k for k in common if base.items[k]["prompt_hash"] != cand.items[k]["prompt_hash"]]
        bad = set(mismatch)
        keys = [k for k in common if k not in bad]
        for name, lst in (("missing_in_candidate", missing), ("new_in_candidate", new),
                          ("prompt_hash_mismatch", mismatch)):
            if lst:
                problems[name] = {"count": len(lst), "examples": _examples(lst)}
    else:
        keys = sorted(sides[0].items)
    metrics = sorted({m for s in sides for k in keys for m in s.values.get(k, {})})
    col = {m: j for j, m in enumerate(metrics)}

    def matrix(side: RunSide | None) -> np.ndarray:
        out = np.full((len(keys), len(metrics)), np.nan)
        if side is None:
            return out
        for r, k in enumerate(keys):
            for m, v in side.values.get(k, {}).items():
                out[r, col[m]] = v
        return out

    ref = sides[-1]
    scorer_errors: dict[str, dict[str, Any]] = {}
    for side in sides:
        # `failed`, not `keys`: the matrices below are built from the paired items' `keys` after this loop
        for scorer, failed in side.scorer_errors.items():
            e = scorer_errors.setdefault(scorer, {"count": 0, "examples": []})
            e["count"] += len(failed)
            e["examples"] += [f"{side.run.get('role', 'run')}:{k}" for k in _examples(failed)]
    return Aligned(
        baseline_run=base.run if base else None, candidate_run=cand.run if cand else None,
        suites=np.array([k[0] for k in keys], dtype=object), item_ids=np.array([k[1] for k in keys], dtype=object),
        categories=np.array([ref.items[k]["category"] for k in keys], dtype=object), metrics=metrics,
        base=matrix(base), cand=matrix(cand), problems=problems, subject_metrics=ref.metrics,
        scorer_errors=scorer_errors)


def load_aligned(db: str | None, *, comparison: str | None = None, baseline_run: str | None = None,
                 candidate_run: str | None = None, scorecard: str | None = None,
                 single: str | None = None, single_role: str = "baseline") -> Aligned:
    """Reads and pairs the runs to decide on (`single`: one run alone, as the baseline for the baseline-first
    target check, or as a candidate scored without a baseline, whose paired gates then cannot pass)."""
    from gate.store.db import connect

    with connect(db, read_only=True) as con:
        if not scores.has_score_runs(con):
            raise GateError("no `gate score` runs in the record yet", file=db)
        if single:
            side = load_side(con, single)
            return align(None, side) if single_role == "candidate" else align(side, None)
        b, c = find_runs(con, comparison=comparison, baseline_run=baseline_run, candidate_run=candidate_run,
                         scorecard=scorecard)
        if not b or not c:
            raise GateError("a decision needs both a baseline and a candidate run")
        return align(load_side(con, b), load_side(con, c))
