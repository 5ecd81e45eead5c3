"""Step 8: the adapter survives save and reload, and merging it changes nothing but the speed.

Merged weights are what vLLM, GGUF and `swift export --merge_lora` ship; if merged and unmerged logits disagree (a
fused-expert adapter merged along the wrong axis, a dropped shared-expert adapter on reload) the released model is
not the trained one. fp32 throughout, so any difference above 1e-4 is a bug, not rounding.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gate.probe.result import Step, judged
from gate.probe.spec import LoraSpec, honour_targets

TOL = 1e-4


def logits(model: Any, batch: dict[str, Any]) -> Any:
    import torch

    model.eval()
    with torch.no_grad():
        return model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits.float()


def step_adapter(model: Any, spec: LoraSpec | None, model_dir: Path, batch: dict[str, Any], work: Path) -> Step:
    if spec is None:
        return judged(8, "adapter save/reload/merge", True, "full fine-tuning: no adapter to merge (the weights are "
                      "the checkpoint of step 7)")
    from peft import PeftModel
    from safetensors import safe_open

    from gate.io.atomic import atomic_dir
    from gate.probe.model import load_model

    trained = logits(model, batch)
    with model.disable_adapter():
        base = logits(model, batch)
    out = work / "adapter"
    with atomic_dir(out) as tmp:
        model.save_pretrained(str(tmp))
    with safe_open(str(out / "adapter_model.safetensors"), "pt") as fh:
        keys = list(fh.keys())
    fresh = load_model(model_dir, None)
    with honour_targets(spec):
        reloaded = PeftModel.from_pretrained(fresh, str(out))
    unmerged = logits(reloaded, batch)
    reload_diff = float((unmerged - trained).abs().max())
    merged_model = reloaded.merge_and_unload()
    merged = logits(merged_model, batch)
    merge_diff = float((merged - unmerged).abs().max())
    effect = float((trained - base).abs().max())
    size = sum(p.stat().st_size for p in out.iterdir())
    ok = reload_diff <= TOL and merge_diff <= TOL and effect > 0
    ev = (f"saved {len(keys)} tensors ({size / 1024:.0f} KB); reloaded vs in-memory max |diff| {reload_diff:.1e}; "
          f"merged vs unmerged max |diff| {merge_diff:.1e} (tol {TOL:g}); adapter moves logits by {effect:.1e}")
    if effect == 0:
        ev = "the trained adapter does not change the logits: nothing to prove; " + ev
    warnings: list[str] = []
    stock_diff = None
    if spec.target_parameters:  # what a consumer with stock PEFT (an eval harness, a merge script) would load
        import warnings as pywarnings

        import peft

        try:
            with pywarnings.catch_warnings():
                pywarnings.simplefilter("ignore")
                stock = PeftModel.from_pretrained(load_model(model_dir, None), str(out))
            stock_diff = float((logits(stock, batch) - trained).abs().max())
        except RuntimeError as exc:  # torch's load_state_dict: size mismatches between rewritten targets and keys
            lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
            why = next((ln for ln in lines if "size mismatch" in ln or "Missing" in ln), lines[0] if lines else "")
            warnings.append(f"stock PEFT {peft.__version__} PeftModel.from_pretrained cannot load this adapter: "
                            f"{why[:300]} (its MoE target rewrite reshapes the targets; load it with the same "
                            f"handling, or merge it first)")
        if stock_diff is not None and stock_diff > TOL:
            warnings.append(f"stock PEFT {peft.__version__} PeftModel.from_pretrained of this adapter gives logits "
                            f"{stock_diff:.1e} away from the trained model (its MoE target rewrite skips adapter "
                            f"weights): load it with the same PEFT handling, or merge it first")
    fused = sorted({k.split(".mlp.experts.")[1] for k in keys if ".mlp.experts." in k})[:4]
    return judged(8, "adapter save/reload/merge", ok, ev,
                  {"tensors": len(keys), "bytes": size, "reload_max_abs_diff": reload_diff,
                   "merge_max_abs_diff": merge_diff, "adapter_effect": effect, "expert_keys": fused,
                   "stock_peft_reload_max_abs_diff": stock_diff}, warnings)
