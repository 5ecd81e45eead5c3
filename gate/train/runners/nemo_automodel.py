"""NeMo AutoModel: a recipe YAML for `automodel <config.yaml>` plus a Slurm script for multi-node torchrun.

The keys follow the shipped GLM recipes (`examples/llm_finetune/glm/glm_5.2_lora.yaml`, Automodel 36044ad3 / PyPI
0.7.0) with two deliberate differences: checkpointing is enabled (every shipped GLM MoE recipe disables it, so a run
would leave nothing to collect) and the seed is the top-level `seed:` the recipe reads (an `rng:` block is ignored).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml

from gate.errors import GateError
from gate.train.runners.base import LaunchPlan, Runner
from gate.train.spec import SpecError, TrainSpec

RECIPE = "TrainFinetuneRecipeForNextTokenPrediction"
CHAT_DATASET = "nemo_automodel.components.datasets.llm.chat_dataset.ChatDataset"
DATALOADER = "torchdata.stateful_dataloader.StatefulDataLoader"
PACKED_COLLATE = "nemo_automodel.components.datasets.utils.packed_sequence_thd_collater"
LOSSES = {"masked_ce": "nemo_automodel.components.loss.masked_ce.MaskedCrossEntropy",
          "chunked_ce": "nemo_automodel.components.loss.chunked_ce.ChunkedCrossEntropy"}
MASTER_PORT = 13742  # AutoModel's slurm.sub default


def _dataset(spec: TrainSpec, files: tuple[str, ...], split: str, tokenizer: dict[str, Any],
             opts: dict[str, Any]) -> dict[str, Any]:
    ds: dict[str, Any] = {"_target_": CHAT_DATASET,
                          "path_or_dataset_id": files[0] if len(files) == 1 else list(files),
                          "split": split, "shuffle_seed": spec.seed, "truncation": True,
                          "seq_length": spec.sequence_length, "padding": False, "tokenizer": tokenizer}
    template = opts.get("chat_template") or _export_template(files)
    if template:
        ds["chat_template"] = template
    return ds


def _export_manifests(files: tuple[str, ...]) -> list[tuple[Path, dict[str, Any]]]:
    """(manifest path, manifest) of each `gate export --format nemo-automodel` these rows come from, once each."""
    import json

    out: dict[Path, dict[str, Any]] = {}
    for f in files:
        manifest = Path(f).parent / "MANIFEST.json"
        if manifest in out:
            continue
        try:
            m = json.loads(manifest.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(m, dict) and m.get("format") == "nemo-automodel":
            out[manifest] = m
    return list(out.items())


def unapplied_template_kwargs(spec: TrainSpec) -> list[str]:
    """Plan warnings for template variables the export recorded (the contract's `chat_template_kwargs`, e.g.
    `enable_thinking: false`): AutoModel 0.7's ChatDataset has no such option and calls apply_chat_template without
    them (its source, components/datasets/llm/chat_dataset.py), so training renders the template's defaults while
    the contract, the template check and the scorecard used the variables. Said in the plan, not found later."""
    import json

    out = []
    for manifest, m in _export_manifests(tuple(spec.train_files) + tuple(spec.val_files)):
        kwargs = m.get("chat_template_kwargs")
        if isinstance(kwargs, dict) and kwargs:
            out.append(f"warning: the export's chat_template_kwargs {json.dumps(kwargs, sort_keys=True)} "
                       f"({manifest}) are not applied: NeMo AutoModel 0.7's ChatDataset takes no template "
                       "variables, so rows render with the template's defaults; bake them into the template "
                       "(runner option chat_template) or train with ms-swift, which reads them per row")
    return out


def _export_template(files: tuple[str, ...]) -> str | None:
    """The chat template a `gate export --format nemo-automodel` wrote next to these rows (MANIFEST.json names it):
    its rows carry tool-call arguments only this template renders under AutoModel, so the recipe must use it."""
    found: dict[str, str] = {}
    for manifest, m in _export_manifests(files):
        ct = m.get("chat_template")
        if isinstance(ct, dict) and isinstance(ct.get("file"), str):
            found[str(ct.get("sha256"))] = str((manifest.parent / ct["file"]).resolve())
    if len(found) > 1:
        raise GateError("the training files come from exports with different chat templates "
                        f"({', '.join(sorted(found.values()))}): export them together", field="train_files")
    return next(iter(found.values()), None)


def recipe(spec: TrainSpec) -> dict[str, Any]:
    """The recipe as a mapping (written as YAML); pure, so tests compare it to golden files."""
    opts = spec.options("nemo-automodel")
    par = spec.parallelism
    local_batch = spec.micro_batch
    distributed: dict[str, Any] = {"strategy": par.strategy, "tp_size": par.tp, "cp_size": par.cp,
                                   "pp_size": par.pp, "ep_size": par.ep, "sequence_parallel": False,
                                   "activation_checkpointing": par.activation_checkpointing}
    if par.pp > 1:
        distributed["pipeline"] = {"pp_schedule": "interleaved1f1b", "patch_inner_model": False,
                                   "patch_causal_lm_model": False}
    if par.ep > 1:  # the moe block is only read with expert parallelism
        distributed["moe"] = {"reshard_after_forward": True, "wrap_outer_model": False, "ignore_router_for_ac": True}
    backend = {"_target_": "nemo_automodel.components.models.common.BackendConfig", "attn": "sdpa",
               "linear": "torch", "rms_norm": "torch_fp32", "experts": "torch_mm", "dispatcher": "torch",
               "gate_precision": "float32", **opts.get("backend", {})}
    # The spec's dtype as `torch_dtype: bfloat16`: AutoModel's loader keeps it a string and from_pretrained resolves
    # it with shared.utils.dtype_from_str. Left out, AutoModel's "auto" builds the checkpoint's dtype (its own model
    # classes: bfloat16), so one spec trained in another precision here than under ms-swift or the local runner.
    # `torch_dtype`, not the newer `dtype` alias, is the key AutoModel's recipes and messages tell users to set, and
    # `dtype` would silently win over a user's `--model.torch_dtype` override
    model: dict[str, Any] = {"_target_": "nemo_automodel.NeMoAutoModelForCausalLM.from_pretrained",
                             "pretrained_model_name_or_path": spec.model, "torch_dtype": spec.dtype,
                             "backend": backend}
    if spec.revision:
        model["revision"] = spec.revision
    tokenizer = {"_target_": "transformers.AutoTokenizer.from_pretrained",
                 "pretrained_model_name_or_path": spec.model}
    packed = int(opts.get("packed_sequence_size", 0))
    loader: dict[str, Any] = {"_target_": DATALOADER, "shuffle": True, "drop_last": False, "num_workers": 0,
                              "pin_memory": False}
    if packed:
        loader["collate_fn"] = PACKED_COLLATE
    out: dict[str, Any] = {
        "recipe": RECIPE,
        "seed": spec.seed,
        "step_scheduler": {"global_batch_size": spec.global_batch, "local_batch_size": local_batch,
                           "max_steps": spec.steps, "ckpt_every_steps": spec.ckpt_every or spec.steps,
                           "val_every_steps": spec.ckpt_every or spec.steps, "num_epochs": 1000},
        "distributed": distributed,
        "model": model,
    }
    if spec.method == "lora":
        peft: dict[str, Any] = {"_target_": "nemo_automodel.components._peft.lora.PeftConfig",
                                "target_modules": list(spec.targets) + [f"*.{p.rsplit('.', 1)[0]}"
                                                                        for p in spec.target_parameters
                                                                        if p.endswith(("gate_up_proj", "down_proj"))
                                                                        and ".experts." in f".{p}"],
                                "dim": spec.lora_rank, "alpha": spec.lora_alpha, "dropout": spec.lora_dropout}
        peft["target_modules"] = list(dict.fromkeys(peft["target_modules"]))
        if spec.exclude:
            peft["exclude_modules"] = list(spec.exclude)
        out["peft"] = peft
    out["checkpoint"] = {"enabled": True, "checkpoint_dir": str(Path(spec.output_dir) / "checkpoints"),
                         "model_save_format": spec.ckpt_format, "save_consolidated": "final",
                         "max_recent_checkpoints": spec.ckpt_keep, "dequantize_base_checkpoint": True,
                         "v4_compatible": True}
    out["clip_grad_norm"] = {"max_norm": spec.max_grad_norm}
    out["loss_fn"] = {"_target_": LOSSES[opts.get("loss", "masked_ce")]}
    out["dataset"] = _dataset(spec, spec.train_files, "train", tokenizer, opts)
    if spec.val_files:
        out["validation_dataset"] = _dataset(spec, spec.val_files, "train", tokenizer, opts)
    out["packed_sequence"] = {"packed_sequence_size": packed}
    out["dataloader"] = loader
    if spec.val_files:
        out["validation_dataloader"] = {**loader, "shuffle": False}
    out["optimizer"] = {"_target_": "torch.optim.AdamW", "betas": [0.9, 0.95], "eps": 1.0e-8, "lr": spec.lr,
                        "weight_decay": spec.weight_decay}
    out["lr_scheduler"] = {"lr_warmup_steps": spec.warmup_steps,
                           "lr_decay_style": "cosine" if spec.schedule == "cosine" else "constant",
                           "min_lr": spec.min_lr}
    return out


def slurm_script(spec: TrainSpec, config_path: Path) -> str:
    """The multi-node launch (AutoModel's `slurm.sub` pattern): srun starts one torchrun per node, which runs the
    recipe in-process; USR1 five minutes before the time limit gives the trainer a chance to checkpoint."""
    par = spec.parallelism
    s = spec.options("nemo-automodel").get("slurm", {})
    lines = ["#!/bin/bash", f"#SBATCH --job-name=gate-{spec.name}", f"#SBATCH --nodes={par.nodes}",
             "#SBATCH --ntasks-per-node=1", f"#SBATCH --gpus-per-node={par.gpus_per_node}", "#SBATCH --exclusive",
             "#SBATCH --signal=B:USR1@300"]
    for key in ("account", "partition", "time"):
        if s.get(key):
            lines.append(f"#SBATCH --{key}={s[key]}")
    lines += [
        "set -euo pipefail",
        'export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)',
        f"export MASTER_PORT={MASTER_PORT}",
        "trap 'echo USR1: checkpoint before preemption; kill -USR1 $SRUN_PID; wait $SRUN_PID' USR1",
        f"CONFIG={config_path}",
        ("srun " + (f"--container-image={s['container']} " if s.get("container") else "")
         + "torchrun --nproc_per_node=$SLURM_GPUS_PER_NODE --nnodes=$SLURM_NNODES --node_rank=$SLURM_NODEID "
           "--rdzv_backend=c10d --rdzv_endpoint=$MASTER_ADDR:$MASTER_PORT -m nemo_automodel.cli.app $CONFIG &"),
        "SRUN_PID=$!",
        "wait $SRUN_PID",
    ]
    return "\n".join(lines) + "\n"


def torchrun_command(spec: TrainSpec, config_path: Path) -> str:
    """One node's share of a multi-node run: under an external torchrun, `nemo_automodel.cli.app` runs the recipe
    in-process (the `automodel` CLI itself only knows `--nproc-per-node`, i.e. one node)."""
    par = spec.parallelism
    return (f"torchrun --nproc-per-node={par.gpus_per_node} --nnodes={par.nodes} --node-rank=$NODE_RANK "
            f"--rdzv-backend=c10d --rdzv-endpoint=$MASTER_ADDR:{MASTER_PORT} -m nemo_automodel.cli.app {config_path}")


TORCHRUN_GUARD = ('NODE_RANK="${NODE_RANK:?set NODE_RANK (0..NNODES-1) on every node}"\n'
                  'MASTER_ADDR="${MASTER_ADDR:?set MASTER_ADDR to node 0}"\n')


class NemoAutomodelRunner(Runner):
    name = "nemo-automodel"

    def plan(self, spec: TrainSpec, plan_dir: Path) -> LaunchPlan:
        if spec.dtype == "float16":
            # refused here, as by the local runner: AutoModel 0.7 has no loss scaling (no GradScaler in its source),
            # so float16 gradients underflow; and under FSDP2 its default mixed precision computes in bfloat16 anyway
            raise SpecError("float16 is not supported by the nemo-automodel runner (AutoModel 0.7 has no loss "
                            "scaling); use bfloat16 or float32", file=spec.path, field="dtype")
        cfg_path = plan_dir / "automodel.yaml"
        text = ("# generated by gate train from " + spec.path + "\n"
                + yaml.safe_dump(recipe(spec), sort_keys=False, default_flow_style=False, width=119))
        par = spec.parallelism
        files = {"automodel.yaml": text, "slurm.sub": slurm_script(spec, cfg_path),
                 "torchrun.sh": "#!/bin/bash\n# on every node: NODE_RANK and MASTER_ADDR set\nset -euo pipefail\n"
                                + TORCHRUN_GUARD + torchrun_command(spec, cfg_path) + "\n"}
        notes = [f"world size {par.world_size} = {par.nodes} node(s) x {par.gpus_per_node} GPU(s)",
                 *unapplied_template_kwargs(spec)]
        if spec.dtype == "float32" and par.strategy == "fsdp2" and par.world_size > 1:
            # not a refusal: fp32 master weights under bf16 compute is AutoModel's own recommended pattern, but it
            # is not the all-float32 run ms-swift and the local runner do with the same spec (one GPU skips
            # fully_shard, and with it the mixed-precision policy)
            notes.append("dtype float32: AutoModel keeps float32 weights and optimizer state, but FSDP2's default "
                         "mixed precision (distributed.mp_policy, param_dtype bfloat16) computes in bfloat16")
        if par.nodes > 1:
            # the `automodel` CLI spawns one node's worth of ranks: a 16-node recipe (ep 128) would never form
            notes.append("multi-node: run plan/torchrun.sh on every node (NODE_RANK, MASTER_ADDR), or sbatch "
                         "plan/slurm.sub")
            command: tuple[str, ...] = ("bash", str(plan_dir / "torchrun.sh"))
        else:
            command = ("automodel", str(cfg_path), f"--nproc-per-node={par.gpus_per_node}")
        return LaunchPlan(runner=self.name, command=command, files=files, notes=tuple(notes))

    def preflight(self, plan: LaunchPlan) -> None:
        exe = "torchrun" if plan.command[0] == "bash" else plan.command[0]
        if shutil.which(exe) is None:
            raise GateError(f"`{exe}` is not on PATH: install nemo-automodel on the training machine, or use "
                            "--dry-run to write the plan only", field="--runner")

    def find_checkpoint(self, spec: TrainSpec) -> Path | None:
        root = Path(spec.output_dir) / "checkpoints"
        latest = root / "LATEST"
        if latest.exists():
            step = latest.resolve()
            for cand in (step / "model" / "consolidated", step / "model"):
                if cand.is_dir():
                    return cand
        steps = sorted(root.glob("epoch_*_step_*"), key=lambda p: int(p.name.rsplit("_", 1)[1]))
        return (steps[-1] / "model") if steps and (steps[-1] / "model").is_dir() else None
