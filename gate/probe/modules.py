"""Step 4: what a LoRA spec really trains on this architecture, and what it misses or must not touch.

The failure this catches is silent: on a MoE model a Llama-style target list trains attention only, the routed
experts (fused 3-D `nn.Parameter`s in transformers >= 5, invisible to `target_modules`) and the shared experts stay
frozen, and the run still "works". The analysis runs on the meta device, so it is exact for the full-size model.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from gate.probe.result import Step, judged
from gate.probe.spec import LoraSpec, honour_targets

PARTS = ("attention", "indexer", "router", "shared_experts", "routed_experts", "dense_mlp", "embeddings", "lm_head",
         "norms")
_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("indexer", re.compile(r"\.self_attn\.indexer\.")),
    ("attention", re.compile(r"\.self_attn\.")),
    ("router", re.compile(r"\.mlp\.gate\.(weight|e_score_correction_bias|bias)$")),
    ("shared_experts", re.compile(r"\.mlp\.shared_experts?\.")),
    ("routed_experts", re.compile(r"\.mlp\.experts\.")),
    ("dense_mlp", re.compile(r"\.mlp\.")),
    ("embeddings", re.compile(r"embed_tokens")),
    ("lm_head", re.compile(r"^lm_head\.")),
)
_PEFT_NOISE = re.compile(r"^base_model\.model\.|\.base_layer(?=\.|$)|\.(lora_[AB]|lora_embedding_[AB]|"
                         r"lora_magnitude_vector)\.[^.]+(?=\.|$)")


def part_of(name: str) -> str:
    """The path a (base or LoRA) parameter belongs to: attention, router, routed_experts, ..."""
    clean = base_name(name)
    for part, rule in _RULES:
        if rule.search(clean):
            return part
    return "norms"


def base_name(name: str) -> str:
    """The base-model name under PEFT's wrapping: drops `base_model.model.`, `.base_layer`, `.lora_A.default`."""
    return _PEFT_NOISE.sub("", name)


def adapted_params(peft_model: Any) -> set[str]:
    """Base parameter names that received an adapter (Linear weights and target_parameters alike)."""
    from peft.tuners.lora import LoraLayer

    out: set[str] = set()
    for name, mod in peft_model.named_modules():
        if not isinstance(mod, LoraLayer):
            continue
        pname = getattr(mod, "parameter_name", None)
        out.add(f"{base_name(name)}.{pname or 'weight'}")
    return out


def _apply(model: Any, spec: LoraSpec, honour: bool) -> tuple[Any | None, str | None]:
    from peft import get_peft_model

    try:
        if honour:
            with honour_targets(spec):
                return get_peft_model(model, spec.lora_config()), None
        return get_peft_model(model, spec.lora_config()), None
    except ValueError as exc:  # PEFT: "Target modules {...} not found in the base model", fused-pair errors
        return None, str(exc).splitlines()[0]


def step_modules(make_meta: Any, spec: LoraSpec | None) -> Step:
    """`make_meta()` returns a fresh meta-device model (PEFT wraps in place, so each analysis needs its own)."""
    base = make_meta()
    totals: Counter[str] = Counter()
    names: dict[str, list[str]] = {}
    for n, p in base.named_parameters():
        if p.dim() < 2:  # norms and biases: never LoRA targets
            continue
        totals[part_of(n)] += 1
        names.setdefault(part_of(n), []).append(n)
    shapes = {n: tuple(p.shape) for n, p in base.named_parameters()}
    if spec is None:
        return _full_finetuning(base)

    problems: list[str] = []
    model, err = _apply(base, spec, honour=True)
    if model is None:
        problems.append(f"PEFT cannot apply {spec.path}: {err}")
        covered: set[str] = set()
        n_train = 0
    else:
        covered = adapted_params(model)
        n_train = sum(p.numel() for p in model.parameters() if p.requires_grad)
        if n_train == 0:
            problems.append("the spec leaves nothing trainable")
    by_part = Counter(part_of(n) for n in covered)
    targets = sorted(covered)
    unmatched = [t for t in spec.target_modules if not any(n == t or n.endswith("." + t) for n, _ in
                                                           base.named_modules())]
    warnings = _coverage_findings(totals, names, shapes, by_part, covered, unmatched, problems)
    # what stock PEFT does with the same spec (its v4->v5 MoE rename can silently drop shared experts / dense MLP)
    stock_note = _stock_peft_loss(make_meta, spec, covered) if spec.target_parameters and model is not None else None
    if stock_note:
        warnings.append(stock_note)

    parts_txt = ", ".join(f"{p} {by_part[p]}/{totals[p]}" for p in PARTS if totals[p] and p not in ("norms",))
    kinds = sorted({re.sub(r"^.*\.layers\.\d+\.", "", n).removesuffix(".weight") for n in targets})
    ev = (f"{len(targets)} adapted weights, {n_train:,} trainable params (r={spec.r}, alpha={spec.alpha}): "
          f"{', '.join(kinds)}; covered: {parts_txt}")
    if problems:
        ev = "; ".join(problems) + "; " + ev
    details = {"mode": "lora", "spec": spec.to_json(), "trainable_params": n_train, "targets": targets,
               "covered": {p: [by_part[p], totals[p]] for p in PARTS if totals[p]}, "unmatched_names": unmatched,
               "problems": problems, "stock_peft": stock_note}
    return judged(4, "trainable modules", not problems, ev, details, warnings)


