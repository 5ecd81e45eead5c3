"""The scorecard's gates, each evaluated on the paired items into one row of evidence.

Rules (scorecards/*.yaml `gates:`):
- superiority: the candidate must be better (one-sided). Binary metrics: exact McNemar on discordant pairs;
  otherwise the paired bootstrap (p = share of resampled differences <= 0) or a paired t-test.
- non_inferiority: the candidate must not be worse by more than `margin` (p = share of resampled differences
  beyond -margin, i.e. the one-sided bootstrap bound sits above -margin when p <= alpha).
- absolute: the model under test's aggregate (mean, or p95 etc. for latency and memory) against `threshold`;
  operations metrics that were not measured are skipped and say so, never pass silently.
- no_critical_failures: every must-pass item (gate `items:`, or suite rows with `critical: true`) passes one by one,
  whatever the p-values say (two guards: a broad test plus a per-item rule).
Clustered items (a suite row's `cluster` field, or `cluster: category`) use the cluster bootstrap and a clustered
z-test instead of McNemar, whose exactness assumes independent items.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from gate.decide import power, stats
from gate.decide.align import Aligned

OPS_AGGREGATES = ("p50", "p95", "p99", "max", "min")
_TIE = 1e-9  # relative: resampled differences this close to the bound are ties with it


@dataclass
class Context:
    """What every gate needs besides its own spec: the pairs, the suites' item flags, and the bootstrap settings."""

    aligned: Aligned
    item_flags: dict[tuple[str, str], dict[str, Any]]  # (suite, id) -> suite row extras (cluster, critical)
    mode: str  # compare | baseline_only | candidate_only | aa
    seed: int = stats.DEFAULT_SEED
    resamples: int = stats.DEFAULT_RESAMPLES

    def clusters(self, mask: np.ndarray, how: str) -> np.ndarray | None:
        a = self.aligned
        if how == "none":
            return None
        if how == "category":
            return a.categories[mask]
        labels = [self.item_flags.get((s, i), {}).get("cluster") for s, i in zip(a.suites[mask], a.item_ids[mask],
                                                                                    strict=True)]
        if not any(v is not None for v in labels):
            return None
        return np.array([f"{v}" if v is not None else f"item:{k}" for k, v in enumerate(labels)], dtype=object)


def _finite(x: Any) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def _base_row(g: dict[str, Any]) -> dict[str, Any]:
    return {"gate": g["name"], "rule": g["rule"], "scorer": g["scorer"], "metric": g["metric"],
            "suite": g.get("suite"), "category": g.get("category"), "test": None,
            "direction": g.get("direction", "higher_is_better"), "alpha": float(g.get("alpha", 0.05)),
            "margin": g.get("margin"), "threshold": g.get("threshold"), "baseline": None, "candidate": None,
            "observed": None, "ci_low": None, "ci_high": None, "p_value": None, "p_holm": None, "n": 0,
            "verdict": "skip", "severity": g.get("severity", "block"), "detail": "", "power": None}


def _scope(g: dict[str, Any], a: Aligned) -> np.ndarray:
    mask = np.ones(a.n, dtype=bool)
    if g.get("suite"):
        mask &= a.suites == g["suite"]
    if g.get("category"):
        mask &= a.categories == g["category"]
    return mask


def evaluate_gate(g: dict[str, Any], ctx: Context) -> dict[str, Any]:
    """One gate -> one evidence row (verdict 'pass' / 'fail' / 'skip'; Holm is applied across rows afterwards)."""
    row = _base_row(g)
    a = ctx.aligned
    j = a.column(g["scorer"], g["metric"])
    if j is None and g["rule"] == "absolute":
        return _absolute_from_run_metrics(g, row, ctx)
    if j is None:
        row["detail"] = f"not measured: no {g['scorer']}.{g['metric']} scores in the run(s)"
        return row
    mask = _scope(g, a)
    sign = -1.0 if row["direction"] == "lower_is_better" else 1.0
    rule = g["rule"]
    if rule in ("superiority", "non_inferiority"):
        if ctx.mode == "baseline_only":
            row["detail"] = "needs a candidate: evaluated by `gate decide` once there is one"
            return row
        if ctx.mode == "candidate_only":
            row["detail"] = "no baseline run: the candidate was scored alone (pair it: --baseline, `gate decide`)"
            return row
        return _paired(g, row, ctx, mask, j, sign)
    subject = a.cand if a.candidate_run is not None else a.base
    if rule == "absolute":
        return _absolute(g, row, ctx, mask, subject[:, j])
    if rule == "no_critical_failures":
        return _critical(g, row, ctx, mask, subject[:, j], sign)
    raise ValueError(f"unknown rule {rule!r}")


