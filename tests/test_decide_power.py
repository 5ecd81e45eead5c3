"""Power of the paired gates (issue 31 items 14 and 15): what a gate could detect is in the decision, a non-inferiority
margin too tight for its n is warned about, and `gate scorecard power` plans n from the same statistics.

Before: decision.json, decision.md and the terminal said nothing about power (n = 500 at 60% baseline misses a true
+5 points about a third of the time), and there was no planning command."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from gate.decide import power
from gate.decide.stats import mcnemar_exact
from tests.conftest import gate_inprocess
from tests.test_decide_gates import N, make_scorecard, record_run


def _brute_mcnemar_power(n: int, disc: float, effect: float, alpha: float) -> float:
    """Every (lost, won) table of n pairs, weighted by its trinomial probability, judged by the gate's McNemar."""
    from math import comb

    pb, pc = (disc - effect) / 2, (disc + effect) / 2
    total = 0.0
    for b, c in itertools.product(range(n + 1), repeat=2):
        if b + c > n:
            continue
        prob = comb(n, b) * comb(n - b, c) * pb ** b * pc ** c * (1 - disc) ** (n - b - c)
        total += prob * (mcnemar_exact(b, c, "greater") <= alpha)
    return total


@pytest.mark.parametrize(("n", "disc", "effect"), [(30, 0.4, 0.1), (25, 0.2, 0.0), (40, 0.5, 0.2)])
def test_exact_mcnemar_power_equals_enumerating_every_table(n, disc, effect):
    assert power.mcnemar_power(n, disc, effect, 0.05) == pytest.approx(_brute_mcnemar_power(n, disc, effect, 0.05),
                                                                        abs=1e-9)


def test_the_issues_example_n500_baseline60_plus5():
    """30% discordant pairs reproduce the issue's figures: about two in three for +5 points (62.6% exact, 65.7% by the
    normal approximation) and about a third of identical candidates blocked by a 0.05 margin."""
    assert power.mcnemar_power(500, 0.30, 0.05, 0.05) == pytest.approx(0.626, abs=0.002)
    assert power.normal_power(500, power.binary_sd(0.30, 0.05), 0.05, 0.05) == pytest.approx(0.657, abs=0.002)
    ident = power.power_at(500, rule="non_inferiority", test="paired_bootstrap", alpha=0.05, effect=0.0,
                           margin=0.05, disc=0.30)
    assert 0.62 < ident < 0.67
    assert power.discordance(0.6, 0.05, 0.0) == pytest.approx(0.47)


def test_items_needed_is_the_first_n_that_reaches_the_power():
    for rule, test, margin, effect in [("superiority", "mcnemar", 0.0, 0.05),
                                       ("non_inferiority", "paired_bootstrap", 0.05, 0.0)]:
        n = power.items_needed(rule=rule, test=test, alpha=0.05, power=0.8, effect=effect, margin=margin, disc=0.3)
        at = power.power_at(n, rule=rule, test=test, alpha=0.05, effect=effect, margin=margin, disc=0.3)
        below = power.power_at(n - 1, rule=rule, test=test, alpha=0.05, effect=effect, margin=margin, disc=0.3)
        assert at >= 0.8 > below, (rule, n, at, below)
    assert power.items_needed(rule="non_inferiority", test="paired_bootstrap", alpha=0.05, power=0.8, effect=-0.05,
                              margin=0.05, disc=0.3) is None  # a candidate exactly at -margin never reaches it


def test_impossible_planning_inputs_are_refused_with_the_range():
    with pytest.raises(power.PowerInputError, match="possible: -0.599 to 0.899"):
        power.discordance(0.6, 0.05, 0.99)
    with pytest.raises(power.PowerInputError, match="not a rate"):
        power.discordance(0.98, 0.05)


def _pair_with_discordance(rng: np.random.Generator, n: int, lost: int, won: int) -> tuple[list[float], list[float]]:
    base = (rng.random(n) < 0.6).astype(float)
    cand = base.copy()
    ones, zeros = np.where(base == 1)[0], np.where(base == 0)[0]
    cand[rng.choice(ones, lost, replace=False)] = 0.0
    cand[rng.choice(zeros, won, replace=False)] = 1.0
    return base.tolist(), cand.tolist()


