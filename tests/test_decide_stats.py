"""The paired statistics against scipy and statsmodels on known cases, and the superiority gate's error rates."""

from __future__ import annotations

import numpy as np
import pytest

from gate.decide import stats


@pytest.mark.parametrize(("b", "c"), [(0, 0), (1, 0), (3, 12), (12, 3), (25, 30), (40, 18), (7, 7), (0, 9)])
def test_mcnemar_matches_statsmodels_and_binomtest(b: int, c: int) -> None:
    from scipy.stats import binomtest
    from statsmodels.stats.contingency_tables import mcnemar

    table = [[50, b], [c, 40]]  # rows: baseline pass/fail, columns: candidate pass/fail
    assert stats.mcnemar_exact(b, c) == pytest.approx(mcnemar(table, exact=True).pvalue, abs=1e-12)
    if b + c:
        assert stats.mcnemar_exact(b, c, "greater") == pytest.approx(
            binomtest(c, b + c, 0.5, alternative="greater").pvalue, abs=1e-12)
        assert stats.mcnemar_exact(b, c, "less") == pytest.approx(
            binomtest(c, b + c, 0.5, alternative="less").pvalue, abs=1e-12)


def test_mcnemar_on_lm_eval_case() -> None:
    """lm-eval PR #3868 (evaluation notes §3): n = 220 where McNemar gives p = 0.008 and the unpaired z-test 0.08."""
    assert stats.mcnemar_exact(10, 27) == pytest.approx(0.0080, abs=0.0015)


def test_discordant_counts() -> None:
    base = np.array([1, 1, 0, 0, 1, 0])
    cand = np.array([1, 0, 1, 1, 1, 0])
    assert stats.discordant(base, cand) == (1, 2)


def test_bootstrap_matches_scipy_percentile_interval() -> None:
    from scipy.stats import bootstrap

    rng = np.random.default_rng(7)
    base = rng.normal(0.5, 0.2, 300)
    cand = base + rng.normal(0.04, 0.1, 300)
    ours = stats.paired_bootstrap(base, cand, resamples=10_000, seed=1)
    lo, hi = ours.interval(0.95)
    ref = bootstrap((base, cand), lambda x, y, axis=-1: np.mean(y, axis=axis) - np.mean(x, axis=axis), paired=True,
                    vectorized=True, n_resamples=10_000, method="percentile", confidence_level=0.95,
                    random_state=np.random.default_rng(2))
    assert ours.delta[0] == pytest.approx(np.mean(cand - base))
    assert lo[0] == pytest.approx(ref.confidence_interval.low, abs=0.003)
    assert hi[0] == pytest.approx(ref.confidence_interval.high, abs=0.003)
    assert ours.se()[0] == pytest.approx(ref.standard_error, rel=0.05)


def test_bootstrap_is_seeded_and_handles_missing_values_per_metric() -> None:
    base = np.array([[1, np.nan], [0, 0.0], [1, 1.0], [0, np.nan]])
    cand = np.array([[1, 1.0], [1, 0.0], [1, 0.0], [1, np.nan]])
    a = stats.paired_bootstrap(base, cand, resamples=2000, seed=3)
    b = stats.paired_bootstrap(base, cand, resamples=2000, seed=3)
    assert np.array_equal(a.boot, b.boot, equal_nan=True)
    assert a.n.tolist() == [4, 2]
    assert a.delta.tolist() == [0.5, -0.5]


def test_clustered_se_matches_statsmodels() -> None:
    import statsmodels.api as sm

    rng = np.random.default_rng(11)
    clusters = np.repeat(np.arange(30), rng.integers(2, 8, 30))
    effects = rng.normal(0, 0.3, 30)[clusters]
    d = effects + rng.normal(0.05, 0.2, len(clusters))
    se, g = stats.clustered_se(d, clusters.astype(str))
    fit = sm.OLS(d, np.ones((len(d), 1))).fit(cov_type="cluster", cov_kwds={"groups": clusters})
    assert g == 30
    assert se == pytest.approx(float(fit.bse[0]), rel=1e-9)
    plain, _ = stats.clustered_se(d)
    assert se > plain  # correlated items: the naive SE is too small


def test_cluster_bootstrap_widens_the_interval() -> None:
    rng = np.random.default_rng(5)
    clusters = np.repeat(np.arange(20), 10)
    base = np.zeros(200)
    cand = rng.normal(0, 0.3, 20)[clusters] + rng.normal(0, 0.05, 200)
    naive = stats.paired_bootstrap(base, cand, resamples=4000, seed=1).se()[0]
    clustered = stats.paired_bootstrap(base, cand, clusters=clusters, resamples=4000, seed=1).se()[0]
    se, _ = stats.clustered_se(cand - base, clusters)
    assert clustered > 2 * naive
    assert clustered == pytest.approx(se, rel=0.15)


def test_holm_matches_statsmodels() -> None:
    from statsmodels.stats.multitest import multipletests

    p = [0.01, 0.04, 0.03, 0.005, 0.2]
    assert stats.holm(p) == pytest.approx(multipletests(p, method="holm")[1].tolist())
    out = stats.holm([0.01, float("nan"), 0.04])
    assert out[0] == pytest.approx(0.02) and np.isnan(out[1]) and out[2] == pytest.approx(0.04)


def _simulate(n_sets: int, n: int, lift: float, seed: int) -> np.ndarray:
    """One-sided McNemar p-values (the superiority gate's test) of `n_sets` simulated scorecards of n items.

    Items differ in difficulty: per-item pass probability p = 0.95 * Beta(0.2, 0.15) (mean 0.54), and each model's
    answer is a fresh draw from it, so two identical models still disagree on ~16 % of items (run-to-run flips as
    in the tau-bench issues). The candidate's probability is p + lift on every item: a true improvement of exactly
    `lift`. Power depends on that disagreement rate: fewer flips, more power.
    """
    rng = np.random.default_rng(seed)
    p = 0.95 * rng.beta(0.2, 0.15, size=(n_sets, n))
    base = rng.random((n_sets, n)) < p
    cand = rng.random((n_sets, n)) < p + lift
    b = np.sum(base & ~cand, axis=1)
    c = np.sum(~base & cand, axis=1)
    return stats.mcnemar_exact(b, c, "greater")


def test_superiority_false_alarm_rate_under_aa_is_at_most_alpha() -> None:
    rate = float(np.mean(_simulate(4000, 500, 0.0, seed=1) <= 0.05))
    assert rate <= 0.05


def test_superiority_power_for_a_five_point_improvement_at_n_500() -> None:
    power = float(np.mean(_simulate(4000, 500, 0.05, seed=2) <= 0.05))
    assert power >= 0.80


def test_paired_t_matches_scipy() -> None:
    from scipy.stats import ttest_1samp

    rng = np.random.default_rng(9)
    d = rng.normal(0.02, 0.1, 80)
    for alt in ("greater", "less", "two-sided"):
        assert stats.paired_t(d, alternative=alt) == pytest.approx(ttest_1samp(d, 0.0, alternative=alt).pvalue)
    assert stats.paired_t(d, shift=0.05) == pytest.approx(ttest_1samp(d + 0.05, 0.0, alternative="greater").pvalue)
    assert stats.z_pvalue(1.6448536269514722) == pytest.approx(0.05)