def _paired(g: dict[str, Any], row: dict[str, Any], ctx: Context, mask: np.ndarray, j: int,
            sign: float) -> dict[str, Any]:
    a = ctx.aligned
    base, cand = a.base[mask, j], a.cand[mask, j]
    keep = ~(np.isnan(base) | np.isnan(cand))
    clusters = ctx.clusters(mask, g.get("cluster", "auto"))
    if clusters is not None:
        clusters = clusters[keep]
    base, cand = base[keep], cand[keep]
    n = len(base)
    row["n"] = n
    if n == 0:
        row["detail"] = "not measured: no scored pairs in scope"
        return row
    alpha = row["alpha"]
    margin = float(g.get("margin") or 0.0) if g["rule"] == "non_inferiority" else 0.0
    # improvement = (cand - base) oriented so that positive is better for this metric
    boot = stats.paired_bootstrap(sign * base, sign * cand, clusters=clusters, resamples=ctx.resamples,
                                  seed=ctx.seed)
    imp = boot.boot[:, 0]
    lo_i, hi_i = boot.lower(alpha)[0], boot.upper(alpha)[0]
    delta = float(np.mean(cand) - np.mean(base))
    row.update(baseline=float(np.mean(base)), candidate=float(np.mean(cand)), observed=delta)
    # the interval is reported on the metric's own scale (cand - base), one-sided at 1 - alpha on the side tested
    lo, hi = (lo_i, hi_i) if sign > 0 else (-hi_i, -lo_i)
    row.update(ci_low=_finite(lo), ci_high=_finite(hi))
    binary = stats.is_binary(base, cand)
    test = g.get("test") or ("mcnemar" if binary else "paired_bootstrap")
    if test == "mcnemar" and g["rule"] == "non_inferiority":
        test = "paired_bootstrap"  # McNemar tests "no difference"; a margin needs the interval
    elif test == "mcnemar" and not binary:
        test = "paired_bootstrap"
        row["detail"] = "values are not 0/1: McNemar does not apply, paired bootstrap used; "
    if test == "mcnemar" and clusters is not None:
        se, g_n = stats.clustered_se(sign * (cand - base), clusters)
        test = "cluster_z"
        shift = sign * delta + margin
        p = stats.z_pvalue(shift / se) if se and se > 0 else (0.0 if shift > 0 else 1.0)
        row["detail"] += f"{g_n} clusters: clustered z-test instead of McNemar; "
    elif test == "mcnemar":
        b, c = stats.discordant(sign * base + (1 - sign) / 2, sign * cand + (1 - sign) / 2)
        p = stats.mcnemar_exact(b, c, "greater")
        row["detail"] += f"discordant pairs: {b} lost, {c} won; "
        se = None
    elif test == "paired_t":
        p = stats.paired_t(sign * (cand - base), shift=margin)
        se = float(np.std(cand - base, ddof=1) / np.sqrt(n)) if n > 1 else None
    else:
        test = "paired_bootstrap"
        # Monte Carlo p-value (count + 1) / (B + 1): never exactly 0 from a finite number of resamples. H0 is
        # "improvement <= -margin" (0 for superiority), so a resample AT the bound counts against the candidate:
        # three identical pairs at margin 0 are no evidence of non-inferiority. `_TIE` absorbs float rounding
        # (0.3 - 0.1 + 0.5 - 0.7 is 5.6e-17, not 0), which would otherwise turn an exact tie into a win.
        bound = 0.0 if g["rule"] == "superiority" else -margin
        beyond = np.sum(imp <= bound + _TIE * max(1.0, abs(bound), float(np.nanmax(np.abs(imp), initial=0.0))))
        p = float((beyond + 1) / (len(imp) + 1))
        se = float(boot.se()[0])
    if clusters is not None and test == "paired_bootstrap":
        row["detail"] += f"cluster bootstrap over {boot.n_clusters} clusters; "
    row["test"] = test
    row["p_value"] = float(p)
    # what this gate could see at its n: the minimum detectable change at 80% power and the power at the observed
    # change, from the gate's own test
    row["power"] = power.gate_power(
        rule=g["rule"], test=test, n=n, alpha=alpha, margin=margin, improvement=sign * delta,
        disc=float(np.mean(base != cand)) if test == "mcnemar" else None, se=se, binary=binary)
    what = "improvement" if g["rule"] == "superiority" else f"no drop beyond {margin:g}"
    if g["rule"] == "non_inferiority" and margin == 0:
        row["detail"] += "margin 0 asks for a proven improvement (a tie fails); "
    row["detail"] += f"{what} tested one-sided at alpha {alpha:g} over {n} pairs"
    return row


