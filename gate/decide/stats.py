"""Paired statistics for baseline-vs-candidate comparisons: exact McNemar, paired (cluster) bootstrap, clustered SE.

Why paired: both models answer the same items, so item difficulty cancels in the per-item difference; an unpaired
test (lm-eval's `model_comparator.py`) throws that away (evaluation notes §3: p = 0.080 unpaired vs 0.008 McNemar
on n = 220). Why clusters: items generated from one template or one customer are not independent; resampling
whole clusters (and the CR1 sandwich SE) keeps the interval honest (Miller 2024, arXiv:2411.00640).

The bootstrap draws multinomial resampling weights and multiplies them into per-cluster sums, so 10,000 resamples
of every metric at once are one matrix product per block instead of a Python loop.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

DEFAULT_RESAMPLES = 10_000
DEFAULT_SEED = 20240611
_BLOCK = 1000  # resamples per block: bounds the weight matrix to _BLOCK x clusters


def mcnemar_exact(b: Any, c: Any, alternative: str = "two-sided") -> Any:
    """Exact McNemar p-value from the discordant counts (works element-wise on arrays).

    b = baseline pass & candidate fail, c = baseline fail & candidate pass. Conditional on b + c discordant pairs,
    c ~ Binomial(b + c, 1/2) under "no difference". `greater`: H1 is that the candidate is better (c > b).
    """
    from scipy.special import bdtr, bdtrc  # the binomial CDF without importing all of scipy.stats (seconds)

    b = np.asarray(b, dtype=np.int64)
    c = np.asarray(c, dtype=np.int64)
    n = b + c
    safe_n = np.maximum(n, 1)
    if alternative == "two-sided":
        p = np.minimum(1.0, 2.0 * bdtr(np.minimum(b, c), safe_n, 0.5))
    elif alternative == "greater":  # P(X >= c)
        p = np.where(c <= 0, 1.0, bdtrc(np.maximum(c - 1, 0), safe_n, 0.5))
    elif alternative == "less":  # P(X <= c)
        p = bdtr(c, safe_n, 0.5)
    else:
        raise ValueError(f"unknown alternative {alternative!r}")
    p = np.where(n == 0, 1.0, p)
    return float(p) if p.ndim == 0 else p


def discordant(base: np.ndarray, cand: np.ndarray) -> tuple[int, int]:
    """(b, c) for 0/1 arrays: pairs the candidate lost and pairs it won."""
    base = np.asarray(base) >= 0.5
    cand = np.asarray(cand) >= 0.5
    return int(np.sum(base & ~cand)), int(np.sum(~base & cand))


def is_binary(*arrays: np.ndarray) -> bool:
    return all(bool(np.all((a == 0.0) | (a == 1.0))) for a in arrays)


def _cluster_index(clusters: np.ndarray | None, n: int) -> tuple[np.ndarray, int]:
    if clusters is None:
        return np.arange(n), n
    _, inv = np.unique(np.asarray(clusters, dtype=object).astype(str), return_inverse=True)
    return inv, int(inv.max()) + 1 if n else 0


@dataclass(frozen=True)
class Bootstrap:
    """Resampled mean differences (candidate - baseline) for several metrics over the same items.

    `boot[:, k]` is the distribution for metric k; NaN where a resample happened to contain no item with that
    metric (possible only for very sparse metrics).
    """

    delta: np.ndarray  # observed mean difference per metric
    boot: np.ndarray  # resamples x metrics
    n: np.ndarray  # pairs per metric
    n_clusters: int

    def _q(self, q: float) -> np.ndarray:
        # a metric with no pair in scope has an all-NaN column: its bound is NaN, not a warning on stderr
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return np.nanquantile(self.boot, q, axis=0)

    def interval(self, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
        """Two-sided percentile interval."""
        lo = (1 - level) / 2
        return self._q(lo), self._q(1 - lo)

    def lower(self, alpha: float) -> np.ndarray:
        """One-sided (1 - alpha) lower bound."""
        return self._q(alpha)

    def upper(self, alpha: float) -> np.ndarray:
        return self._q(1 - alpha)

    def se(self) -> np.ndarray:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return np.nanstd(self.boot, axis=0, ddof=1)


def paired_bootstrap(base: np.ndarray, cand: np.ndarray, *, clusters: np.ndarray | None = None,
                     resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED) -> Bootstrap:
    """Paired (cluster) bootstrap of mean(cand) - mean(base).

    `base` and `cand` are items x metrics (or 1-D for one metric); NaN marks an item a metric does not apply to,
    and such pairs are left out of that metric only. Whole clusters are resampled when `clusters` is given (one
    label per item), single items otherwise. Seeded: the same inputs give the same interval on every machine.
    """
    base = np.asarray(base, dtype=np.float64)
    cand = np.asarray(cand, dtype=np.float64)
    if base.ndim == 1:
        base, cand = base[:, None], cand[:, None]
    if base.shape != cand.shape:
        raise ValueError(f"baseline and candidate differ in shape: {base.shape} vs {cand.shape}")
    n_items, k = base.shape
    d = cand - base
    present = ~np.isnan(d)
    d0 = np.where(present, d, 0.0)
    inv, g = _cluster_index(clusters, n_items)
    # per-cluster sums and counts of each metric: the bootstrap only ever needs these
    sums = np.zeros((g, k))
    counts = np.zeros((g, k))
    np.add.at(sums, inv, d0)
    np.add.at(counts, inv, present.astype(np.float64))
    n = present.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        delta = d0.sum(axis=0) / n
    rng = np.random.default_rng(seed)
    boot = np.empty((resamples, k))
    if g == 0:
        boot[:] = np.nan
        return Bootstrap(delta, boot, n, 0)
    for start in range(0, resamples, _BLOCK):
        size = min(_BLOCK, resamples - start)
        # multinomial weights: how often each cluster is drawn in each resample (one bincount, no Python loop)
        draws = rng.integers(0, g, size=(size, g)) + (np.arange(size) * g)[:, None]
        w = np.bincount(draws.ravel(), minlength=size * g).reshape(size, g).astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            boot[start:start + size] = (w @ sums) / (w @ counts)
    return Bootstrap(delta, boot, n, g)


def bootstrap_mean(values: np.ndarray, *, clusters: np.ndarray | None = None, resamples: int = DEFAULT_RESAMPLES,
                   seed: int = DEFAULT_SEED) -> Bootstrap:
    """Bootstrap of one model's mean (absolute gates): the paired machinery with a zero baseline."""
    values = np.asarray(values, dtype=np.float64)
    return paired_bootstrap(np.where(np.isnan(values), np.nan, 0.0), values, clusters=clusters,
                            resamples=resamples, seed=seed)


