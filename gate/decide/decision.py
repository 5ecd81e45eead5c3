"""From paired items and a scorecard's gates to one decision: PROMOTE / BLOCK, the target check, or an A/A floor.

Three modes share one path so they can never disagree on how a gate is computed:
- compare: candidate vs frozen baseline; PROMOTE only when every blocking gate passes (Holm across tested gates).
- baseline_only: the frozen baseline alone against the absolute and must-pass gates, before any training; when it
  already meets them the target needs no training, and the record says so.
- candidate_only: a trained candidate (an adapter) scored without a baseline. It is decided as a comparison whose
  baseline is missing: its absolute gates are evaluated, its paired gates cannot pass, so it BLOCKs (exit 100).
  A CI job that forgets `--baseline` must not promote a broken adapter on the baseline-first check's exit 0.
- aa: the baseline against itself (two seeds or two epochs); the spread of its differences is the noise floor, and a
  non-inferiority margin below it is a gate that identical models would fail by chance.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np

from gate.decide import power, stats
from gate.decide.align import Aligned
from gate.decide.gates import Context, apply_holm, evaluate_gate
from gate.errors import ExitCode, GateError

VERDICT_EXIT = {"PROMOTE": ExitCode.PASS, "BLOCK": ExitCode.GATE_FAILED, "TARGET_MET": ExitCode.PASS,
                "TARGET_NOT_MET": ExitCode.PASS, "NOISE_FLOOR": ExitCode.PASS}
COMPARISON_RESAMPLES = 10_000


@dataclass
class Decision:
    decision_id: str
    created_at: datetime
    mode: str
    verdict: str
    scorecard: dict[str, Any]
    baseline_run: str | None
    candidate_run: str | None
    n_pairs: int
    alignment: dict[str, Any]
    gates: list[dict[str, Any]]
    comparisons: list[dict[str, Any]]
    warnings: list[str] = field(default_factory=list)
    noise_floor: dict[str, float] = field(default_factory=dict)
    seed: int = stats.DEFAULT_SEED
    resamples: int = stats.DEFAULT_RESAMPLES

    @property
    def exit_code(self) -> int:
        return int(VERDICT_EXIT[self.verdict])

    @property
    def summary(self) -> str:
        failed = [g["gate"] for g in self.gates if g["verdict"] == "fail" and g["severity"] == "block"]
        if self.verdict == "PROMOTE":
            return f"PROMOTE: all {sum(g['verdict'] == 'pass' for g in self.gates)} evaluated gates pass"
        if self.verdict == "BLOCK" and self.mode == "candidate_only":
            return (f"BLOCK: the candidate was scored without a baseline, so it is not promoted; {len(failed)} "
                    f"gate(s) failed or could not be evaluated: {', '.join(failed)}")
        if self.verdict == "BLOCK":
            return f"BLOCK: {len(failed)} gate(s) failed: {', '.join(failed)}"
        if self.verdict == "TARGET_MET":
            return ("TARGET_MET: the baseline already meets every absolute gate of this scorecard; training is not "
                    "needed for this target")
        if self.verdict == "TARGET_NOT_MET":
            return f"TARGET_NOT_MET: the baseline fails {', '.join(failed)}; training has something to do"
        return f"NOISE_FLOOR: A/A differences measured for {len(self.noise_floor)} paired gate(s)"

    def to_json(self) -> dict[str, Any]:
        return {"decision_id": self.decision_id, "created_at": self.created_at.isoformat(), "mode": self.mode,
                "verdict": self.verdict, "exit_code": self.exit_code, "summary": self.summary,
                "scorecard": self.scorecard, "baseline_run": self.baseline_run, "candidate_run": self.candidate_run,
                "n_pairs": self.n_pairs, "alignment": self.alignment, "gates": self.gates,
                "comparisons": self.comparisons, "warnings": self.warnings, "noise_floor": self.noise_floor,
                "seed": self.seed, "resamples": self.resamples}

    def record_row(self) -> dict[str, Any]:
        return {"decision_id": self.decision_id, "created_at": self.created_at, "mode": self.mode,
                "verdict": self.verdict, "exit_code": self.exit_code, "scorecard": self.scorecard["name"],
                "scorecard_version": self.scorecard["version"], "scorecard_sha256": self.scorecard["sha256"],
                "baseline_run": self.baseline_run, "candidate_run": self.candidate_run, "n_pairs": self.n_pairs,
                "alignment": self.alignment, "noise_floor": self.noise_floor, "warnings": self.warnings,
                "summary": self.summary, "seed": self.seed, "resamples": self.resamples}


def item_flags(scorecard: Any) -> dict[tuple[str, str], dict[str, Any]]:
    """(suite, id) -> the suite row's `cluster` / `critical` / `must_pass` (the only extras the gates read)."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for suite in scorecard.suites:
        for it in suite.items:
            flags = {k: it.extra[k] for k in ("cluster", "critical", "must_pass") if k in it.extra}
            if flags:
                out[(suite.name, it.id)] = flags
    return out


