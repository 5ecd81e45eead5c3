"""Power of the paired gates: what a gate of n items can detect, and how many items a planned gate needs.

Why: a gate that cannot see the effect it guards is a coin toss dressed as evidence. With n = 500 paired items at
60% baseline accuracy and 30% discordant pairs, a true +5-point gain passes a one-sided McNemar gate at alpha 0.05
only about two times in three, and a 0.05 non-inferiority margin blocks an identical candidate about a third of the
time. The decision states both numbers for every paired gate; `gate scorecard power` plans n before the items are
written.

The same statistics the gates use (gate.decide.gates):
- superiority on 0/1 scores, unclustered: the exact one-sided McNemar test. Its power is computed exactly: the
  number of discordant pairs M ~ Binomial(n, discordance), the pairs the candidate won C | M ~ Binomial(M, q) with
  q = (discordance + effect) / (2 discordance), and the gate passes when McNemar's p <= alpha.
- non-inferiority (paired bootstrap bound above -margin), paired t, clustered z and the bootstrap on other scores:
  the one-sided normal test of the mean change, power = Phi((effect + margin) sqrt(n) / sd - z_alpha), with
  sd = sqrt(discordance - effect^2) for 0/1 scores (the per-item change is -1, 0 or +1) or the gate's own standard
  error (clusters included) in a decision.

Effects are changes in the improving direction (for a lower-is-better metric, a drop), on the metric's own scale.
Holm across several gates lowers each gate's alpha towards alpha / m; the numbers here are at the gate's alpha.
bench/power_check.py checks both formulas against simulation of the gates' own tests.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

TARGET_POWER = 0.80
MAX_ITEMS = 10_000_000  # a plan needing more than this is reported as unreachable, not searched for ever


class PowerInputError(ValueError):
    """A planning input out of range (a rate outside 0..1, an impossible correlation); one line for the user."""


def _z(p: float) -> float:
    from scipy.special import ndtri

    return float(ndtri(p))


def _phi(x: float) -> float:
    from scipy.special import ndtr

    return float(ndtr(x))


def discordance(baseline: float, effect: float, correlation: float = 0.0) -> float:
    """Share of items on which the two models disagree, from the baseline rate, the change and the item-level
    correlation (phi coefficient) of the two models' 0/1 scores. Correlation 0 (independent answers) gives the most
    discordance, so the largest n: the safe default when nothing is known about the pair."""
    p1, p2 = float(baseline), float(baseline) + float(effect)
    if not 0.0 < p1 < 1.0:
        raise PowerInputError(f"baseline rate must be between 0 and 1 (exclusive), got {baseline:g}")
    if not 0.0 < p2 < 1.0:
        raise PowerInputError(f"baseline {p1:g} + effect {effect:g} = {p2:g} is not a rate between 0 and 1")
    if not -1.0 <= correlation <= 1.0:
        raise PowerInputError(f"correlation must be between -1 and 1, got {correlation:g}")
    both = p1 * p2 + correlation * math.sqrt(p1 * (1 - p1) * p2 * (1 - p2))
    lo, hi = max(0.0, p1 + p2 - 1.0), min(p1, p2)
    if not lo - 1e-12 <= both <= hi + 1e-12:
        r_hi = (hi - p1 * p2) / math.sqrt(p1 * (1 - p1) * p2 * (1 - p2))
        r_lo = (lo - p1 * p2) / math.sqrt(p1 * (1 - p1) * p2 * (1 - p2))
        raise PowerInputError(f"correlation {correlation:g} is impossible for rates {p1:g} and {p2:g} "
                              f"(possible: {r_lo:.3f} to {r_hi:.3f})")
    return float(p1 + p2 - 2 * both)


def _check_alpha(alpha: float) -> None:
    if not 0.0 < alpha < 0.5:
        raise PowerInputError(f"alpha must be between 0 and 0.5 (one-sided), got {alpha:g}")


def mcnemar_power(n: int, disc: float, effect: float, alpha: float) -> float:
    """Exact power of the one-sided McNemar gate (p <= alpha) for n pairs, discordance `disc` and true change
    `effect` (0 <= |effect| <= disc)."""
    from scipy.special import bdtrc, gammaln

    n = int(n)
    if n <= 0 or disc <= 0:
        return 0.0
    disc = min(float(disc), 1.0)
    q = min(max((disc + effect) / (2 * disc), 0.0), 1.0)
    # discordant counts with non-negligible probability only (mean +- 12 sd): O(sqrt n) work for large n
    sd = math.sqrt(n * disc * (1 - disc))
    m = np.arange(max(1, int(n * disc - 12 * sd - 2)), min(n, int(n * disc + 12 * sd + 2)) + 1)
    if disc >= 1.0:
        m = np.array([n])
        pm = np.array([1.0])
    else:
        logp = (gammaln(n + 1) - gammaln(m + 1) - gammaln(n - m + 1) + m * math.log(disc)
                + (n - m) * math.log1p(-disc))
        pm = np.exp(logp)
    c = _critical(m, alpha)
    reach = c <= m
    pw = np.where(reach, bdtrc(np.maximum(c - 1, 0), m, q), 0.0)
    pw = np.where(reach & (c == 0), 1.0, pw)
    return float(np.clip(np.sum(pm * pw), 0.0, 1.0))


def _critical(m: np.ndarray, alpha: float) -> np.ndarray:
    """Smallest won-count c with McNemar's one-sided p = P(Binomial(m, 1/2) >= c) <= alpha, per discordant count
    (m + 1 where no count reaches it). The same p-value as stats.mcnemar_exact(.., 'greater')."""
    from scipy.special import bdtrc

    m = np.asarray(m, dtype=np.int64)
    c = np.ceil(m / 2 + _z(1 - alpha) * np.sqrt(m) / 2).astype(np.int64)
    c = np.clip(c, 0, m + 1)

    def p_at(k: np.ndarray) -> np.ndarray:
        return np.where(k <= 0, 1.0, np.where(k > m, 0.0, bdtrc(np.maximum(k - 1, 0), m, 0.5)))

    for _ in range(64):  # the normal guess is within a few counts: step up while too lenient, down while too strict
        up = (p_at(c) > alpha) & (c <= m)
        down = (c > 0) & (p_at(c - 1) <= alpha)
        if not up.any() and not down.any():
            break
        c = c + up.astype(np.int64) - down.astype(np.int64)
    return c


def normal_power(n: int, sd: float, effect: float, alpha: float, margin: float = 0.0,
                 lattice: bool = False) -> float:
    """Power of the one-sided test that the mean change exceeds -margin, per-item change sd `sd`.

    `lattice`: 0/1 scores, whose mean change lives on multiples of 1/n. The gate counts a resample AT the bound
    against the candidate, so the first passing mean is the lattice point above the bound; the continuity-corrected
    bound is halfway to it (bench/power_check.py: without it the formula sat 1.3 to 2.4 points above simulation)."""
    if n <= 0 or not sd > 0:
        return float("nan")
    bound = -margin
    if lattice:
        bound = (math.floor(bound * n + 1e-9) + 0.5) / n
    return _phi((effect - bound) * math.sqrt(n) / sd - _z(1 - alpha))


def binary_sd(disc: float, effect: float) -> float:
    """Per-item sd of a 0/1 pair's change (-1, 0 or +1): sqrt(discordance - effect^2)."""
    return math.sqrt(max(disc - effect * effect, 0.0))


