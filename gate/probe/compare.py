"""Step 9: base and trained models answer the same fixed prompts under the same greedy decoding.

Two things are shown: decoding is reproducible (the base asked twice answers the same), and the trained model is
not the base (its next-token logits moved). Token outputs of a one-step tiny model often coincide; the logits
say whether training reached the output at all.
"""

from __future__ import annotations

from typing import Any

from gate.probe.result import Step, judged

PROMPTS = ("Where is my order ORD-100200?", "Please refund my last purchase.")
NEW_TOKENS = 8


def _generate(model: Any, tok: Any, enc: dict[str, Any]) -> tuple[list[str], Any]:
    import torch

    model.eval()
    with torch.no_grad():
        out = model.generate(**enc, max_new_tokens=NEW_TOKENS, do_sample=False, pad_token_id=tok.pad_token_id)
        last = model(**enc).logits[:, -1, :].float()
    width = enc["input_ids"].shape[1]
    return [tok.decode(o[width:], skip_special_tokens=False) for o in out], last


def step_compare(model: Any, base_model: Any, tok: Any) -> Step:
    """`base_model` is a context-manager factory yielding the base (the adapter disabled, or a fresh copy)."""
    texts = [tok.apply_chat_template([{"role": "user", "content": p}], tokenize=False, add_generation_prompt=True)
             for p in PROMPTS]
    tok.padding_side = "left"
    enc = dict(tok(texts, return_tensors="pt", padding=True, add_special_tokens=False))
    with base_model() as base:
        base_a, base_logits = _generate(base, tok, enc)
        base_b, _ = _generate(base, tok, enc)
    trained, trained_logits = _generate(model, tok, enc)
    moved = float((trained_logits - base_logits).abs().max())
    same_tokens = sum(a == b for a, b in zip(base_a, trained, strict=True))
    ok = base_a == base_b and moved > 0
    ev = (f"greedy, {NEW_TOKENS} new tokens, {len(PROMPTS)} prompts: base reproducible {base_a == base_b}; "
          f"next-token logits moved by {moved:.1e}; {same_tokens}/{len(PROMPTS)} answers identical; "
          f"base {base_a[0]!r} vs trained {trained[0]!r}")
    return judged(9, "base vs trained outputs", ok, ev,
                  {"prompts": list(PROMPTS), "base": base_a, "trained": trained, "reproducible": base_a == base_b,
                   "logits_max_abs_diff": moved})