def comparisons(ctx: Context) -> list[dict[str, Any]]:
    """Every metric per suite x category ('all' first): delta, 95 % interval, two-sided p, SE. Evidence for the
    report and the dashboard; the gates alone decide."""
    a = ctx.aligned
    out: list[dict[str, Any]] = []
    for suite in sorted(set(a.suites)):
        in_suite = a.suites == suite
        for cat in ["all", *sorted(set(a.categories[in_suite]))]:
            mask = in_suite if cat == "all" else in_suite & (a.categories == cat)
            clusters = ctx.clusters(mask, "auto")
            base, cand = a.base[mask], a.cand[mask]
            boot = stats.paired_bootstrap(base, cand, clusters=clusters, resamples=ctx.resamples, seed=ctx.seed)
            lo, hi = boot.interval(0.95)
            for j, (scorer, key) in enumerate(a.metrics):
                keep = ~(np.isnan(base[:, j]) | np.isnan(cand[:, j]))
                if not keep.any():
                    continue
                b_v, c_v = base[keep, j], cand[keep, j]
                row = {"suite": suite, "scorer": scorer, "key": key, "category": cat, "n_pairs": int(keep.sum()),
                       "baseline": float(b_v.mean()), "candidate": float(c_v.mean()),
                       "delta": float(c_v.mean() - b_v.mean()), "ci_low": _f(lo[j]), "ci_high": _f(hi[j]),
                       "b": None, "c": None, "n_clusters": boot.n_clusters if clusters is not None else None}
                if stats.is_binary(b_v, c_v) and clusters is None:
                    b, c = stats.discordant(b_v, c_v)
                    row.update(test="mcnemar", p_value=stats.mcnemar_exact(b, c), b=b, c=c)
                else:
                    col = boot.boot[:, j]
                    col = col[~np.isnan(col)]
                    p = min(1.0, 2 * min(float(np.mean(col <= 0)), float(np.mean(col >= 0)))) if len(col) else None
                    row.update(test="paired_bootstrap", p_value=p)
                se, _ = stats.clustered_se(cand[:, j] - base[:, j], clusters)
                row["se"] = _f(se)
                out.append(row)
    return out


def _f(x: Any) -> float | None:
    x = float(x)
    return None if np.isnan(x) else x


