"""The embedded default: transformers + PEFT in a child process (`gate.train.local_worker`), on CPU or one GPU.

It is launched like the cluster runners, as a real process with a real log, so the same machinery is tested end to
end without a GPU.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from gate.train.runners.base import LaunchPlan, Runner
from gate.train.spec import SpecError, TrainSpec


class LocalRunner(Runner):
    name = "local"

    def plan(self, spec: TrainSpec, plan_dir: Path) -> LaunchPlan:
        opts = spec.options("local")
        if spec.dtype == "float16":
            # refused here, not mid-run: the worker has no loss scaling (fp16 gradients underflow without it) and
            # CPU float16 kernels are slow or missing, so a float16 run would crash or quietly learn nothing
            raise SpecError("float16 is not supported by the local runner (no loss scaling); use bfloat16 or float32",
                            file=spec.path, field="dtype")
        cfg = {
            "model": spec.model, "revision": spec.revision, "dtype": spec.dtype, "seed": spec.seed,
            "output_dir": spec.output_dir,
            "method": {"type": spec.method, "rank": spec.lora_rank, "alpha": spec.lora_alpha,
                       "dropout": spec.lora_dropout, "targets": list(spec.targets),
                       "target_parameters": list(spec.target_parameters)},
            "train_files": list(spec.train_files), "val_files": list(spec.val_files),
            "sequence_length": spec.sequence_length, "micro_batch_size": spec.micro_batch,
            "global_batch_size": spec.global_batch, "max_steps": spec.steps, "warmup_steps": spec.warmup_steps,
            "lr": spec.lr, "min_lr": spec.min_lr, "schedule": spec.schedule, "weight_decay": spec.weight_decay,
            "max_grad_norm": spec.max_grad_norm, "ckpt_every_steps": spec.ckpt_every, "ckpt_keep": spec.ckpt_keep,
            "log_every_steps": spec.log_every, "device": opts.get("device", "cpu"), "threads": opts.get("threads"),
        }
        python = opts.get("python") or sys.executable
        cfg_path = plan_dir / "local_train.json"
        return LaunchPlan(runner=self.name, command=(python, "-m", "gate.train.local_worker", str(cfg_path)),
                          files={"local_train.json": json.dumps(cfg, indent=2) + "\n"},
                          env={"TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1"},
                          cwd=str(Path(__file__).resolve().parents[3]))

    def find_checkpoint(self, spec: TrainSpec) -> Path | None:
        final = Path(spec.output_dir) / "checkpoint-final"
        return final if final.is_dir() else None
