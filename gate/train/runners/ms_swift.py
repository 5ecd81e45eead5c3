"""ms-swift 4.x: `swift sft` (HF Trainer backend) or `megatron sft` (Megatron-SWIFT, realistic at 744B) arguments.

Names are the 4.x ones (`--tuner_type`, which replaced 3.x `--train_type`; an unknown argument makes ms-swift raise).
On the HF backend the fused routed experts of GLM MoE models are bare 3-D parameters that `all-linear` misses, so the
spec's `target_parameters` become `--target_parameters` (PEFT >= 0.17, which needs `--lora_dropout 0`). Multi-node
runs use ms-swift's own environment variables (NPROC_PER_NODE, NNODES, NODE_RANK, MASTER_ADDR, MASTER_PORT).
"""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

from gate.errors import GateError
from gate.train.runners.base import LaunchPlan, Runner
from gate.train.spec import TrainSpec

MIN_VERSION = "4.0"


def _b(v: bool) -> str:
    return "true" if v else "false"


def swift_args(spec: TrainSpec) -> list[str]:
    """`swift sft` arguments in order; pure, so tests compare them to golden files and to ms-swift's parser."""
    o = spec.options("ms-swift")
    par = spec.parallelism
    dp = max(1, par.world_size // (par.tp * par.pp * par.cp))
    accum = max(1, spec.global_batch // (spec.micro_batch * dp))
    a = ["--model", spec.model]
    if spec.revision:
        a += ["--model_revision", spec.revision]
    if o.get("model_type"):
        a += ["--model_type", o["model_type"]]
    a += ["--use_hf", _b(o.get("use_hf", True))]
    if o.get("template"):
        a += ["--template", o["template"]]
    if o.get("agent_template"):
        a += ["--agent_template", o["agent_template"]]
    a += ["--dataset", *spec.train_files]
    if spec.val_files:
        a += ["--val_dataset", *spec.val_files]
    a += ["--tuner_type", spec.method]
    if spec.method == "lora":
        a += ["--lora_rank", str(spec.lora_rank), "--lora_alpha", _num(spec.lora_alpha)]
        a += ["--target_modules", *(spec.targets or ("all-linear",))]
        if spec.target_parameters:
            a += ["--target_parameters", *spec.target_parameters, "--lora_dropout", "0"]
        else:
            a += ["--lora_dropout", _num(spec.lora_dropout)]
    a += ["--loss_scale", o.get("loss_scale", "default"), "--max_length", str(spec.sequence_length),
          "--packing", _b(o.get("packing", False)), "--per_device_train_batch_size", str(spec.micro_batch),
          "--gradient_accumulation_steps", str(accum), "--max_steps", str(spec.steps),
          "--learning_rate", _num(spec.lr), *_hf_schedule(spec), "--warmup_steps", str(spec.warmup_steps),
          "--weight_decay", _num(spec.weight_decay),
          "--max_grad_norm", _num(spec.max_grad_norm), "--seed", str(spec.seed),
          "--gradient_checkpointing", _b(par.activation_checkpointing), "--torch_dtype", spec.dtype,
          *_hf_sharding(spec),
          "--output_dir", str(Path(spec.output_dir) / "swift"), "--save_strategy", "steps",
          "--save_steps", str(spec.ckpt_every or spec.steps), "--save_total_limit", str(spec.ckpt_keep),
          "--save_only_model", "false"]
    if spec.val_files:  # without an eval set there is no best checkpoint and ms-swift's symlink step crashes
        a += ["--create_checkpoint_symlink", "true"]
    a += ["--logging_steps", str(spec.log_every)]
    return a


def _hf_schedule(spec: TrainSpec) -> list[str]:
    """The HF Trainer's plain `cosine` decays to 0 and takes no floor; `cosine_with_min_lr` reads the spec's min_lr
    from `--lr_scheduler_kwargs` (transformers `get_cosine_with_min_lr_schedule_with_warmup`)."""
    if spec.schedule != "cosine":
        return ["--lr_scheduler_type", "constant"]
    if spec.min_lr > 0:
        return ["--lr_scheduler_type", "cosine_with_min_lr",
                "--lr_scheduler_kwargs", json.dumps({"min_lr": spec.min_lr})]
    return ["--lr_scheduler_type", "cosine"]


def _hf_sharding(spec: TrainSpec) -> list[str]:
    """Without DeepSpeed or FSDP every rank of the HF backend loads the whole model: a 744B run would not fit.
    A `deepspeed` runner option (ms-swift's presets zero2/zero3/... or a JSON path) wins; otherwise a multi-GPU
    `fsdp2` spec gets ms-swift's `fsdp2` preset. One GPU, or `ddp`, needs neither."""
    o = spec.options("ms-swift")
    if o.get("deepspeed"):
        return ["--deepspeed", str(o["deepspeed"])]
    if spec.parallelism.world_size > 1 and spec.parallelism.strategy == "fsdp2":
        return ["--fsdp", "fsdp2"]
    return []


def megatron_args(spec: TrainSpec) -> list[str]:
    """`megatron sft` arguments: parallel sizes map one to one; `all-linear` covers the grouped experts here."""
    o = spec.options("ms-swift")
    par = spec.parallelism
    a = ["--model", spec.model, "--use_hf", _b(o.get("use_hf", True))]
    if o.get("template"):
        a += ["--template", o["template"]]
    a += ["--dataset", *spec.train_files]
    if spec.val_files:
        a += ["--val_dataset", *spec.val_files]
    a += ["--tuner_type", spec.method]
    if spec.method == "lora":
        a += ["--lora_rank", str(spec.lora_rank), "--lora_alpha", _num(spec.lora_alpha),
              "--target_modules", *megatron_targets(spec.targets),
              "--merge_lora", _b(spec.merge_lora)]
    a += ["--tensor_model_parallel_size", str(par.tp), "--pipeline_model_parallel_size", str(par.pp),
          "--expert_model_parallel_size", str(par.ep), "--context_parallel_size", str(par.cp),
          "--sequence_parallel", _b(par.tp > 1), "--moe_grouped_gemm", "true",
          "--micro_batch_size", str(spec.micro_batch), "--global_batch_size", str(spec.global_batch),
          "--train_iters", str(spec.steps), "--finetune", "true", "--max_length", str(spec.sequence_length),
          "--packing", _b(o.get("packing", False)), "--lr", _num(spec.lr), "--min_lr", _num(spec.min_lr),
          "--lr_warmup_iters", str(spec.warmup_steps), "--lr_decay_style",
          "cosine" if spec.schedule == "cosine" else "constant", "--weight_decay", _num(spec.weight_decay),
          "--clip_grad", _num(spec.max_grad_norm), "--seed", str(spec.seed),
          *_recompute(spec),
          "--output_dir", str(Path(spec.output_dir) / "megatron"),
          "--save_steps", str(spec.ckpt_every or spec.steps), "--save_safetensors", "true",
          "--logging_steps", str(spec.log_every)]
    return a


def _recompute(spec: TrainSpec) -> list[str]:
    """megatron-core refuses `recompute_granularity='full'` without a method; `uniform` over 1 layer recomputes every
    transformer layer (the most memory saved), which is what activation checkpointing means in the spec."""
    if spec.parallelism.activation_checkpointing:
        return ["--recompute_granularity", "full", "--recompute_method", "uniform", "--recompute_num_layers", "1"]
    return ["--recompute_granularity", "selective"]


def megatron_targets(targets: tuple[str, ...]) -> list[str]:
    """Megatron modules are `linear_qkv`, `linear_proj`, `linear_fc1`, `linear_fc2`; HF names (q_a_proj...) mean
    nothing there, and `all-linear` already covers the grouped experts, so HF names fall back to it."""
    kept = [t for t in targets if t.startswith("linear_") or t in ("all-linear", "all-router", "all-embedding")]
    return kept or ["all-linear"]


def _num(v: float) -> str:
    return repr(float(v)) if not float(v).is_integer() else str(int(v))


def dist_env(spec: TrainSpec) -> dict[str, str]:
    """ms-swift reads its launch topology from the environment; NODE_RANK and MASTER_ADDR differ per node, so the
    plan leaves them as shell references to fill on each node."""
    par = spec.parallelism
    o = spec.options("ms-swift")
    env = {"NPROC_PER_NODE": str(par.gpus_per_node)}
    if par.nodes > 1:
        env.update({"NNODES": str(par.nodes), "NODE_RANK": "${NODE_RANK}",
                    "MASTER_ADDR": o.get("master_addr", "${MASTER_ADDR}"),
                    "MASTER_PORT": str(o.get("master_port", 29500))})
    return env


class MsSwiftRunner(Runner):
    name = "ms-swift"

    def plan(self, spec: TrainSpec, plan_dir: Path) -> LaunchPlan:
        backend = spec.options("ms-swift").get("backend", "swift")
        args = megatron_args(spec) if backend == "megatron" else swift_args(spec)
        program = ("megatron", "sft") if backend == "megatron" else ("swift", "sft")
        env = dist_env(spec)
        exports = "".join(f'export {k}="{v}"\n' for k, v in env.items())
        if backend == "megatron":
            merge = ("# Megatron-SWIFT writes HF safetensors (--save_safetensors true); LoRA merged unless "
                     "--merge_lora false.\n# To convert an mcore checkpoint: megatron export --mcore_model DIR "
                     "--to_hf true --merge_lora true\n")
        else:
            merge = ('CKPT="${1:?usage: export.sh OUTPUT_DIR/vN-.../checkpoint-STEP}"\n'
                     'swift export --adapters "$CKPT" --merge_lora true\n')
        files = {
            f"{program[0]}_sft.args.json": json.dumps({"program": list(program), "args": args, "env": env},
                                                      indent=2) + "\n",
            "multinode.sh": ("#!/bin/bash\n# run on every node with NODE_RANK (0..NNODES-1) and MASTER_ADDR set\n"
                             "set -euo pipefail\n" + exports + shlex.join([*program, *args]) + "\n"),
        }
        if spec.method == "lora":
            files["export.sh"] = "#!/bin/bash\nset -euo pipefail\n" + merge
        notes = [f"ms-swift >= {MIN_VERSION} (uses --tuner_type)"]
        if spec.method == "lora" and backend == "swift":
            notes.append("merge for serving: plan/export.sh <checkpoint> (swift export --merge_lora true)")
        local_env = {"NPROC_PER_NODE": env["NPROC_PER_NODE"]}  # the rest differs per node: multinode.sh
        return LaunchPlan(runner=self.name, command=(*program, *args), files=files, env=local_env,
                          notes=tuple(notes))

    def preflight(self, plan: LaunchPlan) -> None:
        if shutil.which(plan.command[0]) is None:
            raise GateError(f"`{plan.command[0]}` is not on PATH: install ms-swift>={MIN_VERSION} on the training "
                            "machine, or use --dry-run to write the plan only", field="--runner")

    def find_checkpoint(self, spec: TrainSpec) -> Path | None:
        backend = spec.options("ms-swift").get("backend", "swift")
        root = Path(spec.output_dir) / ("megatron" if backend == "megatron" else "swift")
        runs = sorted(root.glob("v*-*"), key=lambda p: p.stat().st_mtime)
        if not runs:
            return None
        log = runs[-1] / "logging.jsonl"
        if log.is_file():
            for line in reversed(log.read_text(encoding="utf-8").splitlines()):
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if rec.get("last_model_checkpoint"):
                    return Path(rec["last_model_checkpoint"])
        ckpts = sorted(runs[-1].glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1])
                       if p.name.split("-")[1].isdigit() else -1)
        return ckpts[-1] if ckpts else None