def decide(scorecard: Any, aligned: Aligned, *, mode: str = "compare", seed: int = stats.DEFAULT_SEED,
           resamples: int = stats.DEFAULT_RESAMPLES, noise_floor: dict[str, float] | None = None) -> Decision:
    """Evaluates every gate of the scorecard on the aligned runs and sets the verdict for the mode."""
    if not scorecard.gates:
        raise GateError("the scorecard declares no gates: nothing to decide", file=scorecard.path, field="gates")
    if aligned.n == 0:
        raise GateError("no paired items: the runs share no (suite, item id, prompt hash)")
    if resamples < 10_000:
        raise GateError("--resamples must be at least 10000 for a release decision")
    ctx = Context(aligned=aligned, item_flags=item_flags(scorecard), mode=mode, seed=seed, resamples=resamples)
    rows = [evaluate_gate(g, ctx) for g in scorecard.gates]
    apply_holm(rows)
    if mode in ("compare", "candidate_only"):
        for r in rows:  # a paired gate that could not be computed is no evidence of improvement: it blocks
            if r["verdict"] == "skip" and r["rule"] in ("superiority", "non_inferiority"):
                r["verdict"] = "fail"
                r["detail"] = f"not evaluated, so not passed: {r['detail']}"
    if mode in ("compare", "baseline_only", "candidate_only"):
        # an absolute gate nobody measured (latency from a cached run, a metric the run lacks) is no evidence that
        # the threshold holds: it blocks unless the scorecard says `on_unmeasured: warn` for that gate
        for r, g in zip(rows, scorecard.gates, strict=True):
            if r["verdict"] == "skip" and r["rule"] == "absolute":
                how = g.get("on_unmeasured", "block")
                if how == "block":
                    r["verdict"] = "fail"
                    r["detail"] = (f"not measured, so not passed (on_unmeasured: block; `on_unmeasured: warn` only "
                                   f"warns): {r['detail']}")
                else:
                    r["detail"] += " (on_unmeasured: warn: does not block)"
    for r, g in zip(rows, scorecard.gates, strict=True):
        # items its scorer could not score are no evidence either way: the gate fails, naming them
        err = aligned.scorer_errors.get(g["scorer"])
        r["scorer_errors"] = err["count"] if err else 0
        if err:
            r["verdict"] = "fail"
            r["detail"] = (f"{err['count']} item(s) not scored (scorer error: {', '.join(err['examples'][:5])}), "
                           f"so not passed; {r['detail']}")
    warnings: list[str] = []
    for scorer, err in sorted(aligned.scorer_errors.items()):
        warnings.append(f"scorer {scorer} failed on {err['count']} item(s): {', '.join(err['examples'])}; a run "
                        f"with scorer errors is never promoted")
    for name, prob in aligned.problems.items():
        warnings.append(f"{prob['count']} item(s) {name.replace('_', ' ')} were left out of the pairs: "
                        f"{', '.join(prob['examples'])}")
    for r in rows:
        if r["verdict"] == "skip":
            warnings.append(f"gate {r['gate']} skipped: {r['detail']}")
        elif (tight := power.margin_warning(r)) is not None:
            warnings.append(tight)
    floors: dict[str, float] = {}
    if mode == "aa":
        for r in rows:
            if r["rule"] in ("superiority", "non_inferiority") and r["ci_low"] is not None:
                floors[r["gate"]] = max(abs(r["ci_low"]), abs(r["ci_high"] or 0.0), abs(r["observed"] or 0.0))
                if r["rule"] == "superiority" and r["verdict"] == "pass":
                    warnings.append(f"gate {r['gate']}: the baseline 'improved' on itself (false alarm at "
                                    f"p = {r['p_holm']:.3g})")
        ref = floors
    else:
        ref = noise_floor or {}
    for r in rows:
        if r["rule"] == "non_inferiority" and r["gate"] in ref and float(r["margin"] or 0) < ref[r["gate"]]:
            warnings.append(f"gate {r['gate']}: margin {float(r['margin'] or 0):g} is below the measured A/A noise "
                            f"floor {ref[r['gate']]:.3g}: identical models can fail it by chance")
    if mode in ("compare", "candidate_only"):
        blocking = [r for r in rows if r["severity"] == "block"]
        verdict = "PROMOTE" if all(r["verdict"] != "fail" for r in blocking) and any(
            r["verdict"] == "pass" for r in blocking) and not aligned.scorer_errors else "BLOCK"
    elif mode == "baseline_only":
        evaluated = [r for r in rows if r["verdict"] != "skip" and r["severity"] == "block"]
        verdict = "TARGET_MET" if evaluated and all(r["verdict"] == "pass" for r in evaluated) else "TARGET_NOT_MET"
        if not evaluated:
            warnings.append("no absolute or must-pass gate could be evaluated on the baseline alone")
    elif mode == "aa":
        verdict = "NOISE_FLOOR"
    else:
        raise GateError(f"unknown decision mode '{mode}'")
    run = aligned.candidate_run or aligned.baseline_run or {}
    return Decision(
        decision_id=uuid.uuid4().hex, created_at=datetime.now(UTC), mode=mode, verdict=verdict,
        scorecard={"name": scorecard.name, "version": scorecard.version, "sha256": scorecard.sha256,
                   "suite_hashes": scorecard.suite_hashes, "recorded_sha256": run.get("scorecard_sha256")},
        baseline_run=aligned.baseline_run["run_id"] if aligned.baseline_run else None,
        candidate_run=aligned.candidate_run["run_id"] if aligned.candidate_run else None, n_pairs=aligned.n,
        alignment=aligned.problems, gates=rows,
        comparisons=comparisons(ctx) if mode in ("compare", "aa") else [], warnings=warnings,
        noise_floor=floors if mode == "aa" else dict(noise_floor or {}), seed=seed, resamples=resamples)
