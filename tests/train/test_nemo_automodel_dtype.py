"""The spec's dtype under the nemo-automodel runner, checked with AutoModel 0.7's own code where .venv-nemo exists.

The recipe's model section had no dtype, so AutoModel's from_pretrained default `torch_dtype="auto"` chose the
precision (the checkpoint's dtype; bfloat16 for AutoModel's own model classes) while ms-swift got `--torch_dtype` and
the local runner loaded in the spec's dtype: one spec, a different precision per runner, and nothing said so."""

from __future__ import annotations

import dataclasses
import json
import subprocess
from pathlib import Path

import pytest

from gate.train.runners import get_runner
from gate.train.runners.nemo_automodel import recipe
from gate.train.spec import TrainSpec, load_spec
from tests.conftest import ROOT, run_gate

NEMO_PY = ROOT / ".venv-nemo" / "bin" / "python"
SCRIPT = ROOT / "tests" / "train" / "trainer_scripts" / "automodel_model_dtype.py"
needs_nemo = pytest.mark.skipif(not NEMO_PY.exists(), reason="nemo-automodel venv (.venv-nemo) not installed")


def _spec(tmp_path: Path, dtype: str, **changes: object) -> TrainSpec:
    spec = load_spec(ROOT / "trainspecs" / "glm5-lora-nemo.yaml")
    return dataclasses.replace(spec, dtype=dtype, output_dir=str(tmp_path / dtype / "out"), **changes)


def _tiny(tmp_path: Path, dtype: str) -> TrainSpec:
    """The tiny Llama fixture (stored in bfloat16) on one GPU with the default backend: a model AutoModel builds on
    CPU with its own Llama class, and a few triage rows so the validator's ChatDataset pass stays short."""
    from tests.test_train_local import tiny_model

    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join((ROOT / "fixtures/datasets/triage-clean/train.jsonl").read_text().splitlines(True)[:3]))
    spec = _spec(tmp_path, dtype, model=str(tiny_model()), train_files=(str(rows),), val_files=(),
                 runner_options={"nemo-automodel": {}})
    return dataclasses.replace(spec, parallelism=dataclasses.replace(spec.parallelism, nodes=1, gpus_per_node=1,
                                                                     ep=1))


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_the_recipe_model_section_carries_the_specs_dtype(tmp_path, dtype):
    model = recipe(_spec(tmp_path, dtype))["model"]
    assert model["torch_dtype"] == dtype
    # the deliberate fp32 islands stay: they are compute choices of the backend, not the storage dtype
    assert (model["backend"]["rms_norm"], model["backend"]["gate_precision"]) == ("torch_fp32", "float32")


def test_float16_is_refused_at_plan_time_in_one_line(tmp_path):
    """AutoModel 0.7 has no loss scaling (no GradScaler anywhere in it): a float16 run underflows, as the local
    runner's would, so the plan is refused in one line instead of written and "validated"."""
    src = (ROOT / "trainspecs" / "glm5-lora-nemo.yaml").read_text()
    p = tmp_path / "s.yaml"
    p.write_text(src.replace("../fixtures", str(ROOT / "fixtures")).replace("../.cache/runs/glm5-lora-nemo",
                                                                            str(tmp_path / "run"))
                 + "dtype: float16\n")
    args = ["train", str(p), "--runner", "nemo-automodel", "--dry-run"]
    if NEMO_PY.exists():
        args += ["--validate-with", str(NEMO_PY)]
    res = run_gate(*args)
    assert res.returncode == 1, res.stdout
    assert res.stderr.strip().count("\n") == 0 and "Traceback" not in res.stderr, res.stderr
    assert f"{p}: dtype: float16 is not supported by the nemo-automodel runner" in res.stderr
    assert "validated" not in res.stdout + res.stderr
    assert not (tmp_path / "run").exists()


def test_float32_across_gpus_says_fsdp2_computes_in_bfloat16(tmp_path):
    """Not the all-float32 run ms-swift and the local runner do: FSDP2's default MixedPrecisionPolicy casts to
    bfloat16 for compute (one GPU skips fully_shard and has no such policy)."""
    runner = get_runner("nemo-automodel")
    many = runner.plan(_spec(tmp_path, "float32"), tmp_path / "plan").notes
    assert any("dtype float32" in n and "computes in bfloat16" in n for n in many), many
    assert not any("dtype float32" in n for n in runner.plan(_spec(tmp_path, "bfloat16"), tmp_path / "p2").notes)
    one = _spec(tmp_path, "float32")
    one = dataclasses.replace(one, parallelism=dataclasses.replace(one.parallelism, nodes=1, gpus_per_node=1, ep=1))
    assert not any("dtype float32" in n for n in runner.plan(one, tmp_path / "p3").notes)


def _automodel_dtype(cfg: Path, tmp_path: Path) -> dict[str, object]:
    proc = subprocess.run([str(NEMO_PY), str(SCRIPT), str(cfg)], capture_output=True, text=True, timeout=600,
                          cwd=tmp_path, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "HF_HUB_OFFLINE": "1",
                                             "HF_HOME": str(tmp_path / "hf")})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@needs_nemo
@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_automodel_builds_the_written_recipes_model_in_the_specs_dtype(tmp_path, dtype):
    """gate's automodel.yaml through AutoModel's own config loader and `instantiate` (from_pretrained, then its own
    `_init_model`; only the CUDA-bound infrastructure half is stubbed, see the script): the model section's dtype
    resolves to the spec's torch dtype and the parameters are built in it. The fixture is stored in bfloat16, so
    float32 is the case the old recipe got wrong (it built bfloat16)."""
    from gate.train.plan_launch import write_plan

    _, plan_dir = write_plan(_tiny(tmp_path, dtype), get_runner("nemo-automodel"))
    got = _automodel_dtype(plan_dir / "automodel.yaml", tmp_path)
    assert got["yaml_value"] == dtype and got["resolved"] == f"torch.{dtype}", got
    assert got["custom_model"] is True  # AutoModel's own Llama class, the path GLM-5 takes too
    assert got["param_dtypes"] == [f"torch.{dtype}"], got


@needs_nemo
def test_the_validator_resolves_the_dtype_and_warns_when_the_recipe_has_none(tmp_path):
    """`--validate-with` reports the dtype AutoModel resolves; a plan written before the recipe carried it (no
    torch_dtype key) is a warning, which --strict turns into a failure, not a silent "validated"."""
    from gate.commands.train import validate_plans
    from gate.train.plan_launch import write_plan

    runner = get_runner("nemo-automodel")
    _, bf16 = write_plan(_tiny(tmp_path, "bfloat16"), runner)
    _, fp32 = write_plan(_tiny(tmp_path, "float32"), runner)
    _, old = write_plan(dataclasses.replace(_tiny(tmp_path, "bfloat16"), output_dir=str(tmp_path / "old")), runner)
    cfg = old / "automodel.yaml"
    cfg.write_text(cfg.read_text().replace("  torch_dtype: bfloat16\n", ""))
    v_bf16, v_fp32, v_old = validate_plans("nemo-automodel", [bf16, fp32, old], str(NEMO_PY))
    assert v_bf16["ok"] and "model.torch_dtype=torch.bfloat16" in v_bf16["checks"], v_bf16
    assert v_fp32["ok"] and "model.torch_dtype=torch.float32" in v_fp32["checks"], v_fp32
    assert not v_bf16["warnings"] and not v_fp32["warnings"]
    assert v_old["ok"] and not any(c.startswith("model.") for c in v_old["checks"]), v_old
    assert any('sets no dtype: AutoModel loads it "auto"' in w for w in v_old["warnings"]), v_old
