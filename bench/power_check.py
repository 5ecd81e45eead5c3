"""Power of the paired gates: gate.decide.power's formulas against simulation of the gates' own tests.

Paired 0/1 items are drawn as multinomial counts of (both pass, baseline only, candidate only, neither) from a
baseline rate, a true change and a discordance (share of items the two models disagree on). Each simulated
comparison is judged the gate's way:
- superiority: exact one-sided McNemar, gate.decide.stats.mcnemar_exact (the gate's own function), p <= alpha;
- non-inferiority: the paired bootstrap bound, p = (resamples at or below -margin + 1) / (R + 1) <= alpha. The
  bootstrap of a mean of -1/0/+1 changes depends only on the counts, so its resamples are drawn as multinomial counts
  (the same distribution stats.paired_bootstrap's weights give, vectorised over all simulations); a smaller run
  through stats.paired_bootstrap itself checks that shortcut.
Checks: A/A false alarms (no true change, superiority; a candidate exactly at -margin, non-inferiority) <= 5%, and
simulated power within 3 points of gate.decide.power's at each setting, plus power at the n `gate scorecard power`
plans. Writes bench/results/power.{json,md}. Run: `PYTHONPATH=$PWD python bench/power_check.py` (about a minute).
"""

from __future__ import annotations

import json
import platform
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gate.decide import power, stats  # noqa: E402
from gate.io.atomic import atomic_write_text  # noqa: E402

ALPHA = 0.05
SIMS = 20_000  # McNemar: exact p per simulated table, cheap
SIMS_BOOT = 4_000  # bootstrap: SIMS_BOOT x RESAMPLES resampled means per setting
SIMS_AA = 16_000  # the non-inferiority A/A: a 5% rate needs a Monte Carlo SE well under its 0.2-point slack
RESAMPLES = 2_000
SIMS_REAL = 300  # through stats.paired_bootstrap itself
TOL = 0.03
SEED = 20261205


def _counts(rng: np.random.Generator, n: int, baseline: float, effect: float, disc: float, sims: int) -> np.ndarray:
    """sims x (both, base only, cand only, neither) for the true rates."""
    b, c = (disc - effect) / 2, (disc + effect) / 2
    both = baseline - b
    probs = np.array([both, b, c, 1 - both - b - c])
    assert np.all(probs >= -1e-12), probs
    return rng.multinomial(n, np.clip(probs, 0, 1) / np.clip(probs, 0, 1).sum(), size=sims)


def sim_mcnemar(rng: np.random.Generator, n: int, baseline: float, effect: float, disc: float) -> float:
    k = _counts(rng, n, baseline, effect, disc, SIMS)
    p = stats.mcnemar_exact(k[:, 1], k[:, 2], "greater")
    return float(np.mean(p <= ALPHA))


def sim_boot(rng: np.random.Generator, n: int, baseline: float, effect: float, disc: float, margin: float,
             sims: int = SIMS_BOOT) -> float:
    """Share of simulated comparisons whose paired-bootstrap p (the gate's formula, tie rule included) <= alpha."""
    return float(np.mean(np.concatenate([_boot_pass(rng, n, baseline, effect, disc, margin, min(SIMS_BOOT, sims - i))
                                         for i in range(0, sims, SIMS_BOOT)])))


def _boot_pass(rng: np.random.Generator, n: int, baseline: float, effect: float, disc: float, margin: float,
               sims: int) -> np.ndarray:
    k = _counts(rng, n, baseline, effect, disc, sims)
    b, c = k[:, 1].astype(float), k[:, 2].astype(float)
    # resampled counts of lost and won pairs: B* ~ Bin(n, b/n), C* | B* ~ Bin(n - B*, c / (n - b))
    bs = rng.binomial(n, (b / n)[:, None], size=(sims, RESAMPLES))
    rest = np.where(n - b > 0, c / np.maximum(n - b, 1), 0.0)
    cs = rng.binomial(n - bs, rest[:, None])
    imp = (cs - bs) / n
    bound = -margin
    beyond = np.sum(imp <= bound + 1e-9 * max(1.0, abs(bound)), axis=1)
    p = (beyond + 1) / (RESAMPLES + 1)
    return p <= ALPHA


