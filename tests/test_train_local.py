"""The local runner end to end, no fakes: `gate train` starts a real training process on the tiny model, streams
its log into DuckDB while it runs, the loss falls, and the checkpoint comes back with a manifest whose hashes match
the files. A trainer that fails gives exit 1, one error line, the log tail, and a `failed` record."""

import hashlib
import json
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_gate

STEPS = 12


def tiny_model() -> Path:
    import sys

    sys.path.insert(0, str(ROOT / "fixtures"))
    from build_tiny_model import build

    model, _ = build(lora=False)
    return model


def _spec(tmp_path: Path, model: Path, steps: int = STEPS, extra: str = "", data: str = "") -> Path:
    p = tmp_path / "spec.yaml"
    p.write_text(f"""\
name: tiny-local
base_model: {{path: {model}}}
method: {{type: full}}
data: {{train: {ROOT}/fixtures/datasets/triage-clean{data}}}
sequence_length: 512
batch: {{micro: 8, global: 8}}
steps: {steps}
seed: 7
optimizer: {{lr: 3.0e-3, warmup_steps: 2, schedule: cosine}}
logging: {{every_steps: 1}}
output_dir: {tmp_path / "run"}
checks: [check-20260101-abc]
runners:
  local: {{threads: 2}}
{extra}""")
    return p


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """One run serves every check: validation on the val split and a step checkpoint every 4 steps, of which
    `keep: 2` (counting the final one) leaves only checkpoint-8. checkpoint-100 is an earlier run's."""
    tmp = tmp_path_factory.mktemp("local")
    db = tmp / "g.duckdb"
    (tmp / "run" / "checkpoint-100").mkdir(parents=True)
    (tmp / "run" / "checkpoint-100" / "config.json").write_text("{}")
    spec = _spec(tmp, tiny_model(), data=f", val: {ROOT}/fixtures/datasets/triage-clean",
                 extra="checkpoint: {every_steps: 4, keep: 2}\n")
    res = run_gate("train", str(spec), "--runner", "local", "--db", str(db), timeout=900)
    return tmp, db, res


def test_local_run_learns_records_metrics_and_collects_checkpoint(trained):
    import duckdb

    tmp, db, res = trained
    assert res.returncode == 0, res.stderr + res.stdout
    con = duckdb.connect(str(db), read_only=True)
    run = con.execute("SELECT run_id, status, exit_code, steps, checkpoint, manifest_sha256, checks "
                      "FROM train_runs").fetchall()
    assert len(run) == 1
    run_id, status, code, steps, ckpt, digest, checks = run[0]
    assert (status, code, steps) == ("succeeded", 0, STEPS)
    assert json.loads(checks) == ["check-20260101-abc"]
    rows = con.execute("SELECT step, loss, grad_norm, lr, tokens_per_s, logged_at FROM train_metrics "
                       "WHERE run_id = ? AND kind = 'train' ORDER BY step", [run_id]).fetchall()
    con.close()
    assert [r[0] for r in rows] == list(range(1, STEPS + 1))
    assert all(r[2] > 0 and r[3] > 0 and r[4] > 0 for r in rows)
    losses = [r[1] for r in rows]
    assert sum(losses[-3:]) / 3 < sum(losses[:3]) / 3 - 1.0, losses  # it really learns
    assert len({r[5] for r in rows}) > 1  # streamed while running, not written once at the end

    ckpt = Path(ckpt)
    assert ckpt == tmp / "run" / "checkpoint-final"
    text = (ckpt / "MANIFEST.json").read_text()
    assert hashlib.sha256(text.encode()).hexdigest() == digest
    man = json.loads(text)
    assert man["run_id"] == run_id and man["checks"] == ["check-20260101-abc"] and man["runner"] == "local"
    for group in ("weights", "tokenizer", "chat_template", "config"):
        assert man["files"][group], group
        for rel, sha in man["files"][group].items():
            assert hashlib.sha256((ckpt / rel).read_bytes()).hexdigest() == sha
    data_file = str(ROOT / "fixtures/datasets/triage-clean/train.jsonl")
    assert man["data"][data_file] == hashlib.sha256(Path(data_file).read_bytes()).hexdigest()
    assert man["chat_template_sha256"] == hashlib.sha256((ckpt / "chat_template.jinja").read_bytes()).hexdigest()
    assert man["metrics"]["final_loss"] == losses[-1]

    log = (tmp / "run" / "train.log").read_text()
    assert f"step {STEPS} | epoch" in log
    assert json.loads((tmp / "run" / "plan" / "plan.json").read_text())["command"][1:3] == [
        "-m", "gate.train.local_worker"]


