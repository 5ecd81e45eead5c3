"""`gate probe` through the real CLI on tiny GLM-5 / GLM-4.5 models built from config (no mocks, no hub)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_gate

SPECS = ROOT / "loraspecs"


@pytest.fixture(scope="module")
def models() -> dict[str, Path]:
    sys.path.insert(0, str(ROOT / "fixtures"))
    try:
        import build_glm_models
    finally:
        sys.path.pop(0)
    return build_glm_models.build(ROOT / ".cache" / "probe-models")


def _probe(*args: str) -> tuple[int, dict, str]:
    proc = run_gate("probe", *args, "--json")
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout) if proc.stdout.strip().startswith("{") else {}, proc.stderr


def test_glm5_with_expert_lora_passes_every_step(models):
    rc, rep, err = _probe(str(models["glm5-tiny"]), "--lora", str(SPECS / "glm5-experts.yaml"))
    steps = {s["number"]: s for s in rep["steps"]}
    assert rc == 0, [(s["number"], s["evidence"]) for s in rep["steps"] if s["status"] == "fail"] or err
    assert sorted(steps) == list(range(1, 11)) and all(s["status"] in ("pass", "warn") for s in steps.values())
    assert steps[1]["details"]["peft"] and len(steps[1]["details"]["config_sha256"]) == 64
    assert steps[3]["details"]["architecture"] == "GlmMoeDsaForCausalLM"
    assert steps[3]["details"]["fp32_parameters"] == ["mlp.gate.weight"]  # the router stays fp32 in a bf16 build
    cov = steps[4]["details"]["covered"]
    assert cov["routed_experts"] == [2, 2] and cov["shared_experts"] == [3, 3]
    assert cov["router"][0] == 0 and cov["indexer"][0] == 0  # never touched
    assert not any("untouched" in w for w in steps[4]["warnings"])
    norms = steps[6]["details"]["grad_norms"]
    assert all(norms[p] > 0 for p in ("attention", "shared_experts", "routed_experts"))
    assert "router" not in norms and "indexer" not in norms
    assert steps[7]["details"]["killed"] and steps[7]["details"]["max_param_abs_diff"] <= 1e-6
    assert steps[8]["details"]["merge_max_abs_diff"] <= 1e-4 < 1e-4 + steps[8]["details"]["adapter_effect"]
    assert any("stock PEFT" in w and "size mismatch" in w for w in steps[8]["warnings"])
    assert steps[9]["details"]["reproducible"] and steps[9]["details"]["logits_max_abs_diff"] > 0
    assert sum(f.endswith(".distcp") for f in steps[10]["details"]["files"]) == 2
    assert steps[10]["details"]["max_param_abs_diff"] == 0


def test_glm45_with_expert_lora_passes_every_step_table(models):
    proc = run_gate("probe", str(models["glm45-tiny"]), "--lora", str(SPECS / "glm5-experts.yaml"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for n in range(1, 11):
        assert f"│ {n:>2} │" in proc.stdout
    assert "FAIL" not in proc.stdout and "PASS ·" in proc.stdout
    assert "Glm4MoeForCausalLM" in proc.stdout


def test_llama_style_spec_on_glm5_warns_experts_untouched(models):
    rc, rep, _ = _probe(str(models["glm5-tiny"]), "--lora", str(SPECS / "llama-style.yaml"))
    assert rc == 100  # GLM-5 attention is MLA: q_proj / v_proj match nothing, so nothing would train
    s4 = rep["steps"][3]
    assert all(s["status"] == "skip" and "did not pass" in s["evidence"] for s in rep["steps"][4:])
    text = " ".join(s4["warnings"])
    assert s4["status"] == "fail" and s4["details"]["trainable_params"] == 0
    assert "routed experts untouched" in text and "target_parameters" in text
    assert "shared experts untouched" in text and "q_proj, v_proj match no module" in text


def test_llama_style_spec_on_glm45_warns_but_passes(models):
    rc, rep, _ = _probe(str(models["glm45-tiny"]), "--lora", str(SPECS / "llama-style.yaml"), "--steps", "1-4")
    assert rc == 0
    s4 = rep["steps"][3]
    assert s4["status"] == "warn" and s4["details"]["covered"]["attention"] == [4, 8]
    assert any(w.startswith("routed experts untouched") for w in s4["warnings"])
    assert any(w.startswith("shared experts untouched") for w in s4["warnings"])


def test_broken_shards_fail_step_2(models, tmp_path):
    bad = tmp_path / "glm5-bad"
    shutil.copytree(models["glm5-tiny"], bad)
    weights = bad / "model.safetensors"
    (bad / "MANIFEST.json").write_text(json.dumps({"files": {"model.safetensors": "0" * 64}}))
    rc, rep, _ = _probe(str(bad), "--steps", "2")
    assert rc == 100 and "differs from MANIFEST.json" in rep["steps"][0]["evidence"]
    (bad / "MANIFEST.json").unlink()
    data = weights.read_bytes()
    weights.write_bytes(data[: len(data) // 2])  # a truncated download
    rc, rep, _ = _probe(str(bad), "--steps", "2")
    assert rc == 100 and "lies outside the file" in rep["steps"][0]["evidence"]
    (bad / "model.safetensors.index.json").write_text(json.dumps(
        {"weight_map": {"lm_head.weight": "model-00002-of-00002.safetensors"}}))
    rc, rep, _ = _probe(str(bad), "--steps", "2")
    assert rc == 100 and "listed in the index but missing" in rep["steps"][0]["evidence"]
    assert weights.stat().st_size == len(data) // 2  # the probe never changes its input


@pytest.mark.parametrize("spec_text, message", [
    ("r: 8\ntargets: [q_proj]\n", "targets: unknown key"),
    ("r: 0\ntarget_modules: [q_proj]\n", "r: must be a number >= 1"),
    ("r: [8\n", "not valid YAML"),
])
def test_bad_spec_is_one_line_exit_1(models, tmp_path, spec_text, message):
    spec = tmp_path / "spec.yaml"
    spec.write_text(spec_text)
    proc = run_gate("probe", str(models["glm5-tiny"]), "--lora", str(spec))
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and str(spec) in proc.stderr and message in proc.stderr


def test_missing_model_and_bad_data_exit_1(models, tmp_path):
    proc = run_gate("probe", str(tmp_path / "nope"))
    assert proc.returncode == 1 and "model directory not found" in proc.stderr
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text('{"model_type": "glm4_moe",\n "x": }\n')
    proc = run_gate("probe", str(broken))
    assert proc.returncode == 1 and f"{broken / 'config.json'}:2: not valid JSON" in proc.stderr
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"messages": [{"role": "user", "content": "hi"}]}\n{"messages": 3}\n')
    proc = run_gate("probe", str(models["glm45-tiny"]), "--data", str(rows), "--rows", "5", "--steps", "5")
    assert proc.returncode == 1 and f"{rows}:2: messages:" in proc.stderr and "Traceback" not in proc.stderr


def test_full_finetuning_trains_the_router_and_freezes_the_indexer(models):
    rc, rep, _ = _probe(str(models["glm5-tiny"]), "--steps", "4,6")
    s4, s6 = rep["steps"]
    assert rc == 0 and s4["details"]["mode"] == "full" and s4["details"]["frozen_indexer_params"] > 0
    assert "indexer" in s4["warnings"][0] and "DCP" in s4["warnings"][0]
    norms = s6["details"]["grad_norms"]
    assert all(norms[p] > 0 for p in ("attention", "router", "shared_experts", "routed_experts"))
    assert "indexer" not in norms
