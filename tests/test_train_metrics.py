"""Metric lines from every trainer's log, parsed one line at a time."""

import json
import math
import subprocess

import pytest

from gate.train.metrics import parse_line
from tests.conftest import ROOT


def test_automodel_and_local_stdout_lines():
    m = parse_line("INFO:root:step 4 | epoch 0 | loss 1.5514 | grad_norm 0.3322 | lr 1.00e-04 | mem 12.40 GiB | "
                   "tps 8123.4 | tps_per_gpu 1015.4 | mfu 31.2")
    assert (m.step, m.kind, m.loss, m.grad_norm, m.lr, m.tokens_per_s, m.epoch) == (
        4, "train", 1.5514, 0.3322, 1e-4, 8123.4, 0.0)
    assert m.extra["tps_per_gpu"] == 1015.4 and m.extra["mfu"] == 31.2
    v = parse_line("[val] step 20 | epoch 0 | loss 1.2031")
    assert (v.kind, v.step, v.loss) == ("val", 20, 1.2031)


def test_ms_swift_dict_and_jsonl_records():
    line = ("{'loss': 2.0512, 'grad_norm': 1.25, 'learning_rate': 9.8e-05, 'epoch': 0.04, "
            "'global_step/max_steps': '5/200', 'train_speed(s/it)': 1.9, 'memory(GiB)': 61.2}")
    m = parse_line(line)
    assert (m.step, m.loss, m.grad_norm, m.lr, m.epoch) == (5, 2.0512, 1.25, 9.8e-5, 0.04)
    ev = parse_line(json.dumps({"eval_loss": 1.7, "epoch": 0.2, "global_step/max_steps": "50/200"}))
    assert (ev.kind, ev.step, ev.loss) == ("val", 50, 1.7)
    final = parse_line(json.dumps({"last_model_checkpoint": "/o/v0/checkpoint-200", "best_metric": 1.6}))
    assert final is None


def test_diverged_loss_is_kept_and_noise_is_ignored():
    assert math.isnan(parse_line("step 9 | epoch 0 | loss nan | grad_norm inf").loss)
    for junk in ("", "Loading weights: 100%|####| 21/21", "{not a dict}", "{'x': 1}", "warning: step size small"):
        assert parse_line(junk) is None


NEMO_PY = ROOT / ".venv-nemo" / "bin" / "python"


@pytest.mark.skipif(not NEMO_PY.exists(), reason="nemo-automodel venv (.venv-nemo) not installed: make test builds it")
def test_automodel_0_7_real_log_lines():
    """AutoModel 0.7's own log_train_metrics / log_val_metrics, through its own setup_logging: the `[val] name
    "default" | step ...` line is a validation metric (it used to become a train metric, corrupting final_loss), and
    `tps 1234.56(154.32/gpu)` gives tokens/s (it used to be dropped)."""
    proc = subprocess.run([str(NEMO_PY), str(ROOT / "tests/train/trainer_scripts/automodel_log_lines.py")],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    *lines, logged = proc.stdout.strip().splitlines()
    truth = json.loads(logged)
    got = [m for m in map(parse_line, lines) if m is not None]
    train = [m for m in got if m.kind == "train"]
    val = [m for m in got if m.kind == "val"]
    assert [m.step for m in train] == [t["step"] for t in truth["train"]]
    for m, t in zip(train, truth["train"], strict=True):
        assert m.loss == pytest.approx(t["loss"], abs=1e-4) and m.grad_norm == pytest.approx(t["grad_norm"], abs=1e-4)
        assert m.lr == pytest.approx(t["lr"], rel=1e-2)
        assert m.tokens_per_s == pytest.approx(t["tps"], abs=0.01)
        assert m.extra["tps_per_gpu"] == pytest.approx(t["tps_per_gpu"], abs=0.01)
        assert m.extra["num_label_tokens"] == t["num_label_tokens"]
    assert [(m.step, m.loss) for m in val] == [(t["step"], pytest.approx(t["val_loss"], abs=1e-4))
                                               for t in truth["val"]]
