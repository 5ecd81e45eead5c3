"""Metric lines from every trainer's log, parsed one line at a time."""

import json
import math

from gate.train.metrics import parse_line


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
