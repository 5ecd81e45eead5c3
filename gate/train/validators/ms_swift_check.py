"""Checks generated ms-swift arguments with ms-swift's own argument classes, inside the venv that has it installed.

`swift sft` parses its command line with HfArgumentParser over `SftArguments` and raises on any argument left over
(`swift/pipelines/base.py`). This script parses the generated arguments the same way (unknown or renamed names such as
3.x `--train_type`, bad choices), then builds `SftArguments` for real so its `__post_init__` checks run (DeepSpeed/FSDP
presets, scheduler kwargs, the model's own config when the model is on this machine), with the output directory moved
to a scratch directory (ms-swift creates `vN-...` there) and bf16 checked as float32 when this machine has no GPU.
The LoRA targets are applied with peft's own `get_peft_model` to the model built on the meta device, so the plan shows
what ms-swift will really train: peft 0.20 rewrites `gate_proj/up_proj/down_proj` of MoE models into fused-expert
target parameters, which leaves the dense MLP and shared experts without LoRA; each requested module left untouched
is a warning. The export command is parsed against `ExportArguments`, Megatron arguments against
`MegatronSftArguments` when megatron-core is importable, and the training files are loaded with ms-swift's dataset
loader to prove the data format.

Whatever could not be checked is listed under "skipped" (the caller warns, and `--strict` fails on it).

Usage: python ms_swift_check.py PLAN_DIR [PLAN_DIR...]
  -> one stdout line per plan: {"ok": true, "checks": [...], "skipped": [...], "warnings": [...]}
"""

from __future__ import annotations

import json
import shlex
import sys
import traceback
from pathlib import Path
from typing import Any


def _parse(cls: Any, argv: list[str]) -> Any:
    from swift.utils.utils import _patch_get_type_hints
    from transformers import HfArgumentParser

    with _patch_get_type_hints():
        parser = HfArgumentParser([cls])
    ns, unknown = parser.parse_known_args(argv)
    if unknown:
        raise ValueError(f"remaining_argv: {unknown}")
    return ns


GPU_ONLY = ("transformer_engine", "triton")


def _stub_gpu_modules() -> list[str]:
    """Megatron-SWIFT imports transformer-engine and triton kernels at import time; neither installs on a CPU
    machine. Only those missing GPU modules are replaced by inert stand-ins (any attribute is a class, any call
    returns itself), so ms-swift's argument classes and megatron-core's TransformerConfig are the real ones."""
    import importlib.abc
    import importlib.machinery
    import importlib.util
    import types

    missing = [m for m in GPU_ONLY if importlib.util.find_spec(m) is None]
    if not missing:
        return []

    def stub_class(name: str) -> type:
        def attr(self: Any, key: str) -> Any:
            if key.startswith("__"):
                raise AttributeError(key)
            return stub_class(key)()

        def cls_attr(cls: Any, key: str) -> Any:
            if key.startswith("__"):
                raise AttributeError(key)
            return stub_class(key)

        meta = type("StubMeta", (type,), {"__getattr__": cls_attr})
        return meta(name, (), {"__init__": lambda self, *a, **k: None, "__call__": lambda self, *a, **k: self,
                               "__getattr__": attr, "__getitem__": lambda self, k: self})

    class StubModule(types.ModuleType):
        def __getattr__(self, key: str) -> Any:
            if key.startswith("__"):
                raise AttributeError(key)
            return sys.modules.get(f"{self.__name__}.{key}") or stub_class(key)

    class Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
            if fullname.split(".")[0] in missing:
                return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
            return None

        def create_module(self, spec: Any) -> Any:
            mod = StubModule(spec.name)
            mod.__path__ = []
            # a version probe: below 2.x megatron-core falls back to None classes that mcore-bridge then patches
            mod.__version__ = "2.9.0"
            return mod

        def exec_module(self, module: Any) -> None:
            return None

    sys.meta_path.insert(0, Finder())
    return missing


def _transformer_config(ns: Any) -> str:
    """megatron-core's own TransformerConfig validation (recompute, parallel sizes, MoE flags) on the parsed
    arguments, with a small model shape: the checks that refuse a launch do not depend on the model's size."""
    import dataclasses

    from megatron.core.transformer import TransformerConfig

    names = {f.name for f in dataclasses.fields(TransformerConfig)}
    kw = {k: v for k, v in vars(ns).items() if k in names and v is not None}
    kw.update(num_layers=4, hidden_size=64, num_attention_heads=4)
    kw.setdefault("num_moe_experts", max(8, int(kw.get("expert_model_parallel_size") or 1)))
    TransformerConfig(**kw)
    return (f"megatron-core TransformerConfig(recompute={kw.get('recompute_granularity')}/"
            f"{kw.get('recompute_method')}/{kw.get('recompute_num_layers')})")


def _post_parse(cls: Any, ns: Any, skipped: list[str]) -> Any:
    """Builds the arguments dataclass so the trainer's own `__post_init__` validation runs; returns it or None."""
    import tempfile

    import torch

    fields = dict(vars(ns))
    fields["output_dir"] = tempfile.mkdtemp(prefix="gate-swift-check-")
    if not torch.cuda.is_available() and fields.get("torch_dtype") in ("bfloat16", "float16"):
        skipped.append(f"{fields['torch_dtype']} support (no GPU here: post-parse checks ran with float32)")
        fields["torch_dtype"] = "float32"
    try:
        return cls(**fields)
    except Exception as exc:
        name = type(exc).__name__
        if name in ("LocalEntryNotFoundError", "OfflineModeIsEnabled", "RepositoryNotFoundError", "HFValidationError"):
            skipped.append(f"{cls.__name__} post-parse checks (the model {fields.get('model')} is not on this "
                           "machine and the hub is not contacted)")
            return None
        raise


