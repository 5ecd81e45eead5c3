"""Loading a training spec: YAML with line numbers, validated against `gate.train.spec_schema`, frozen afterwards.

The YAML reader is the contract's (`gate.yamlio`: duplicate keys refused, errors pointed at their line), so a spec
and a contract fail the same way. Paths are resolved relative to the spec file, so a spec can be run from any
directory.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gate import yamlio
from gate.errors import GateError
from gate.train.spec_schema import SPEC_SCHEMA


class SpecError(GateError):
    """The training spec is not valid (unknown key, wrong type, missing data file...)."""


@dataclass(frozen=True)
class Parallelism:
    tp: int = 1
    pp: int = 1
    ep: int = 1
    cp: int = 1
    nodes: int = 1
    gpus_per_node: int = 1
    strategy: str = "fsdp2"
    activation_checkpointing: bool = True

    @property
    def world_size(self) -> int:
        return self.nodes * self.gpus_per_node


@dataclass(frozen=True)
class TrainSpec:
    """A parsed spec. `sha256` identifies its meaning (comments and key order do not count)."""

    path: str
    name: str
    sha256: str
    model: str
    revision: str | None
    model_type: str | None
    method: str
    lora_rank: int
    lora_alpha: float
    lora_dropout: float
    targets: tuple[str, ...]
    target_parameters: tuple[str, ...]
    exclude: tuple[str, ...]
    train_files: tuple[str, ...]
    val_files: tuple[str, ...]
    data_manifest: str | None
    sequence_length: int
    micro_batch: int
    global_batch: int
    steps: int
    seed: int
    lr: float
    min_lr: float
    warmup_steps: int
    schedule: str
    weight_decay: float
    max_grad_norm: float
    parallelism: Parallelism
    ckpt_every: int
    ckpt_keep: int
    ckpt_format: str
    merge_lora: bool
    log_every: int
    output_dir: str
    checks: tuple[str, ...]
    runner_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    dtype: str = "bfloat16"

    def options(self, runner: str) -> dict[str, Any]:
        return dict(self.runner_options.get(runner, {}))

    def to_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        return asdict(self)


def _split_files(p: Path, want: str) -> list[Path]:
    """A `gate split` / `gate export` directory holds `<split>.jsonl` (or `<split>/*.jsonl`); a file is itself."""
    if p.is_file():
        return [p]
    for cand in (p / f"{want}.jsonl", p / "data" / f"{want}.jsonl"):
        if cand.is_file():
            return [cand]
    sub = p / want
    if sub.is_dir():
        files = sorted(sub.glob("*.jsonl"))
        if files:
            return files
    return []


def load_spec(path: str | Path) -> TrainSpec:
    """Reads, validates and freezes a training spec; every mistake is one SpecError naming file, line and key."""
    return yamlio.guarded(lambda: _load_spec(Path(path)), path, SpecError)


def _load_spec(p: Path) -> TrainSpec:
    doc = yamlio.read(p, what="training spec", error=SpecError, not_found="training spec not found")
    doc.validate(SPEC_SCHEMA)
    data, fail = doc.data, doc.fail
    base = p.parent

    def resolve(s: str) -> str:
        q = Path(s).expanduser()
        return str(q if q.is_absolute() else (base / q).resolve())

    method = data["method"]
    if method["type"] == "lora" and not (method.get("targets") or method.get("target_parameters")):
        raise fail("a LoRA method needs targets (module names) or target_parameters (fused experts)", ["method"])
    if method["type"] == "full":
        for k in ("rank", "alpha", "targets", "target_parameters"):
            if k in method:
                raise fail(f"'{k}' only applies to method type lora", ["method", k])

    model = data["base_model"]["path"]
    local_model = Path(resolve(model))
    model_ref = str(local_model) if (model.startswith((".", "/", "~")) or local_model.exists()) else model

    d = data["data"]
    train_files = _split_files(Path(resolve(d["train"])), "train")
    if not train_files:
        raise fail(f"no training data at {d['train']} (a JSONL file or a directory with train.jsonl)",
                   ["data", "train"])
    val_files: list[Path] = []
    if d.get("val"):
        val_files = _split_files(Path(resolve(d["val"])), "val")
        if not val_files:
            raise fail(f"no validation data at {d['val']}", ["data", "val"])
    manifest = d.get("manifest")
    if manifest is None:
        cand = Path(resolve(d["train"]))
        cand = (cand if cand.is_dir() else cand.parent) / "MANIFEST.json"
        manifest = str(cand) if cand.is_file() else None
    else:
        manifest = resolve(manifest)

    batch = data.get("batch") or {}
    micro = batch.get("micro", 1)
    par = Parallelism(**(data.get("parallelism") or {}))
    gbs = batch.get("global", micro)
    if gbs % micro:
        raise fail(f"global batch {gbs} is not a multiple of the micro batch {micro}", ["batch", "global"])
    model_par = par.tp * par.pp * par.cp
    if par.world_size % model_par:
        raise fail(f"{par.world_size} GPUs cannot hold tp*pp*cp = {model_par}", ["parallelism"])
    if par.ep > 1 and par.world_size % par.ep:
        raise fail(f"ep {par.ep} does not divide the {par.world_size} GPUs", ["parallelism", "ep"])
    opt = data.get("optimizer") or {}
    ck = data.get("checkpoint") or {}
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)
    return TrainSpec(
        path=str(p), name=data["name"], sha256=hashlib.sha256(canonical.encode()).hexdigest(),
        model=model_ref, revision=data["base_model"].get("revision"),
        model_type=data["base_model"].get("model_type"), method=method["type"],
        lora_rank=method.get("rank", 8), lora_alpha=float(method.get("alpha", 2 * method.get("rank", 8))),
        lora_dropout=float(method.get("dropout", 0.0)), targets=tuple(method.get("targets", ())),
        target_parameters=tuple(method.get("target_parameters", ())), exclude=tuple(method.get("exclude", ())),
        train_files=tuple(str(f) for f in train_files), val_files=tuple(str(f) for f in val_files),
        data_manifest=manifest, sequence_length=data.get("sequence_length", 2048), micro_batch=micro,
        global_batch=gbs, steps=data.get("steps", 100), seed=data.get("seed", 1234), lr=float(opt.get("lr", 1e-4)),
        min_lr=float(opt.get("min_lr", 0.0)), warmup_steps=opt.get("warmup_steps", 0),
        schedule=opt.get("schedule", "cosine"), weight_decay=float(opt.get("weight_decay", 0.0)),
        max_grad_norm=float(opt.get("max_grad_norm", 1.0)), parallelism=par, ckpt_every=ck.get("every_steps", 0),
        ckpt_keep=ck.get("keep", 2), ckpt_format=ck.get("format", "safetensors"),
        merge_lora=ck.get("merge_lora", False), log_every=(data.get("logging") or {}).get("every_steps", 1),
        output_dir=resolve(data["output_dir"]), checks=tuple(data.get("checks", ())),
        runner_options={k: dict(v) for k, v in (data.get("runners") or {}).items()},
        dtype=data.get("dtype", "bfloat16"),
    )