def test_decision_states_power_for_every_paired_gate_and_warns_on_a_tight_margin(tmp_path: Path) -> None:
    gates = [{"name": "task-improves", "scorer": "task", "metric": "strict", "rule": "superiority", "alpha": 0.05},
             {"name": "fmt-no-regression", "scorer": "fmt", "metric": "schema_valid", "rule": "non_inferiority",
              "margin": 0.05, "test": "paired_bootstrap"},
             {"name": "fmt-floor", "scorer": "fmt", "metric": "schema_valid", "rule": "absolute", "threshold": 0.1}]
    card, db = make_scorecard(tmp_path, gates=gates), tmp_path / "g.duckdb"
    rng = np.random.default_rng(7)
    tb, tc = _pair_with_discordance(rng, N, 25, 35)  # 60 of 200 discordant, +5 points observed
    fb, fc = _pair_with_discordance(rng, N, 30, 30)  # identical rates, 30% discordant: n 200 cannot show 0.05
    record_run(db, card, "baseline", {("task", "strict"): tb, ("fmt", "schema_valid"): fb}, comparison="c1")
    record_run(db, card, "candidate", {("task", "strict"): tc, ("fmt", "schema_valid"): fc}, comparison="c1")
    out = tmp_path / "out"
    code, text = gate_inprocess("decide", "--scorecard", str(card), "--db", str(db), "--out", str(out))
    assert code in (0, 100), text
    data = json.loads((out / "decision.json").read_text())
    rows = {g["gate"]: g for g in data["gates"]}
    sup = rows["task-improves"]["power"]
    assert sup["method"] == "exact McNemar" and sup["discordance"] == pytest.approx(0.30) and sup["n"] == N
    assert sup["mde"] == pytest.approx(0.0968, abs=0.01)  # 80% power at n 200 needs ~ +10 points
    assert sup["power_observed"] == pytest.approx(power.mcnemar_power(N, 0.30, 0.05, 0.05))
    assert power.mcnemar_power(N, 0.30, sup["mde"], 0.05) == pytest.approx(0.8, abs=0.002)
    ni = rows["fmt-no-regression"]["power"]
    assert ni["power_identical"] < 0.5 and ni["n_identical"] > 600
    # the n the warning names is the planning command's for the observed discordance
    assert ni["n_identical"] == power.items_needed(rule="non_inferiority", test="paired_bootstrap", alpha=0.05,
                                                   power=0.8, effect=0.0, margin=0.05, disc=ni["se"] ** 2 * N)
    assert rows["fmt-floor"]["power"] is None  # absolute gates have no paired power
    tight = [w for w in data["warnings"] if "too tight" in w]
    assert len(tight) == 1 and tight[0].startswith("gate fmt-no-regression: margin 0.05 is too tight for 200 pairs")
    md = (out / "decision.md").read_text()
    assert "## Power" in md and "- **task-improves**: n 200: detects +0.09" in md
    assert "power: task-improves: n 200" in text and "too tight" in text


def test_an_ample_margin_is_not_warned_about(tmp_path: Path) -> None:
    gates = [{"name": "fmt-no-regression", "scorer": "fmt", "metric": "schema_valid", "rule": "non_inferiority",
              "margin": 0.2}]
    card, db = make_scorecard(tmp_path, gates=gates), tmp_path / "g.duckdb"
    fb, fc = _pair_with_discordance(np.random.default_rng(3), N, 30, 30)
    record_run(db, card, "baseline", {("fmt", "schema_valid"): fb}, comparison="c1")
    record_run(db, card, "candidate", {("fmt", "schema_valid"): fc}, comparison="c1")
    out = tmp_path / "out"
    code, text = gate_inprocess("decide", "--scorecard", str(card), "--db", str(db), "--out", str(out))
    data = json.loads((out / "decision.json").read_text())
    assert code == 0, text
    assert data["gates"][0]["power"]["power_identical"] > 0.99
    assert not [w for w in data["warnings"] if "too tight" in w]


