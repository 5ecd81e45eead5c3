"""Runs inside .venv-nemo: prints what AutoModel 0.7's own `log_train_metrics` / `log_val_metrics` log for given
metrics, through AutoModel's own `setup_logging`, so gate's parser is fed the trainer's real lines.

Only the recipe object is a stand-in (the methods read `dist_env.is_main`, the step scheduler's remote-logging flag
and a JSONL metric logger); the formatting and logging code is AutoModel's. Usage: python automodel_log_lines.py
(prints the log lines on stdout, then one JSON line with the metrics that were logged)."""

import json
import logging
import sys
from types import SimpleNamespace

import torch
from nemo_automodel.components.loggers.log_utils import setup_logging
from nemo_automodel.components.loggers.metric_logger import MetricsSample
from nemo_automodel.recipes.llm.train_ft import TrainFinetuneRecipeForNextTokenPrediction as Recipe

setup_logging()
root = logging.getLogger()
for h in root.handlers:
    h.setStream(sys.stdout) if hasattr(h, "setStream") else None
torch.cuda.reset_peak_memory_stats = lambda *a, **k: None  # the CPU build raises here; it runs after the log line

jsonl: list[dict] = []
recipe = SimpleNamespace(dist_env=SimpleNamespace(is_main=True), comet_logger=None,
                         step_scheduler=SimpleNamespace(is_remote_logging_step=False, step=0),
                         metric_logger_train=SimpleNamespace(log=lambda s: jsonl.append(s.to_dict())))
train = [MetricsSample(step=s, epoch=0, metrics={"loss": 2.0 - 0.25 * s, "grad_norm": 1.5 / s, "lr": 1e-4 * s,
                                                  "mem": 12.5, "tps": 1234.56 * s, "tps_per_gpu": 154.32 * s,
                                                  "num_label_tokens": 100 + s}) for s in (1, 2, 3, 4)]
for s in train:
    Recipe.log_train_metrics(recipe, s)
val = MetricsSample(step=4, epoch=0, metrics={"val_loss": 1.2345, "lr": 4e-4, "num_label_tokens": 345})
Recipe.log_val_metrics(recipe, "default", val)
other = MetricsSample(step=4, epoch=0, metrics={"val_loss": 2.5, "lr": 4e-4, "num_label_tokens": 99})
Recipe.log_val_metrics(recipe, "heldout", other)
for h in root.handlers:
    h.flush()
print(json.dumps({"train": [s.to_dict() for s in train], "val": [val.to_dict(), other.to_dict()]}))