def test_validation_loss_is_streamed_beside_the_training_loss(trained):
    import duckdb

    tmp, db, res = trained
    assert res.returncode == 0, res.stderr + res.stdout
    con = duckdb.connect(str(db), read_only=True)
    rows = con.execute("SELECT step, loss, grad_norm, extra FROM train_metrics WHERE kind = 'val' "
                       "ORDER BY step").fetchall()
    con.close()
    assert [r[0] for r in rows] == [4, 8, STEPS]  # at each checkpoint and at the end
    losses = [r[1] for r in rows]
    assert all(0 < v < 20 for v in losses) and losses[-1] < losses[0] - 0.5, losses  # held-out loss falls too
    assert all(r[2] is None for r in rows)  # no gradient on validation
    assert json.loads(rows[0][3])["num_label_tokens"] > 1000  # the whole val split, assistant tokens only
    man = json.loads((tmp / "run" / "checkpoint-final" / "MANIFEST.json").read_text())
    assert man["metrics"]["final_val_loss"] == losses[-1]
    assert str(ROOT / "fixtures/datasets/triage-clean/val.jsonl") in man["data"]


def test_only_the_newest_checkpoints_are_kept(trained):
    tmp, _, res = trained
    assert res.returncode == 0, res.stderr + res.stdout
    run = tmp / "run"
    names = sorted(p.name for p in run.iterdir() if "checkpoint" in p.name)
    assert names == ["checkpoint-100", "checkpoint-8", "checkpoint-final"], names  # no half-deleted leftovers
    assert (run / "checkpoint-8" / "model.safetensors").is_file()
    assert (run / "checkpoint-100" / "config.json").read_text() == "{}"  # an earlier run's files are not ours
    assert "gate-local: removed checkpoint-4 (checkpoint.keep)" in (run / "train.log").read_text()