def test_scorecard_power_plans_the_issues_example():
    code, text = gate_inprocess("scorecard", "power", "--baseline", "0.6", "--effect", "0.05", "--discordance",
                                "0.3", "--n", "500")
    assert code == 0, text
    assert text.splitlines()[0] == ("superiority (exact McNemar, alpha 0.05): baseline 0.6, effect +0.05, "
                                    "discordance 0.300: 776 items for 80% power; at n 500: 62.6%")
    code, text = gate_inprocess("scorecard", "power", "--baseline", "0.6", "--margin", "0.05", "--discordance",
                                "0.3", "--n", "500", "--json")
    plan = json.loads(text)["plans"][0]
    assert code == 0 and plan["rule"] == "non_inferiority" and plan["items"] == 741
    assert plan["power_at_n"] == pytest.approx(0.639, abs=0.002)


def test_scorecard_power_reads_each_gates_alpha_margin_and_scope(tmp_path: Path) -> None:
    gates = [{"name": "task-improves", "scorer": "task", "metric": "strict", "rule": "superiority", "alpha": 0.01},
             {"name": "fmt-no-regression", "scorer": "fmt", "metric": "schema_valid", "rule": "non_inferiority",
              "margin": 0.05, "category": "a"}]
    card = make_scorecard(tmp_path, gates=gates)
    code, text = gate_inprocess("scorecard", "power", "-s", str(card), "--baseline", "0.6", "--effect", "0.05",
                                "--json")
    assert code == 0, text
    sup, ni = json.loads(text)["plans"]
    assert sup["gate"] == "task-improves" and sup["alpha"] == 0.01 and sup["items_in_scope"] == N
    assert sup["items"] == power.items_needed(rule="superiority", test="mcnemar", alpha=0.01, power=0.8,
                                              effect=0.05, disc=0.47)
    assert ni["margin"] == 0.05 and ni["effect"] == 0.0 and ni["items_in_scope"] == N // 2 and ni["n"] == N // 2
    # two paired gates share Holm: at worst a gate is judged at alpha / 2, which needs more items
    assert ni["items_holm_worst"] == power.items_needed(rule="non_inferiority", test="paired_bootstrap",
                                                        alpha=0.025, power=0.8, effect=0.0, margin=0.05, disc=0.48)
    assert ni["items_holm_worst"] > ni["items"]


@pytest.mark.parametrize(("args", "code", "line"), [
    (["--baseline", "1.5", "--effect", "0.05"], 1, "gate: error: baseline rate must be between 0 and 1"),
    (["--baseline", "0.6", "--effect", "0.05", "--correlation", "0.99"], 1,
     "gate: error: correlation 0.99 is impossible for rates 0.6 and 0.65"),
    (["--baseline", "0.6"], 1, "gate: error: --effect: required without --margin"),
    (["--baseline", "0.6", "--effect", "0.05", "--correlation", "0.1", "--discordance", "0.3"], 1,
     "gate: error: --discordance: give --correlation or --discordance, not both"),
    (["--baseline", "0.6", "--effect", "0.5", "--discordance", "0.3"], 1,
     "gate: error: baseline 0.6 + effect 0.5 = 1.1 is not a rate"),
    (["--baseline", "0.6", "--margin", "0.05", "--alpha", "0.7"], 1, "gate: error: alpha must be between 0 and 0.5"),
])
def test_scorecard_power_bad_input_is_one_line_exit_1(args, code, line):
    res = gate_inprocess("scorecard", "power", *args, split=True)
    assert res.returncode == code and res.stdout == ""
    assert len(res.stderr.strip().splitlines()) == 1 and res.stderr.startswith(line), res.stderr


def test_scorecard_power_without_baseline_is_a_usage_error():
    res = gate_inprocess("scorecard", "power", "--effect", "0.05", split=True)
    assert res.returncode == 2 and "--baseline" in res.stderr
