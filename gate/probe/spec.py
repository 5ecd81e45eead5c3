"""The LoRA spec a probe applies: a small YAML file (rank, alpha, target modules and parameters, exclusions).

PEFT >= 0.19 rewrites `gate_proj`/`up_proj`/`down_proj` in `target_modules` into the fused expert parameters for
MoE models whose layout changed in transformers v5 (glm_moe_dsa, glm4_moe, ...), so those names no longer reach the
shared experts or the dense MLP. That rewrite exists to load adapters trained under transformers v4; a spec that
already names the fused `target_parameters` means the v5 layout, so `honour_targets()` applies it as written.
Step 4 reports what stock PEFT would have done, so the difference is never silent.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gate.errors import InputError

_KEYS = {"r", "alpha", "dropout", "target_modules", "target_parameters", "exclude_modules"}


@dataclass(frozen=True)
class LoraSpec:
    path: str
    r: int = 8
    alpha: int = 16
    dropout: float = 0.0
    target_modules: list[str] = field(default_factory=list)
    target_parameters: list[str] = field(default_factory=list)
    exclude_modules: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "r": self.r, "alpha": self.alpha, "dropout": self.dropout,
                "target_modules": self.target_modules, "target_parameters": self.target_parameters,
                "exclude_modules": self.exclude_modules}

    def lora_config(self) -> Any:
        from peft import LoraConfig

        return LoraConfig(r=self.r, lora_alpha=self.alpha, lora_dropout=self.dropout, task_type="CAUSAL_LM",
                          target_modules=list(self.target_modules) or None,
                          target_parameters=list(self.target_parameters) or None,
                          exclude_modules=list(self.exclude_modules) or None)


def load_spec(path: str | Path) -> LoraSpec:
    import yaml

    p = Path(path)
    if not p.is_file():
        raise InputError("LoRA spec not found", file=str(p))
    try:
        raw = yaml.safe_load(p.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        line = getattr(getattr(exc, "problem_mark", None), "line", None)
        raise InputError(f"not valid YAML: {str(exc).splitlines()[0]}", file=str(p),
                         line=line + 1 if line is not None else None) from None
    if not isinstance(raw, dict):
        raise InputError("a LoRA spec is a mapping (r, alpha, target_modules, ...)", file=str(p))
    unknown = sorted(set(raw) - _KEYS)
    if unknown:
        raise InputError(f"unknown key (expected one of {', '.join(sorted(_KEYS))})", file=str(p), field=unknown[0])
    lists: dict[str, list[str]] = {}
    for key in ("target_modules", "target_parameters", "exclude_modules"):
        val = raw.get(key) or []
        if isinstance(val, str):
            val = [v.strip() for v in val.split(",") if v.strip()]
        if not isinstance(val, list) or not all(isinstance(v, str) and v for v in val):
            raise InputError("must be a list of names", file=str(p), field=key)
        lists[key] = val
    if not lists["target_modules"] and not lists["target_parameters"]:
        raise InputError("needs target_modules or target_parameters", file=str(p), field="target_modules")
    for key, kind, lo in (("r", int, 1), ("alpha", int, 1), ("dropout", float, 0)):
        val = raw.get(key, getattr(LoraSpec, key))
        if isinstance(val, bool) or not isinstance(val, int | float) or val < lo or (kind is int and val != int(val)):
            raise InputError(f"must be a number >= {lo}", file=str(p), field=key)
    return LoraSpec(path=str(p), r=int(raw.get("r", 8)), alpha=int(raw.get("alpha", 16)),
                    dropout=float(raw.get("dropout", 0.0)), **lists)


@contextmanager
def honour_targets(spec: LoraSpec | None) -> Iterator[None]:
    """Applies the spec's names as written when it already targets fused expert parameters (see module doc)."""
    if spec is None or not spec.target_parameters:
        yield
        return
    try:  # the rewrite arrived in PEFT 0.19; older releases apply the names as written anyway
        import peft.utils.transformers_weight_conversion as conv
    except ImportError:
        yield
        return
    saved = getattr(conv, "convert_peft_config_for_transformers", None)
    if saved is None:
        yield
        return
    conv.convert_peft_config_for_transformers = lambda *args, **kwargs: None
    try:
        yield
    finally:
        conv.convert_peft_config_for_transformers = saved