def sim_boot_real(rng: np.random.Generator, n: int, baseline: float, effect: float, disc: float,
                  margin: float) -> float:
    """The same rate through stats.paired_bootstrap (fewer simulations: it resamples items, not counts)."""
    k = _counts(rng, n, baseline, effect, disc, SIMS_REAL)
    passed = 0
    for i, row in enumerate(k):
        base = np.repeat([1.0, 1.0, 0.0, 0.0], row)
        cand = np.repeat([1.0, 0.0, 1.0, 0.0], row)
        imp = stats.paired_bootstrap(base, cand, resamples=RESAMPLES, seed=SEED + i).boot[:, 0]
        beyond = np.sum(imp <= -margin + 1e-9 * max(1.0, margin))
        passed += (beyond + 1) / (RESAMPLES + 1) <= ALPHA
    return passed / SIMS_REAL


SUPERIORITY = [  # n, baseline, effect, discordance
    (500, 0.60, 0.05, 0.30),  # issue 31's example
    (200, 0.70, 0.08, 0.25),
    (1000, 0.50, 0.03, 0.40),
    (300, 0.85, 0.05, 0.15),
]
NON_INFERIORITY = [  # n, baseline, effect, discordance, margin
    (500, 0.60, 0.00, 0.30, 0.05),  # issue 31's example: an identical candidate
    (1000, 0.50, 0.00, 0.40, 0.03),
    (200, 0.80, 0.02, 0.20, 0.05),
    (400, 0.70, -0.01, 0.25, 0.05),
]


def main() -> int:
    import scipy

    t0 = time.perf_counter()
    rng = np.random.default_rng(SEED)
    rows, ok = [], True
    for n, p1, eff, disc in SUPERIORITY:
        aa = sim_mcnemar(rng, n, p1, 0.0, disc)
        formula = power.mcnemar_power(n, disc, eff, ALPHA)
        simulated = sim_mcnemar(rng, n, p1, eff, disc)
        normal = power.normal_power(n, power.binary_sd(disc, eff), eff, ALPHA)
        planned = power.items_needed(rule="superiority", test="mcnemar", alpha=ALPHA, power=0.8, effect=eff, disc=disc)
        at_plan = sim_mcnemar(rng, planned, p1, eff, disc) if planned else None
        good = aa <= 0.05 and abs(simulated - formula) <= TOL and at_plan is not None and abs(at_plan - 0.8) <= TOL
        ok &= good
        rows.append({"rule": "superiority", "test": "mcnemar", "n": n, "baseline": p1, "effect": eff,
                     "discordance": disc, "margin": 0.0, "aa_false_alarm": aa, "power_formula": formula,
                     "power_normal_approx": normal, "power_simulated": simulated, "planned_n_80": planned,
                     "power_simulated_at_planned_n": at_plan, "ok": bool(good)})
    for n, p1, eff, disc, margin in NON_INFERIORITY:
        # A/A for a non-inferiority gate: a candidate exactly `margin` worse must pass at most alpha of the time
        aa = sim_boot(rng, n, p1, -margin, disc, margin, sims=SIMS_AA)
        formula = power.power_at(n, rule="non_inferiority", test="paired_bootstrap", alpha=ALPHA, effect=eff,
                                 margin=margin, disc=disc)
        normal = power.normal_power(n, power.binary_sd(disc, eff), eff, ALPHA, margin)
        simulated = sim_boot(rng, n, p1, eff, disc, margin)
        planned = power.items_needed(rule="non_inferiority", test="paired_bootstrap", alpha=ALPHA, power=0.8,
                                     effect=eff, margin=margin, disc=disc)
        at_plan = sim_boot(rng, planned, p1, eff, disc, margin) if planned else None
        good = aa <= 0.05 and abs(simulated - formula) <= TOL and at_plan is not None and abs(at_plan - 0.8) <= TOL
        ok &= good
        rows.append({"rule": "non_inferiority", "test": "paired_bootstrap", "n": n, "baseline": p1, "effect": eff,
                     "discordance": disc, "margin": margin, "aa_false_alarm": aa, "power_formula": formula,
                     "power_normal_approx": normal, "power_simulated": simulated, "planned_n_80": planned,
                     "power_simulated_at_planned_n": at_plan, "ok": bool(good)})
    # the count shortcut against stats.paired_bootstrap itself, on the example
    n, p1, eff, disc, margin = NON_INFERIORITY[0]
    real = sim_boot_real(rng, n, p1, eff, disc, margin)
    shortcut = next(r["power_simulated"] for r in rows if r["rule"] == "non_inferiority")
    se_real = float(np.sqrt(real * (1 - real) / SIMS_REAL))
    real_ok = abs(real - shortcut) <= 3 * se_real + 0.01
    ok &= real_ok
    result = {"bench": "power_check", "date": datetime.now(UTC).isoformat(), "alpha": ALPHA, "sims": SIMS,
              "sims_bootstrap": SIMS_BOOT, "sims_aa": SIMS_AA, "resamples": RESAMPLES, "tolerance": TOL, "seed": SEED,
              "numpy": np.__version__, "scipy": scipy.__version__, "python": platform.python_version(),
              "seconds": round(time.perf_counter() - t0, 1), "rows": rows,
              "real_bootstrap_check": {"n": n, "margin": margin, "sims": SIMS_REAL, "power_real": real,
                                       "power_shortcut": shortcut, "ok": bool(real_ok)},
              "ok": bool(ok)}
    out = ROOT / "bench" / "results"
    atomic_write_text(out / "power.json", json.dumps(result, indent=2) + "\n")
    atomic_write_text(out / "power.md", _md(result))
    print(_md(result))
    return 0 if ok else 1