@dataclass(frozen=True)
class Plan:
    """One planned gate: items needed for the power asked, and what the n given (if any) achieves."""

    rule: str
    test: str
    alpha: float
    power: float
    effect: float
    margin: float
    discordance: float | None
    sd: float
    items: int | None  # None: no n up to MAX_ITEMS reaches the power (e.g. effect <= -margin)
    power_at_n: float | None = None
    n: int | None = None

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def power_at(n: int, *, rule: str, test: str, alpha: float, effect: float, margin: float, disc: float | None,
             sd: float | None = None) -> float:
    """Power of one gate at n items: exact McNemar for a superiority gate on 0/1 scores, normal otherwise."""
    if rule == "superiority" and test == "mcnemar" and disc is not None:
        return mcnemar_power(n, disc, effect, alpha)
    if sd is not None:
        return normal_power(n, sd, effect, alpha, margin if rule == "non_inferiority" else 0.0)
    return normal_power(n, binary_sd(disc or 0.0, effect), effect, alpha, margin if rule == "non_inferiority" else 0.0,
                        lattice=True)


def items_needed(*, rule: str, test: str, alpha: float, power: float, effect: float, margin: float = 0.0,
                 disc: float | None = None, sd: float | None = None) -> int | None:
    """Smallest n whose power reaches `power` (bisection; McNemar's exact power saw-tooths by a point or so in n,
    so the n returned reaches it and its neighbours are within that tooth)."""
    _check_alpha(alpha)
    if not 0.0 < power < 1.0:
        raise PowerInputError(f"power must be between 0 and 1, got {power:g}")
    shift = effect + (margin if rule == "non_inferiority" else 0.0)
    if shift <= 0:
        return None

    def ok(n: int) -> bool:
        p = power_at(n, rule=rule, test=test, alpha=alpha, effect=effect, margin=margin, disc=disc, sd=sd)
        return not math.isnan(p) and p >= power

    s = sd if sd is not None else binary_sd(disc or 0.0, effect)
    guess = max(2, int(((_z(1 - alpha) + _z(power)) * max(s, 1e-9) / shift) ** 2))
    hi = guess
    while not ok(hi):
        hi *= 2
        if hi > MAX_ITEMS:
            return None
    lo = max(1, hi // 4)
    if ok(lo):
        lo = 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi


def plan(*, rule: str, baseline: float, effect: float, alpha: float = 0.05, power: float = TARGET_POWER,
         margin: float = 0.0, correlation: float | None = None, disc: float | None = None, test: str | None = None,
         n: int | None = None) -> Plan:
    """The planning answer for one gate on a 0/1 metric: `gate scorecard power` prints it."""
    if rule not in ("superiority", "non_inferiority"):
        raise PowerInputError(f"rule must be superiority or non_inferiority, got {rule!r}")
    _check_alpha(alpha)
    if margin < 0:
        raise PowerInputError(f"margin must be >= 0, got {margin:g}")
    if rule == "non_inferiority" and margin == 0:
        raise PowerInputError("non_inferiority needs a margin > 0 (at margin 0 it is a superiority test)")
    test = test or ("mcnemar" if rule == "superiority" else "paired_bootstrap")
    if test == "mcnemar" and rule == "non_inferiority":
        test = "paired_bootstrap"  # as the gate does: McNemar cannot test a margin
    if disc is None:
        disc = discordance(baseline, effect, 0.0 if correlation is None else correlation)
    else:
        discordance(baseline, effect, 0.0)  # the rates themselves must be valid
        if not 0.0 < disc <= 1.0:
            raise PowerInputError(f"discordance must be between 0 and 1, got {disc:g}")
        if abs(effect) > disc:
            raise PowerInputError(f"effect {effect:g} is larger than the discordance {disc:g} allows (|effect| "
                                  f"<= share of items the models disagree on)")
    if n is not None and n < 1:
        raise PowerInputError(f"n must be at least 1, got {n}")
    need = items_needed(rule=rule, test=test, alpha=alpha, power=power, effect=effect, margin=margin, disc=disc)
    at_n = power_at(n, rule=rule, test=test, alpha=alpha, effect=effect, margin=margin, disc=disc) if n else None
    return Plan(rule=rule, test=test, alpha=alpha, power=power, effect=effect, margin=margin, discordance=disc,
                sd=binary_sd(disc, effect), items=need, power_at_n=at_n, n=n)


def _mde(power_of: Any, lo: float, hi: float, target: float) -> float | None:
    """Smallest effect in [lo, hi] whose power reaches target (power rises with the effect)."""
    if power_of(hi) < target:
        return None
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if power_of(mid) >= target else (mid, hi)
    return hi


def gate_power(*, rule: str, test: str, n: int, alpha: float, margin: float, improvement: float,
               disc: float | None = None, se: float | None = None, binary: bool = False,
               target: float = TARGET_POWER) -> dict[str, Any]:
    """What one evaluated paired gate could detect: the minimum detectable change at `target` power for its n and
    alpha, and the power at the observed change (both in the improving direction), from the gate's own test
    (observed discordance for McNemar, the gate's standard error otherwise, so clusters count). For a
    non-inferiority gate also the power to pass an identical candidate and the n that makes it `target`.

    The minimum detectable change of a non-inferiority gate is the smallest true change that passes `target` of
    the time: negative when the margin leaves room, positive when even an identical candidate fails too often."""
    out: dict[str, Any] = {"alpha": alpha, "target": target, "n": n, "mde": None, "power_observed": None}
    m = margin if rule == "non_inferiority" else 0.0
    if rule == "superiority" and test == "mcnemar":
        out["method"] = "exact McNemar"
        out["discordance"] = disc
        if not disc:
            out["note"] = "no discordant pairs: the discordance the power depends on is unknown"
            return out
        out["mde"] = _mde(lambda e: mcnemar_power(n, disc, e, alpha), 0.0, disc, target)
        out["power_observed"] = mcnemar_power(n, disc, min(max(improvement, -disc), disc), alpha)
        return out
    out["method"] = "normal, from the gate's standard error"
    out["se"] = se
    if not se or not se > 0 or n < 2:
        out["note"] = "no spread in the per-item changes: the standard error the power depends on is unknown"
        return out
    sd = se * math.sqrt(n)
    z = _z(1 - alpha) + _z(target)
    lattice = binary and test == "paired_bootstrap"  # the tie rule on 1/n steps (normal_power)
    bound = (math.floor(-m * n + 1e-9) + 0.5) / n if lattice else -m
    out["mde"] = z * se + bound
    out["power_observed"] = normal_power(n, sd, improvement, alpha, m, lattice=lattice)
    if rule == "non_inferiority":
        out["power_identical"] = normal_power(n, sd, 0.0, alpha, m, lattice=lattice)
        if m <= 0:
            out["n_identical"] = None
        elif lattice:  # the same answer `gate scorecard power` gives for this discordance (sd^2 at no change)
            out["n_identical"] = items_needed(rule=rule, test=test, alpha=alpha, power=target, effect=0.0,
                                              margin=m, disc=sd * sd)
        else:
            out["n_identical"] = math.ceil((z * sd / m) ** 2)
    return out


def describe(g: dict[str, Any]) -> str | None:
    """One line for a report: 'n 500: detects +0.054 at 80% power (alpha 0.05); power at the observed +0.020: 31%'."""
    pw = g.get("power")
    if not pw:
        return None
    if pw.get("note"):
        return f"n {pw['n']}: power not computed ({pw['note']})"
    mde = "no change up to the discordance" if pw["mde"] is None else f"{pw['mde']:+.3g}"
    what = "passes a true change of" if g["rule"] == "non_inferiority" else "detects"
    text = (f"n {pw['n']}: {what} {mde} at {pw['target']:.0%} power (alpha {pw['alpha']:g}, {pw['method']}); "
            f"power at the observed change: {pw['power_observed']:.0%}")
    if "power_identical" in pw:
        text += f"; an identical candidate passes {pw['power_identical']:.0%}"
    return text


def margin_warning(g: dict[str, Any]) -> str | None:
    """A non-inferiority margin the n cannot establish: an identical candidate passes less than the target power."""
    pw = g.get("power") or {}
    p0 = pw.get("power_identical")
    if g["rule"] != "non_inferiority" or p0 is None or p0 >= pw["target"]:
        return None
    need = pw.get("n_identical")
    return (f"gate {g['gate']}: margin {float(g['margin'] or 0):g} is too tight for {pw['n']} pairs: an identical "
            f"candidate passes only {p0:.0%} of the time (needs about {need} pairs for {pw['target']:.0%}, or a "
            f"wider margin); a BLOCK here is weak evidence of a drop")
