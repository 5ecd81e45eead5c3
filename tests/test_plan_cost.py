"""Cost from a measured pilot: tokens/s per GPU scaled to the cluster, hours, price, and the failure budget."""

import json

import pytest

from gate.errors import GateError
from gate.plan.cost import cost_plan
from tests.conftest import run_gate


def test_pilot_scales_to_the_run_and_the_budget_is_added():
    c = cost_plan(tokens=3.6e9, pilot_tokens_per_s=10_000, pilot_gpus=8, gpus=64, price_per_gpu_hour=2.0,
                  failure_budget=0.2, scaling_efficiency=0.9)
    assert c.tokens_per_s == pytest.approx(10_000 / 8 * 64 * 0.9)
    assert c.hours == pytest.approx(3.6e9 / 72_000 / 3600)
    assert c.gpu_hours == pytest.approx(c.hours * 64) and c.cost == pytest.approx(c.gpu_hours * 2.0)
    assert c.cost_with_budget == pytest.approx(c.cost / 0.8)  # 20 % of all GPU time is lost


def test_same_cluster_as_pilot_ignores_scaling_efficiency():
    c = cost_plan(tokens=1e9, pilot_tokens_per_s=1e5, pilot_gpus=16, gpus=16, price_per_gpu_hour=1,
                  scaling_efficiency=0.5, failure_budget=0)
    assert c.tokens_per_s == 1e5 and c.cost_with_budget == c.cost


@pytest.mark.parametrize("kwargs", [{"failure_budget": 1.0}, {"tokens": 0}, {"scaling_efficiency": 0},
                                    {"price_per_gpu_hour": -1}])
def test_nonsense_is_refused(kwargs):
    base = {"tokens": 1e9, "pilot_tokens_per_s": 1e5, "pilot_gpus": 8, "gpus": 8, "price_per_gpu_hour": 2.0}
    with pytest.raises(GateError):
        cost_plan(**{**base, **kwargs})


def test_cli_cost_json_and_missing_pilot():
    res = run_gate("plan", "--params", "753e9", "--gpus", "256", "--pp", "4", "--ep", "64", "--expert-params",
                   "730e9", "--tokens", "2e9", "--pilot-tokens-per-s", "150000", "--pilot-gpus", "256", "--price",
                   "3.5", "--json")
    assert res.returncode == 0, res.stderr
    c = json.loads(res.stdout)["cost"]
    assert c["hours"] == pytest.approx(2e9 / 150_000 / 3600)
    assert c["cost_with_budget"] == pytest.approx(c["gpu_hours"] / 0.85 * 3.5)
    res = run_gate("plan", "--params", "753e9", "--tokens", "2e9")
    assert res.returncode == 1 and "needs --tokens, --pilot-tokens-per-s and --pilot-gpus" in res.stderr
