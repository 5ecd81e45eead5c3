"""The release decision at its edges (issue 16, items 14-17): ties at the margin, tests that cannot test a margin,
absolute gates nobody measured, and numbers a reviewer could misread. Scores go through the real DuckDB store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.test_decide_gates import _decide, _gate, make_scorecard, record_run


def _ni(margin: float, **extra: Any) -> dict[str, Any]:
    return {"name": "fmt-ni", "scorer": "fmt", "metric": "schema_valid", "rule": "non_inferiority",
            "margin": margin, **extra}


def _run_pair(tmp: Path, gates: list[dict[str, Any]], base: list[float], cand: list[float],
              metric: tuple[str, str] = ("fmt", "schema_valid")) -> tuple[int, dict[str, Any], str]:
    n = len(base)
    card, db = make_scorecard(tmp, gates=gates, n=n), tmp / "g.duckdb"
    record_run(db, card, "baseline", {metric: base}, comparison="c1", n=n)
    record_run(db, card, "candidate", {metric: cand}, comparison="c1", n=n)
    return _decide(tmp, card, db)


@pytest.mark.parametrize("values", [[1.0, 0.0, 1.0], [1.0, 1.0, 1.0], [0.5, 0.3, 0.7]])
def test_zero_difference_at_margin_zero_is_no_evidence_of_non_inferiority(tmp_path: Path,
                                                                           values: list[float]) -> None:
    """Three identical pairs used to pass with p < 0.0001: every resample sits AT the bound (0) and was not
    counted against the candidate. H0 is `delta <= -margin`, so a tie with the bound supports H0: p = 1."""
    code, data, out = _run_pair(tmp_path, [_ni(0.0)], values, list(values))
    g = _gate(data, "fmt-ni")
    assert g["test"] == "paired_bootstrap" and g["observed"] == 0.0
    assert g["p_value"] == 1.0 and g["verdict"] == "fail", out
    assert code == 100 and data["verdict"] == "BLOCK"


def test_all_pairs_exactly_at_minus_margin_are_ties_even_after_float_rounding(tmp_path: Path) -> None:
    """cand = base - 0.05 everywhere: each difference is -0.05 up to float rounding (0.45 - 0.5 is
    -0.04999999999999999), which must count as a tie with the bound, not as a drop inside it."""
    base = [0.5, 0.7, 0.9, 0.3] * 5
    cand = [round(b - 0.05, 2) for b in base]
    assert any(c - b > -0.05 for b, c in zip(base, cand, strict=True))  # the rounding this test is about
    code, data, _ = _run_pair(tmp_path, [_ni(0.05)], base, cand)
    g = _gate(data, "fmt-ni")
    assert g["p_value"] == 1.0 and g["verdict"] == "fail" and code == 100


def test_superiority_on_a_float_tie_is_not_an_improvement(tmp_path: Path) -> None:
    """0.3 - 0.1 + 0.5 - 0.7 is 5.6e-17 in floats: a resample of this exact tie must not count as a win."""
    gates = [{"name": "sup", "scorer": "fmt", "metric": "schema_valid", "rule": "superiority",
              "test": "paired_bootstrap"}]
    base, cand = [0.1, 0.7] * 3, [0.3, 0.5] * 3
    assert sum(cand) - sum(base) > 0  # rounding, not a real gain
    code, data, _ = _run_pair(tmp_path, gates, base, cand)
    g = _gate(data, "sup")
    assert g["p_value"] > 0.5 and g["verdict"] == "fail" and code == 100


def test_non_inferiority_p_value_agrees_with_scipy_on_a_real_sample(tmp_path: Path) -> None:
    """Away from the edges the bootstrap p for H0: delta <= -margin is the one-sided test scipy computes."""
    from scipy.stats import ttest_1samp

    rng = np.random.default_rng(11)
    base = np.clip(rng.normal(0.6, 0.15, 200), 0, 1)
    cand = np.clip(base + rng.normal(-0.01, 0.1, 200), 0, 1)
    _, data, _ = _run_pair(tmp_path, [_ni(0.02)], base.tolist(), cand.tolist())
    g = _gate(data, "fmt-ni")
    ref = ttest_1samp(cand - base, -0.02, alternative="greater").pvalue
    assert g["p_value"] == pytest.approx(ref, abs=0.02)
    (tmp_path / "t").mkdir()
    _, data_t, _ = _run_pair(tmp_path / "t", [_ni(0.02, test="paired_t")], base.tolist(), cand.tolist())
    assert _gate(data_t, "fmt-ni")["p_value"] == pytest.approx(ref, rel=1e-9)


def test_mcnemar_on_a_non_inferiority_gate_is_refused_at_load_with_the_line(tmp_path: Path) -> None:
    """It used to be replaced by the bootstrap without a word; McNemar tests 'no difference', not a margin."""
    from gate.score.scorecard import ScorecardError, load_scorecard
    from tests.conftest import run_gate

    card = make_scorecard(tmp_path, gates=[_ni(0.02, test="mcnemar")], n=4)
    line = next(k for k, t in enumerate(card.read_text().splitlines(), 1) if "mcnemar" in t)
    with pytest.raises(ScorecardError) as err:
        load_scorecard(card)
    assert str(err.value).startswith(f"{card}:{line}:") and "mcnemar" in str(err.value)
    r = run_gate("decide", "--scorecard", str(card), "--db", str(tmp_path / "none.duckdb"))
    assert r.returncode == 1 and f"card.yaml:{line}:" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    # the superiority gate keeps it, and a non-inferiority gate without `test` still loads
    load_scorecard(make_scorecard(tmp_path, gates=[_ni(0.02), {"name": "s", "scorer": "fmt", "metric":
                                                              "schema_valid", "rule": "superiority",
                                                              "test": "mcnemar"}], n=4))


ABS = {"name": "format-floor", "scorer": "fmt", "metric": "schema_valid", "rule": "absolute", "threshold": 0.9}
SUP = {"name": "task-up", "scorer": "task", "metric": "strict", "rule": "superiority"}


def _unmeasured(tmp: Path, **abs_extra: Any) -> tuple[int, dict[str, Any], str, str]:
    card = make_scorecard(tmp, gates=[SUP, {**ABS, **abs_extra}])
    db = tmp / "g.duckdb"
    base = [1.0 if i % 2 else 0.0 for i in range(200)]
    cand = [1.0 if i % 2 or i % 4 == 0 else 0.0 for i in range(200)]  # 50 failures fixed, none broken
    record_run(db, card, "baseline", {("task", "strict"): base}, comparison="c1")
    record_run(db, card, "candidate", {("task", "strict"): cand}, comparison="c1")
    code, data, out = _decide(tmp, card, db)
    return code, data, out, (tmp / "out" / "decision.md").read_text()


def test_an_unmeasured_blocking_absolute_gate_blocks_promote(tmp_path: Path) -> None:
    """The run has no format scores (say the scorer was added to the scorecard after scoring): the floor gate used
    to be skipped and the candidate promoted on the superiority gate alone."""
    code, data, out, md = _unmeasured(tmp_path)
    g = _gate(data, "format-floor")
    assert _gate(data, "task-up")["verdict"] == "pass"
    assert g["verdict"] == "fail" and "not measured, so not passed" in g["detail"]
    assert code == 100 and data["verdict"] == "BLOCK" and "format-floor" in data["summary"]
    assert "on_unmeasured: block" in md and "BLOCK" in md


def test_on_unmeasured_warn_lets_the_other_gates_decide_and_says_so(tmp_path: Path) -> None:
    code, data, out, md = _unmeasured(tmp_path, on_unmeasured="warn")
    g = _gate(data, "format-floor")
    assert g["verdict"] == "skip" and "on_unmeasured: warn" in g["detail"]
    assert code == 0 and data["verdict"] == "PROMOTE"
    assert any("format-floor skipped" in w for w in data["warnings"]) and "on_unmeasured: warn" in md


def test_on_unmeasured_is_checked_at_load(tmp_path: Path) -> None:
    from gate.score.scorecard import ScorecardError, load_scorecard

    for gates, message in (([{**ABS, "on_unmeasured": "ignore"}], "'ignore' is not one of"),
                           ([{**SUP, "on_unmeasured": "warn"}], "on_unmeasured applies to absolute gates only")):
        sub = tmp_path / message[:6].strip("'")
        sub.mkdir()
        card = make_scorecard(sub, gates=gates, n=4)
        with pytest.raises(ScorecardError) as err:
            load_scorecard(card)
        assert message in str(err.value) and str(err.value).startswith(f"{card}:")


def test_intervals_never_print_negative_zero_and_the_rule_reads_in_the_metric_direction(tmp_path: Path) -> None:
    """An interval of tiny negative numbers printed as [-0.000, -0.000]; 'drops by at most 0 (lower is better)'
    left the reader guessing which way is bad."""
    from gate.decide.report import gate_cells

    row = {"gate": "g", "rule": "non_inferiority", "scorer": "ref", "metric": "under_refusal", "suite": None,
           "category": None, "test": "paired_bootstrap", "direction": "lower_is_better", "margin": 0,
           "threshold": None, "observed": -0.0, "ci_low": -0.0001, "ci_high": -0.0, "p_value": 1.0,
           "p_holm": 1.0, "verdict": "fail", "severity": "block"}
    cells = gate_cells(row)
    assert "-0.000" not in " ".join(cells) and cells[3] == "[0.000, 0.000]" and cells[2] == "+0.000"
    assert cells[1] == "ref.under_refusal not above the baseline (lower is better, paired_bootstrap)"
    assert gate_cells({**row, "margin": 0.02})[1].startswith("ref.under_refusal at most 0.02 above the baseline")
    up = gate_cells({**row, "direction": "higher_is_better", "margin": 0.05})[1]
    assert up.startswith("ref.under_refusal at most 0.05 below the baseline (higher is better")
    assert "drops by" not in up
    # end to end: identical scores give a zero interval, and decision.md shows no negative zero anywhere
    code, data, _ = _run_pair(tmp_path, [_ni(0.0, direction="lower_is_better")], [0.1, 0.7, 0.4] * 4,
                              [0.1, 0.7, 0.4] * 4)
    md = (tmp_path / "out" / "decision.md").read_text()
    assert "-0.000" not in md and "not above the baseline" in md