def test_prune_keeps_the_newest_and_renames_before_deleting(tmp_path):
    from gate.train.local_worker import _prune

    saved = []
    for step in (2, 4, 6):
        d = tmp_path / f"checkpoint-{step}"
        (d / "sub").mkdir(parents=True)
        (d / "sub" / "w.bin").write_bytes(b"x")
        saved.append(d)
    (tmp_path / ".checkpoint-2.deleting").mkdir()  # a delete interrupted by a crash last time
    _prune(saved, 1)
    assert saved == [tmp_path / "checkpoint-6"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint-6"]
    _prune(saved, 0)
    assert not list(tmp_path.iterdir()) and saved == []


def test_trained_checkpoint_loads_and_answers(trained):
    from gate.engines.embedded import EmbeddedEngine
    from gate.engines.types import Request

    tmp, _, res = trained
    assert res.returncode == 0
    row = json.loads((ROOT / "scorecards/suites/triage-heldout.jsonl").read_text().splitlines()[0])
    with EmbeddedEngine(tmp / "run" / "checkpoint-final") as eng:
        out = eng.generate([Request(messages=tuple(row["messages"]), max_tokens=48)])[0]
    assert out.error is None and out.text  # a real model directory that the scoring engine can serve


def test_failed_trainer_exits_1_with_log_tail_and_failed_record(tmp_path):
    import duckdb

    broken = tmp_path / "broken-model"
    broken.mkdir()
    (broken / "config.json").write_text('{"model_type": "no-such-architecture"}')
    db = tmp_path / "g.duckdb"
    res = run_gate("train", str(_spec(tmp_path, broken, steps=2)), "--runner", "local", "--db", str(db))
    assert res.returncode == 1
    lines = res.stderr.strip().splitlines()
    assert lines[0].startswith("gate: error: ") and "trainer exited with code" in lines[0]
    assert str(tmp_path / "run" / "train.log") in lines[0]
    assert len(lines) > 1 and all(ln.startswith("  | ") for ln in lines[1:])
    assert any("Error" in ln for ln in lines[1:])  # the trainer's own exception is in the tail
    con = duckdb.connect(str(db), read_only=True)
    status, code, error = con.execute("SELECT status, exit_code, error FROM train_runs").fetchall()[0]
    con.close()
    assert status == "failed" and code != 0 and "trainer exited" in error
    assert not (tmp_path / "run" / "checkpoint-final").exists()


def test_lora_run_collects_an_adapter(tmp_path):
    spec = _spec(tmp_path, tiny_model(), steps=2).read_text()
    spec = spec.replace("method: {type: full}", "method: {type: lora, rank: 4, alpha: 8, targets: [q_proj, v_proj]}")
    spec = spec.replace("batch: {micro: 8, global: 8}", "batch: {micro: 2, global: 4}")
    p = tmp_path / "lora.yaml"
    p.write_text(spec)
    res = run_gate("train", str(p), "--runner", "local", "--no-db")
    assert res.returncode == 0, res.stderr
    ckpt = tmp_path / "run" / "checkpoint-final"
    man = json.loads((ckpt / "MANIFEST.json").read_text())
    assert man["adapter"] is True and list(man["files"]["weights"]) == ["adapter_model.safetensors"]
    cfg = json.loads((ckpt / "adapter_config.json").read_text())
    assert sorted(cfg["target_modules"]) == ["q_proj", "v_proj"] and cfg["r"] == 4
    assert "trainable_params" in (tmp_path / "run" / "train.log").read_text()


@pytest.mark.parametrize(("dtype", "stored"), [("bfloat16", "BF16"), ("float32", "F32")])
def test_the_local_run_trains_and_saves_in_the_specs_dtype(tmp_path, dtype, stored):
    """The local worker used to load every model in float32 while ms-swift got the spec's dtype as --torch_dtype,
    so one spec trained in two precisions depending on the runner; the saved weights show which one ran."""
    spec = _spec(tmp_path, tiny_model(), steps=2, extra=f"dtype: {dtype}\n").read_text()
    p = tmp_path / "dtype.yaml"
    p.write_text(spec.replace("batch: {micro: 8, global: 8}", "batch: {micro: 2, global: 2}"))
    res = run_gate("train", str(p), "--runner", "local", "--no-db")
    assert res.returncode == 0, res.stderr
    run = tmp_path / "run"
    header = (run / "checkpoint-final" / "model.safetensors").read_bytes()
    meta = json.loads(header[8:8 + int.from_bytes(header[:8], "little")])
    assert {v["dtype"] for k, v in meta.items() if k != "__metadata__"} == {stored}
    assert json.loads((run / "plan" / "local_train.json").read_text())["dtype"] == dtype
    assert f"dtype {dtype} trainable_params" in (run / "train.log").read_text()


def test_float16_is_refused_at_plan_time_in_one_line(tmp_path):
    """float16 without loss scaling underflows and CPU float16 kernels are slow or missing: one line before any
    plan is written, not a crash or a run that learns nothing."""
    p = _spec(tmp_path, tiny_model(), steps=2, extra="dtype: float16\n")
    res = run_gate("train", str(p), "--runner", "local", "--dry-run")
    assert res.returncode == 1, res.stdout
    assert res.stderr.strip().count("\n") == 0 and "Traceback" not in res.stderr
    assert f"{p}: dtype: float16 is not supported by the local runner" in res.stderr
    assert not (tmp_path / "run").exists()
