"""Steps 5 and 6: one real optimizer step on rendered rows, then the numbers that say it was healthy.

Per-path gradient norms are the MoE-specific part: a finite loss with zero gradient on the routed experts (a
router that never dispatches, experts frozen by the targets) or a gradient on the frozen fp32 router would both
look fine from the loss alone.
"""

from __future__ import annotations

import math
import time
from typing import Any

from gate.probe.model import optimizer_for, trainable
from gate.probe.modules import part_of
from gate.probe.result import Step, judged

PATHS = ("attention", "router", "shared_experts", "routed_experts")


def step_train(model: Any, batch: dict[str, Any]) -> tuple[Step, Step, dict[str, Any]]:
    """Returns (step 5, step 6, state for later steps: the optimizer and a copy of the weights before the step)."""
    import torch

    params = trainable(model)
    before = {n: p.detach().clone() for n, p in params.items()}
    frozen_probe = {n: p.detach().clone() for n, p in model.named_parameters()
                    if not p.requires_grad and part_of(n) in ("router", "routed_experts", "attention")}
    opt = optimizer_for(model)
    model.train()
    t = time.perf_counter()
    out = model(**batch)
    loss = out.loss
    loss.backward()
    fwd_bwd = time.perf_counter() - t
    sq: dict[str, float] = {}
    no_grad: list[str] = []
    bad: list[str] = []
    for n, p in params.items():
        if p.grad is None:
            no_grad.append(n)
            continue
        g = float(p.grad.detach().float().pow(2).sum())
        if not math.isfinite(g):
            bad.append(n)
        sq[part_of(n)] = sq.get(part_of(n), 0.0) + g
    opt.step()
    opt.zero_grad(set_to_none=True)
    step_s = time.perf_counter() - t
    changed = sum(1 for n, p in params.items() if not torch.equal(p.detach(), before[n]))
    frozen_moved = [n for n, v in frozen_probe.items() if not torch.equal(dict(model.named_parameters())[n], v)]
    tokens = int(batch["attention_mask"].sum())
    loss_v = float(loss.detach())

    ok5 = changed > 0 and not frozen_moved
    ev5 = (f"{tuple(batch['input_ids'].shape)[0]} rows, {tokens} tokens: forward+backward {fwd_bwd:.2f}s, "
           f"AdamW step {step_s:.2f}s; {changed}/{len(params)} trainable tensors updated, frozen weights unchanged")
    if changed < len(params) and any(".lora_B." in n for n in params):
        ev5 += " (lora_A gets no gradient while lora_B is still zero: it moves from step 2)"
    if frozen_moved:
        ev5 = f"frozen weights moved: {', '.join(frozen_moved[:3])}"
    elif not changed:
        ev5 = "the optimizer step changed no trainable tensor"
    s5 = judged(5, "forward/backward/optimizer step", ok5, ev5,
                {"rows": int(batch["input_ids"].shape[0]), "tokens": tokens, "seconds": round(step_s, 3),
                 "updated": changed, "trainable_tensors": len(params)})

    norms = {k: math.sqrt(v) for k, v in sq.items()}
    problems: list[str] = []
    warnings: list[str] = []
    if not math.isfinite(loss_v):
        problems.append(f"loss is {loss_v}")
    if bad:
        problems.append(f"non-finite gradient in {', '.join(bad[:3])}")
    for part, v in norms.items():
        if v == 0.0:
            problems.append(f"{part}: gradient norm is exactly 0")
    trained_parts = {part_of(n) for n in params}
    missing = [n for n in no_grad if part_of(n) != "indexer"]
    if missing:
        problems.append(f"{len(missing)} trainable tensors got no gradient, e.g. {missing[0]}")
    cells = []
    for path in PATHS:
        if path in norms:
            cells.append(f"{path} {norms[path]:.3g}")
        elif path == "router" and _has_part(model, "router"):
            cells.append(f"router frozen ({_router_dtype(model)}, unchanged)")
        elif _has_part(model, path):
            cells.append(f"{path} frozen")
    others = {k: v for k, v in norms.items() if k not in PATHS}
    cells += [f"{k} {v:.3g}" for k, v in sorted(others.items())]
    indexer_params = [n for n, _ in model.named_parameters() if part_of(n) == "indexer"]
    if indexer_params:
        cells.append("indexer: no gradient (expected)" if all(n in no_grad or n not in params for n in
                                                                indexer_params) else "indexer got a gradient")
    ev6 = f"loss {loss_v:.4f}; grad norms: " + "; ".join(cells)
    if problems:
        ev6 = "; ".join(problems) + "; " + ev6
    s6 = judged(6, "finite loss, grad norm per path", not problems, ev6,
                {"loss": loss_v, "grad_norms": norms, "trained_paths": sorted(trained_parts),
                 "no_grad": no_grad, "problems": problems}, warnings)
    return s5, s6, {"optimizer": opt, "before": before, "loss": loss_v}


def _has_part(model: Any, part: str) -> bool:
    return any(part_of(n) == part for n, _ in model.named_parameters())


def _router_dtype(model: Any) -> str:
    for n, p in model.named_parameters():
        if part_of(n) == "router":
            return str(p.dtype).replace("torch.", "")
    return "?"