def _absolute(g: dict[str, Any], row: dict[str, Any], ctx: Context, mask: np.ndarray,
              values: np.ndarray) -> dict[str, Any]:
    values = values[mask]
    values = values[~np.isnan(values)]
    agg = g.get("aggregate", "mean")
    row["n"] = len(values)
    row["test"] = f"threshold ({agg})"
    if not len(values):
        row["detail"] = f"not measured: no {g['scorer']}.{g['metric']} values (operations need an uncached run)"
        return row
    observed = stats.percentile(values, agg)
    higher = row["direction"] == "higher_is_better"
    ok = observed >= float(g["threshold"]) if higher else observed <= float(g["threshold"])
    row["observed"] = observed
    row["candidate" if ctx.aligned.candidate_run is not None else "baseline"] = observed
    if agg == "mean":
        boot = stats.bootstrap_mean(values, clusters=None, resamples=ctx.resamples, seed=ctx.seed)
        lo, hi = boot.interval(1 - 2 * row["alpha"])
        row.update(ci_low=_finite(lo[0]), ci_high=_finite(hi[0]))
    row["verdict"] = "pass" if ok else "fail"
    row["detail"] = (f"{agg} {observed:.4g} {'>=' if higher else '<='} {float(g['threshold']):g} required "
                     f"over {len(values)} items")
    return row


def _absolute_from_run_metrics(g: dict[str, Any], row: dict[str, Any], ctx: Context) -> dict[str, Any]:
    """Run-level measurements (peak memory of the engine per suite) have no per-item values: the gate reads the
    run's recorded metrics instead, the worst suite in scope deciding."""
    agg = g.get("aggregate", "mean")
    rows = [m for m in ctx.aligned.subject_metrics if m["scorer"] == g["scorer"] and m["key"] == g["metric"]
            and m["category"] == (g.get("category") or "all") and (not g.get("suite") or m["suite"] == g["suite"])]
    values = [m.get(agg) if agg in ("p50", "p95", "p99") and m.get(agg) is not None else m["mean"] for m in rows]
    values = [float(v) for v in values if v is not None]
    row["test"] = f"threshold ({agg}, run-level)"
    if not values:
        row["detail"] = (f"not measured: no {g['scorer']}.{g['metric']} values in the run (operations need an "
                         "uncached run)")
        return row
    higher = row["direction"] == "higher_is_better"
    observed = min(values) if higher else max(values)
    ok = observed >= float(g["threshold"]) if higher else observed <= float(g["threshold"])
    row.update(observed=observed, n=int(sum(m["n"] or 0 for m in rows)), verdict="pass" if ok else "fail")
    row["candidate" if ctx.aligned.candidate_run is not None else "baseline"] = observed
    row["detail"] = (f"{agg} {observed:.4g} {'>=' if higher else '<='} {float(g['threshold']):g} required "
                     f"(run-level measurement, worst of {len(values)} suite(s))")
    return row


def _critical(g: dict[str, Any], row: dict[str, Any], ctx: Context, mask: np.ndarray, values: np.ndarray,
              sign: float) -> dict[str, Any]:
    a = ctx.aligned
    listed = set(g.get("items") or [])
    flagged = {k for k, f in ctx.item_flags.items() if f.get("critical") is True or f.get("must_pass") is True}
    picks = []
    for r in np.where(mask)[0]:
        key = (a.suites[r], a.item_ids[r])
        if (listed and key[1] in listed) or (not listed and (not flagged or key in flagged)):
            picks.append(r)
    scope = "listed" if listed else ("flagged critical" if flagged else "all (no item is flagged critical)")
    present = {a.item_ids[r] for r in picks}
    absent = sorted(listed - present)
    failed = []
    scored = 0
    for r in picks:
        v = values[r]
        if math.isnan(v):
            continue
        scored += 1
        if (v < 1.0) if sign > 0 else (v > 0.0):
            failed.append(str(a.item_ids[r]))
    row["n"] = scored
    row["test"] = "per item"
    row["observed"] = float(len(failed))
    row["threshold"] = 0.0
    if absent:
        failed_txt = ", ".join(absent[:10])
        row.update(verdict="fail", detail=f"{len(absent)} must-pass item(s) not answered: {failed_txt}")
        return row
    if scored == 0:
        row["detail"] = f"not measured: no must-pass item has a {g['metric']} score ({scope})"
        return row
    row["verdict"] = "fail" if failed else "pass"
    row["detail"] = (f"{len(failed)} of {scored} must-pass items ({scope}) failed"
                     + (f": {', '.join(sorted(failed)[:10])}" if failed else ""))
    return row


def apply_holm(rows: list[dict[str, Any]]) -> None:
    """Holm across the tested gates of one decision; a tested gate passes only if its adjusted p <= its alpha."""
    adjusted = stats.holm([r["p_value"] if r["p_value"] is not None else float("nan") for r in rows])
    for r, p in zip(rows, adjusted, strict=True):
        if r["p_value"] is None:
            continue
        r["p_holm"] = float(p)
        r["verdict"] = "pass" if p <= r["alpha"] else "fail"
