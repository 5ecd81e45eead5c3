"""`gate plan`: the published 753B arithmetic, sharding per GPU, LoRA on a frozen base, counts from config.json."""

import json

import pytest

from gate.errors import GateError
from gate.plan.memory import Layout, memory_plan
from gate.plan.params import count_from_config, load_config
from tests.conftest import ROOT, run_gate

CONFIGS = ROOT / "fixtures" / "configs"


def test_753b_reproduces_the_published_figures():
    m = memory_plan(params=753_000_000_000)
    tb = {k: round(v / 1e12, 2) for k, v in m.totals.items()}
    assert tb == {"weights": 1.51, "grads": 1.51, "adam": 6.02, "master": 3.01}
    assert 9.0 <= m.total_without_master / 1e12 <= 9.1 and 12.0 <= m.total / 1e12 <= 12.1


def test_cli_table_and_json_print_the_figures():
    res = run_gate("plan", "--params", "753e9")
    assert res.returncode == 0, res.stderr
    for needle in ("1.51 TB", "6.02 TB", "3.01 TB", "9.04 TB", "12.05 TB", "does NOT fit"):
        assert needle in res.stdout
    out = json.loads(run_gate("plan", "--params", "753e9", "--json").stdout)
    assert out["memory"]["totals"]["adam"] == 6.024e12 and out["memory"]["total"] == 12.048e12


@pytest.mark.parametrize(("zero", "expected_gb"), [
    (0, 753 * 16), (1, 753 * 4 + 753 * 12 / 8), (2, 753 * 2 + 753 * 14 / 8), (3, 753 * 16 / 8)])
def test_zero_stages_shard_states_in_order(zero, expected_gb):
    m = memory_plan(params=753_000_000_000, layout=Layout(gpus=8, zero=zero))
    assert m.per_gpu_total / 1e9 == pytest.approx(expected_gb)


def test_tp_splits_dense_ep_splits_experts_pp_splits_both():
    p, e = 1_000_000_000_000, 900_000_000_000
    base = memory_plan(params=p, expert_params=e, layout=Layout(gpus=64, zero=0))
    tp = memory_plan(params=p, expert_params=e, layout=Layout(gpus=64, tp=8, zero=0))
    ep = memory_plan(params=p, expert_params=e, layout=Layout(gpus=64, ep=8, zero=0))
    assert base.per_gpu["weights"] == p * 2
    assert tp.per_gpu["weights"] == pytest.approx(((p - e) / 8 + e) * 2)
    pp = memory_plan(params=p, expert_params=e, layout=Layout(gpus=64, pp=8, zero=0))
    assert pp.per_gpu["weights"] == pytest.approx(base.per_gpu["weights"] / 8)
    assert ep.per_gpu["weights"] == pytest.approx(((p - e) + e / 8) * 2)
    cp = memory_plan(params=p, expert_params=e, layout=Layout(gpus=64, cp=8, zero=3))
    fsdp = memory_plan(params=p, expert_params=e, layout=Layout(gpus=64, zero=3))
    assert cp.per_gpu_total == pytest.approx(fsdp.per_gpu_total)  # context-parallel ranks shard states too


def test_lora_keeps_only_frozen_weights_for_the_base():
    m = memory_plan(params=753_000_000_000, method="lora", trainable=1_000_000_000)
    assert m.totals["weights"] == (753e9 + 1e9) * 2
    assert m.totals["grads"] == 2e9 and m.totals["adam"] == 8e9 and m.totals["master"] == 4e9


def test_counts_from_config_match_the_published_sizes():
    glm5 = count_from_config(load_config(CONFIGS / "glm5.config.json"))
    assert 740e9 < glm5.total < 750e9  # GLM-5: 744B
    assert glm5.expert / glm5.total > 0.95
    air = count_from_config(load_config(CONFIGS / "glm45-air.config.json"))
    assert 100e9 < air.total < 110e9  # GLM-4.5-Air: 106B (the MTP layer is not counted)
    lora, lora_exp = glm5.lora(32)
    attn_only, _ = glm5.lora(32, ("attention",))
    assert 0 < attn_only < lora_exp < lora  # routed experts dominate a LoRA that targets them


def test_cli_lora_from_config_and_bad_inputs(tmp_path):
    res = run_gate("plan", "--config", str(CONFIGS / "glm5.config.json"), "--method", "lora", "--lora-rank", "32",
                   "--gpus", "128", "--ep", "128", "--json")
    assert res.returncode == 0, res.stderr
    m = json.loads(res.stdout)["memory"]
    assert m["method"] == "lora" and m["fits"] and m["trainable"] < m["params"] / 20
    for args, needle in ((("--params", "753e9", "--gpus", "10", "--tp", "4"), "not a multiple of tp*pp*cp"),
                         (("--params", "753e9", "--method", "lora"), "needs --trainable-params"),
                         (("--config", str(tmp_path / "nope.json")), "model config not found"),
                         ((), "exactly one of --params or --config")):
        res = run_gate("plan", *args)
        assert res.returncode == 1 and needle in res.stderr and res.stderr.count("\n") == 1, res.stderr


def test_invalid_layout_is_a_gate_error():
    with pytest.raises(GateError, match="ZeRO stage"):
        memory_plan(params=10, layout=Layout(zero=4))
