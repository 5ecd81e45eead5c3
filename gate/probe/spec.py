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

from gate.errors import GateError, InputError

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


# The PEFT function `honour_targets` switches off, and what it was written for: the rewrite arrived in PEFT 0.19.0
# (PR #3083); 0.19.0-0.20.0 were read in PEFT's sources and 0.21.2 is run by the tests, each calling it from
# `BaseTuner.inject_adapter` by module attribute as (peft_config, model=, conversions=). A release outside the range
# may rewrite elsewhere or mean something else by it, so the probe refuses rather than swap blind.
PEFT_REWRITE = "convert_peft_config_for_transformers"
PEFT_REWRITE_PARAMS = ("peft_config", "model", "conversions")
PEFT_REWRITE_RANGE = ("0.19.0", "0.22.0")  # [first, end)


def installed_peft() -> str:
    """The installed distribution's version (what pip installed, not what a module says of itself)."""
    from importlib import metadata

    try:
        return metadata.version("peft")
    except metadata.PackageNotFoundError:
        import peft

        return str(peft.__version__)


def check_rewrite(fn: Any, version: str) -> None:
    """Raises a one-line GateError unless `fn` is the rewrite `honour_targets` was written to switch off: PEFT
    `version` inside PEFT_REWRITE_RANGE and `fn`'s parameters exactly PEFT_REWRITE_PARAMS."""
    import inspect

    from packaging.version import InvalidVersion, Version

    first, end = PEFT_REWRITE_RANGE
    try:
        v = Version(Version(version).base_version)  # 0.22.0.dev0 is already the next release
    except InvalidVersion:
        raise GateError(f"cannot read the installed PEFT version {version!r}", field="peft") from None
    if not Version(first) <= v < Version(end):
        raise GateError(f"PEFT {version} is not >= {first}, < {end}, the releases whose {PEFT_REWRITE} the probe "
                        "knows how to bypass for target_parameters; install a PEFT in that range", field="peft")
    if fn is None:
        raise GateError(f"PEFT {version} has no {PEFT_REWRITE} to bypass; the probe was not written for this "
                        "release", field="peft")
    try:
        params = tuple(inspect.signature(fn).parameters)
    except (TypeError, ValueError):  # not a Python function: not what the bypass was written for
        params = None
    if params != PEFT_REWRITE_PARAMS:
        got = f"({', '.join(params)})" if params is not None else f"a {type(fn).__name__}"
        raise GateError(f"PEFT {version}: {PEFT_REWRITE} is {got}, not ({', '.join(PEFT_REWRITE_PARAMS)}); the probe "
                        "will not bypass a function it was not written for", field="peft")


@contextmanager
def honour_targets(spec: LoraSpec | None) -> Iterator[None]:
    """Applies the spec's names as written when it already targets fused expert parameters (see module doc)."""
    if spec is None or not spec.target_parameters:
        yield
        return
    from packaging.version import Version

    version = installed_peft()
    try:
        before = Version(Version(version).base_version) < Version(PEFT_REWRITE_RANGE[0])
    except ValueError:  # InvalidVersion: check_rewrite words it
        before = False
    if before:  # releases before the rewrite apply the names as written anyway
        yield
        return
    try:
        import peft.utils.transformers_weight_conversion as conv
    except ImportError:
        conv = None
    saved = getattr(conv, PEFT_REWRITE, None)
    check_rewrite(saved, version)
    setattr(conv, PEFT_REWRITE, lambda *args, **kwargs: None)
    try:
        yield
    finally:
        setattr(conv, PEFT_REWRITE, saved)