def _lora_targets(ns: Any, model_type: str | None, done: list[str], warnings: list[str]) -> None:
    """Applies the LoRA config with peft's own code to the model on the meta device; says what is really trained."""
    import torch
    from peft import LoraConfig, get_peft_model
    from peft.tuners.lora import LoraLayer
    from transformers import AutoConfig, AutoModelForCausalLM

    if Path(ns.model).is_dir():
        cfg = AutoConfig.from_pretrained(ns.model)
        where = "its config"
    else:  # a hub id: the architecture's default config (GLM-5's for glm_moe_dsa), cut to one MoE layer
        mt = ns.model_type or model_type
        if not mt:
            raise ValueError("cannot build the model to check LoRA targets: no model_type and the model is not local")
        cfg = AutoConfig.for_model(mt)
        dense = int(getattr(cfg, "first_k_dense_replace", 0) or 0)
        cfg.num_hidden_layers = min(cfg.num_hidden_layers, dense + 1)
        where = f"default {mt} config, {cfg.num_hidden_layers} layers"
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(cfg)
    base = {n for n, _ in model.named_modules()}
    requested = [t for t in (ns.target_modules or []) if t not in ("all-linear", "all-router", "all-embedding")]
    lc = LoraConfig(r=ns.lora_rank, lora_alpha=ns.lora_alpha, lora_dropout=ns.lora_dropout,
                    target_modules=list(ns.target_modules or []) if requested else "all-linear",
                    target_parameters=list(ns.target_parameters or []) or None)
    peft_model = get_peft_model(model, lc)
    prefix = "base_model.model."
    lora = {n[len(prefix):] if n.startswith(prefix) else n for n, m in peft_model.named_modules()
            if isinstance(m, LoraLayer) and not n.endswith(".base_layer")}
    final = peft_model.peft_config["default"]
    done.append(f"effective LoRA ({where}): modules={sorted(final.target_modules or [])} "
                f"parameters={sorted(final.target_parameters or [])} on {len(lora)} module(s)")
    for t in requested:
        wanted = sorted(n for n in base if n == t or n.endswith("." + t))
        missed = [n for n in wanted if n not in lora]
        if missed:
            shown = ", ".join(missed[:3]) + (f" (+{len(missed) - 3})" if len(missed) > 3 else "")
            warnings.append(f"LoRA target {t}: {len(missed)} of {len(wanted)} module(s) get no adapter ({shown}); "
                            f"peft {__import__('peft').__version__} rewrote the target for "
                            f"{getattr(cfg, 'model_type', '?')}")


def main(plan_dir: str) -> int:
    pdir = Path(plan_dir)
    done: list[str] = []
    skipped: list[str] = []
    warnings: list[str] = []
    try:
        args_file = next(pdir.glob("*_sft.args.json"))
        spec = json.loads(args_file.read_text())
        program, argv = spec["program"], spec["args"]
        import swift

        done.append(f"ms-swift {swift.__version__}")
        if program[0] == "megatron":
            stubbed = _stub_gpu_modules()
            try:
                from swift.megatron.arguments import MegatronSftArguments
            except ImportError as exc:  # megatron-core / mcore-bridge not installed
                skipped.append(f"megatron sft arguments: nothing of the Megatron plan was parsed (megatron stack not "
                               f"importable: {exc})")
                print(json.dumps({"ok": True, "checks": done, "skipped": skipped, "warnings": warnings}))
                return 0
            if stubbed:
                done.append(f"GPU-only modules stubbed: {', '.join(stubbed)}")
            ns = _parse(MegatronSftArguments, argv)
            done.append("megatron sft arguments")
            done.append(_transformer_config(ns))
            skipped.append("MegatronSftArguments post-parse checks (they initialise torch.distributed and load the "
                           "model: GPU ranks only)")
        else:
            from swift.arguments import SftArguments

            ns = _parse(SftArguments, argv)
            done.append("swift sft arguments")
            if _post_parse(SftArguments, ns, skipped) is not None:
                done.append("SftArguments post-parse checks")
        done.append(f"tuner_type={ns.tuner_type}")
        if getattr(ns, "target_parameters", None):
            done.append(f"target_parameters={ns.target_parameters}")
        if ns.tuner_type == "lora" and program[0] == "swift":
            _lora_targets(ns, spec.get("model_type"), done, warnings)
        export = pdir / "export.sh"
        if export.is_file() and program[0] == "swift":
            from swift.arguments import ExportArguments

            line = next(ln for ln in export.read_text().splitlines() if ln.startswith("swift export"))
            ex = _parse(ExportArguments, [a.replace('"$CKPT"', "ckpt") for a in shlex.split(line)[2:]])
            assert ex.merge_lora, "export does not merge"
            done.append("swift export --merge_lora arguments")
        from swift.dataset import load_dataset

        train, _ = load_dataset(list(ns.dataset), use_hf=True, load_from_cache_file=False)
        first = train[0]
        assert first.get("messages"), "no messages after ms-swift preprocessing"
        done.append(f"dataset rows={len(train)} roles={[m['role'] for m in first['messages']]}")
    except Exception as exc:
        print(traceback.format_exc(limit=4), file=sys.stderr)
        print(json.dumps({"ok": False, "checks": done, "skipped": skipped, "warnings": warnings,
                          "error": f"{type(exc).__name__}: {exc}"[:500]}))
        return 1
    print(json.dumps({"ok": True, "checks": done, "skipped": skipped, "warnings": warnings}))
    return 0


if __name__ == "__main__":
    # several plan directories in one process: the trainer's imports dominate the time
    sys.exit(max(main(d) for d in sys.argv[1:]))
