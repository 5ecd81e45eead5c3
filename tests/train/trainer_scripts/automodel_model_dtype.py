"""Runs inside .venv-nemo: what precision AutoModel 0.7 itself gives the model section of a gate-written recipe.

The recipe is read by AutoModel's own config loader (`parse_args_and_load_config`, the `automodel` CLI's), the model
section is instantiated with its own `ConfigNode.instantiate`, i.e. `NeMoAutoModelForCausalLM.from_pretrained` with
the section's keys, and AutoModel's own `_init_model` builds the model with the dtype from_pretrained resolved.

Two stand-ins, because the CPU build of torch has no CUDA: `torch.cuda.current_device` answers 0 (from_pretrained
only names the device with it), and `_build_model`'s infrastructure half (meta-device init, sharding, moving to
CUDA, loading the checkpoint into the built parameters) is skipped: it copies weights into the parameters the
model was built with and does not change their dtype, so the built parameters are the training precision.

Usage: python automodel_model_dtype.py AUTOMODEL_YAML -> one JSON line: {"yaml_value", "resolved",
"built_with", "param_dtypes", "custom_model"}
"""

import inspect
import json
import sys
from typing import Any

import torch
from nemo_automodel import NeMoAutoModelForCausalLM
from nemo_automodel._transformers import auto_model
from nemo_automodel.components.config._arg_parser import parse_args_and_load_config
from nemo_automodel.shared.utils import dtype_from_str

torch.cuda.current_device = lambda: 0  # the CPU build raises; from_pretrained only names "cuda:0" with it

cfg = parse_args_and_load_config(sys.argv[1], argv=[])
raw = cfg.get("model.torch_dtype", None)
if raw is None:
    raw = cfg.get("model.dtype", None)
out: dict[str, object] = {"yaml_value": None if raw is None else str(raw),
             "resolved": None if raw is None else str(dtype_from_str(raw))}

build = auto_model._BaseNeMoAutoModelClass._build_model.__func__
infra = set(inspect.signature(build).parameters) - {"cls", "pretrained_model_name_or_path_or_config", "model_args",
                                                    "kwargs"}


def _build_on_cpu(cls: type, source: str, *model_args: object, **kwargs: Any) -> Any:
    """`_build_model` up to the model's construction: the same `_init_model` call with the same arguments."""
    named = {k: kwargs.pop(k) for k in list(kwargs) if k in infra}
    for k in ("has_packed_sequence", "freeze_config"):  # _build_model pops these before _init_model
        kwargs.pop(k, None)
    out["built_with"] = str(named["torch_dtype"])
    custom, model = auto_model._init_model(cls, source, named["attn_implementation"], named["torch_dtype"],
                                           named["quantization_config"], named["force_hf"], *model_args, **kwargs)
    out["custom_model"] = bool(custom)
    return model


NeMoAutoModelForCausalLM._build_model = classmethod(_build_on_cpu)
model = cfg.model.instantiate()
out["param_dtypes"] = sorted({str(p.dtype) for p in model.parameters()})
print(json.dumps(out))