def _full_finetuning(base: Any) -> Step:
    """No LoRA spec: every parameter trains except the DSA indexer, which gets no gradient."""
    warnings: list[str] = []
    n_all = sum(p.numel() for p in base.parameters())
    n_index = sum(p.numel() for n, p in base.named_parameters() if part_of(n) == "indexer")
    if n_index:
        warnings.append(f"full fine-tuning: the DSA indexer ({n_index:,} params) gets no gradient (its top-k "
                        "scoring runs under torch.no_grad); the probe freezes it, as a trainer must: AdamW makes "
                        "no state for it and a sharded (DCP) optimizer checkpoint then fails to load")
    ev = f"full fine-tuning: {n_all - n_index:,} of {n_all:,} parameters trainable"
    return judged(4, "trainable modules", True, ev, {"trainable_params": n_all - n_index, "mode": "full",
                                                     "frozen_indexer_params": n_index}, warnings)


def _coverage_findings(totals: Counter[str], names: dict[str, list[str]], shapes: dict[str, tuple[int, ...]],
                       by_part: Counter[str], covered: set[str], unmatched: list[str], problems: list[str]
                       ) -> list[str]:
    """What the spec's coverage of each model part means: the warnings it returns (a part left untouched, one a
    server cannot serve LoRA on), and the problems it appends to `problems` (router or indexer adapted)."""
    warnings: list[str] = []
    if totals["routed_experts"]:
        fused = sorted({re.sub(r".*\.layers\.\d+\.", "", n) for n in names["routed_experts"]
                        if len(shapes[n]) == 3})
        if not by_part["routed_experts"]:
            hint = (f"they are fused 3-D parameters ({', '.join(fused)}), so target_modules cannot reach them: add "
                    f"target_parameters: [{', '.join(fused)}]") if fused else "add them to the targets"
            warnings.append(f"routed experts untouched: {hint}")
        elif by_part["routed_experts"] < len(names["routed_experts"]):
            missed = sorted({re.sub(r".*\.layers\.\d+\.", "", n) for n in names["routed_experts"]} -
                            {re.sub(r".*\.layers\.\d+\.", "", n) for n in covered})
            if missed:
                warnings.append(f"routed experts partly untouched: {', '.join(missed)}")
    if totals["shared_experts"] and not by_part["shared_experts"]:
        warnings.append("shared experts untouched: target shared_experts.{gate,up,down}_proj (nn.Linear)")
    if totals["attention"] and not by_part["attention"]:
        att = sorted({n.split(".")[-2] for n in names["attention"] if n.endswith(".weight") and
                      len(shapes[n]) == 2})
        warnings.append(f"attention untouched; this model's attention projections are {', '.join(att)}")
    if by_part["router"]:
        problems.append("the spec adapts the router (mlp.gate): it is kept in fp32 and must not be touched")
    if by_part["indexer"]:
        problems.append("the spec adapts the DSA indexer (wq_b, wk, weights_proj): it gets no gradient; add them "
                        "to exclude_modules")
    for part in ("embeddings", "lm_head"):
        if by_part[part]:
            warnings.append(f"the spec adapts {part}: vLLM and most exporters do not serve LoRA there")
    if unmatched and totals["attention"] and not by_part["attention"]:
        warnings.append(f"{', '.join(unmatched)} match no module in this model")
    return warnings


def _stock_peft_loss(make_meta: Any, spec: LoraSpec, covered: set[str]) -> str | None:
    """The weights stock PEFT's get_peft_model would silently drop from this spec (None: none)."""
    stock, _ = _apply(make_meta(), spec, honour=False)
    stock_cov = adapted_params(stock) if stock is not None else set()
    lost = Counter(part_of(n) for n in covered - stock_cov)
    if not lost:
        return None
    import peft

    dropped = f"{', '.join(sorted(lost))} ({sum(lost.values())} weights)"
    return (f"stock PEFT {peft.__version__} get_peft_model rewrites gate_proj/up_proj/down_proj into "
            f"the fused expert parameters and drops LoRA on {dropped}; gate applies the spec as "
            f"written; a trainer using stock PEFT loses them")