def _md(r: dict) -> str:
    lines = ["# Power of the paired gates: formula vs simulation", "",
             "Command: `PYTHONPATH=$PWD python bench/power_check.py` "
             f"({r['seconds']} s on this machine; numpy {r['numpy']}, scipy {r['scipy']}).", "",
             f"alpha {r['alpha']} one-sided; McNemar: {r['sims']} simulated comparisons per cell through "
             f"`stats.mcnemar_exact`; non-inferiority: {r['sims_bootstrap']} simulated comparisons x "
             f"{r['resamples']} bootstrap resamples ({r['sims_aa']} for its A/A), the gate's p-value and tie rule. "
             "Formula: `gate.decide.power` (exact McNemar power; normal power of the bootstrap bound with a "
             "continuity correction for the tie rule on the 1/n lattice; the uncorrected normal approximation beside "
             "it). A/A: no true change (superiority) or a candidate exactly `margin` worse (non-inferiority), "
             "which must pass <= 5%. "
             f"Tolerance: simulated power within {r['tolerance'] * 100:.0f} points of the formula, and within "
             "3 points of 80% at the n `gate scorecard power` plans.", "",
             "| rule | n | baseline | effect | discordance | margin | A/A false alarm | power (formula) | "
             "power (normal approx.) | power (simulated) | planned n for 80% | simulated power at planned n | ok |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for x in r["rows"]:
        lines.append(f"| {x['rule']} | {x['n']} | {x['baseline']:.2f} | {x['effect']:+.2f} | {x['discordance']:.2f} | "
                     f"{x['margin']:.2f} | {x['aa_false_alarm']:.2%} | {x['power_formula']:.1%} | "
                     f"{x['power_normal_approx']:.1%} | {x['power_simulated']:.1%} | {x['planned_n_80']} | "
                     f"{x['power_simulated_at_planned_n']:.1%} | {'yes' if x['ok'] else '**no**'} |")
    c = r["real_bootstrap_check"]
    lines += ["", f"Count shortcut vs `stats.paired_bootstrap` itself (n {c['n']}, margin {c['margin']}, identical "
              f"candidate, {c['sims']} simulations): {c['power_real']:.1%} vs {c['power_shortcut']:.1%} "
              f"({'agree' if c['ok'] else '**disagree**'} within 3 standard errors).", "",
              f"All checks pass: **{'yes' if r['ok'] else 'no'}**."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