def clustered_se(d: np.ndarray, clusters: np.ndarray | None = None) -> tuple[float, int]:
    """Standard error of mean(d): CR1 sandwich over clusters, the plain SE without them. Returns (se, clusters).

    Equals statsmodels OLS(d, 1).fit(cov_type="cluster") for the intercept (small-sample factor G/(G-1)).
    """
    d = np.asarray(d, dtype=np.float64)
    d = d[~np.isnan(d)] if clusters is None else d
    n = len(d)
    if n < 2:
        return float("nan"), n
    if clusters is None:
        return float(np.std(d, ddof=1) / np.sqrt(n)), n
    keep = ~np.isnan(d)
    d, clusters = d[keep], np.asarray(clusters, dtype=object)[keep]
    n = len(d)
    inv, g = _cluster_index(clusters, n)
    if g < 2:
        return float("nan"), g
    resid = np.zeros(g)
    np.add.at(resid, inv, d - d.mean())
    return float(np.sqrt(g / (g - 1) * np.sum(resid ** 2)) / n), g


def z_pvalue(z: float, alternative: str = "greater") -> float:
    from scipy.special import ndtr

    if np.isnan(z):
        return float("nan")
    if alternative == "greater":
        return float(ndtr(-z))
    if alternative == "less":
        return float(ndtr(z))
    return float(2 * ndtr(-abs(z)))


def paired_t(d: np.ndarray, shift: float = 0.0, alternative: str = "greater") -> float:
    """p-value of the paired t-test on per-item differences (H0: mean(d) <= -shift for `greater`)."""
    from scipy.special import stdtr

    d = np.asarray(d, dtype=np.float64)
    d = d[~np.isnan(d)] + shift
    if len(d) < 2:
        return float("nan")
    if np.all(d == d[0]):  # no spread: the sign decides
        return 0.0 if (d[0] > 0 if alternative == "greater" else d[0] < 0) else 1.0
    t = d.mean() / (d.std(ddof=1) / np.sqrt(len(d)))
    df = len(d) - 1
    if alternative == "greater":
        return float(stdtr(df, -t))
    if alternative == "less":
        return float(stdtr(df, t))
    return float(2 * stdtr(df, -abs(t)))


def holm(pvalues: list[float]) -> list[float]:
    """Holm step-down adjusted p-values (NaN stays NaN and is not counted among the hypotheses)."""
    p = np.asarray(pvalues, dtype=np.float64)
    out = np.full(len(p), np.nan)
    idx = np.where(~np.isnan(p))[0]
    m = len(idx)
    if m == 0:
        return out.tolist()
    order = idx[np.argsort(p[idx], kind="stable")]
    adj = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    out[order] = adj
    return out.tolist()


def percentile(values: np.ndarray, aggregate: str) -> float:
    """mean / p50 / p95 / p99 / max / min / sum / count of the non-NaN values (NaN when there are none)."""
    v = np.asarray(values, dtype=np.float64)
    v = v[~np.isnan(v)]
    if aggregate == "count":
        return float(len(v))
    if not len(v):
        return float("nan")
    if aggregate == "mean":
        return float(v.mean())
    if aggregate == "sum":
        return float(v.sum())
    if aggregate == "max":
        return float(v.max())
    if aggregate == "min":
        return float(v.min())
    if aggregate.startswith("p") and aggregate[1:].isdigit():
        return float(np.percentile(v, float(aggregate[1:])))
    raise ValueError(f"unknown aggregate {aggregate!r}")
