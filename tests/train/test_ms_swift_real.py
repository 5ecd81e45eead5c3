"""ms-swift 4.6 really trains on CPU through `gate train --runner ms-swift`: a tiny GLM-5 (`glm_moe_dsa`, LoRA on MLA
attention and the fused experts) for 3 steps on the triage split, float32 from the spec's `dtype`, no eval set (so no
`--create_checkpoint_symlink`, which crashed ms-swift at the end), min_lr reaching the scheduler. Metrics stream into
DuckDB, the checkpoint gets MANIFEST.json, train.log keeps paths, and the plan's export.sh (`swift export --merge_lora
true`) merges the adapter."""

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT, run_gate

SWIFT_BIN = ROOT / ".venv-swift" / "bin"
pytestmark = pytest.mark.skipif(not (SWIFT_BIN / "swift").exists(),
                                reason="ms-swift venv (.venv-swift) not installed: make test builds it")


def _env(tmp):
    return {"PATH": f"{SWIFT_BIN}:{os.environ['PATH']}", "MODELSCOPE_CACHE": str(tmp / "ms"),
            "HF_HOME": str(tmp / "hf"), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "OMP_NUM_THREADS": "2"}


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    sys.path.insert(0, str(ROOT / "fixtures"))
    from build_glm_models import build

    model = build()["glm5-tiny"]
    tmp = tmp_path_factory.mktemp("swift")
    spec = tmp / "spec.yaml"
    spec.write_text(f"""\
name: tiny-swift
base_model: {{path: {model}}}
method:
  type: lora
  rank: 4
  alpha: 8
  targets: [q_a_proj, q_b_proj, kv_a_proj_with_mqa, kv_b_proj, o_proj]
  target_parameters: [mlp.experts.gate_up_proj, mlp.experts.down_proj]
data: {{train: {ROOT}/fixtures/datasets/triage-clean/train.jsonl}}
dtype: float32
sequence_length: 512
batch: {{micro: 2, global: 2}}
steps: 3
seed: 7
optimizer: {{lr: 1.0e-3, min_lr: 1.0e-4, warmup_steps: 0, schedule: cosine}}
logging: {{every_steps: 1}}
output_dir: {tmp / "run"}
runners:
  ms-swift: {{model_type: glm_moe_dsa, template: glm4_7, agent_template: glm4_7, use_hf: true}}
""")
    res = run_gate("train", str(spec), "--runner", "ms-swift", "--db", str(tmp / "g.duckdb"), env=_env(tmp),
                   timeout=900)
    return tmp, res


def test_swift_sft_trains_records_and_collects(trained):
    import duckdb

    tmp, res = trained
    assert res.returncode == 0, res.stderr[-3000:] + res.stdout[-2000:]
    con = duckdb.connect(str(tmp / "g.duckdb"), read_only=True)
    (run_id, status, steps, ckpt, digest), = con.execute(
        "SELECT run_id, status, steps, checkpoint, manifest_sha256 FROM train_runs").fetchall()
    rows = con.execute("SELECT step, loss, grad_norm, lr FROM train_metrics WHERE run_id = ? AND kind = 'train' "
                       "ORDER BY step", [run_id]).fetchall()
    con.close()
    assert (status, steps) == ("succeeded", 3)
    assert [r[0] for r in rows] == [1, 2, 3] and all(r[1] > 0 and r[2] > 0 for r in rows)
    assert rows[-1][3] == pytest.approx(1e-4)  # cosine_with_min_lr ends at the spec's min_lr, not 0
    manifest = json.loads((tmp / "run" / "swift").joinpath(ckpt, "MANIFEST.json").read_text())
    assert manifest["runner"] == "ms-swift" and digest
    cfg = json.loads((ROOT / ckpt / "adapter_config.json").read_text())
    assert set(cfg["target_modules"]) == {"q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj", "o_proj"}
    assert {"mlp.experts.gate_up_proj", "mlp.experts.down_proj"} <= set(cfg["target_parameters"])
    log = (tmp / "run" / "train.log").read_text()
    assert f"last_model_checkpoint: {ckpt}" in log  # the path survives masking (it used to become /tmp***)
    args = json.loads((tmp / "run" / "plan" / "swift_sft.args.json").read_text())["args"]
    assert "--create_checkpoint_symlink" not in args and args[args.index("--torch_dtype") + 1] == "float32"


def test_export_sh_merges_the_adapter(trained):
    tmp, res = trained
    assert res.returncode == 0
    import duckdb

    con = duckdb.connect(str(tmp / "g.duckdb"), read_only=True)
    (ckpt,), = con.execute("SELECT checkpoint FROM train_runs").fetchall()
    con.close()
    proc = subprocess.run(["bash", str(tmp / "run" / "plan" / "export.sh"), ckpt], capture_output=True, text=True,
                          env={**os.environ, **_env(tmp)}, timeout=600, cwd=tmp)
    assert proc.returncode == 0, proc.stderr[-3000:]
    merged = ROOT / f"{ckpt}-merged"
    assert (merged / "config.json").is_file() and list(merged.glob("*.safetensors"))
    assert not (merged / "adapter_config.json").exists()  # merged weights, not an adapter
