"""Step 3: config and tokenizer load, and the architecture builds, without allocating a single weight.

On the meta device a 753B model costs no memory, so this step runs on a laptop against the real config of the real
model and catches an unknown `model_type`, a missing chat template or a tokenizer larger than the embedding before
any GPU is involved. The model is built in bf16 so the parameters transformers keeps in fp32 (the router) show.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gate.probe.result import Step, judged

_PROBE_CHAT = [{"role": "user", "content": "ping"}, {"role": "assistant", "content": "pong"}]


def meta_model(config: Any) -> Any:
    import torch
    from transformers import AutoModelForCausalLM

    with torch.device("meta"):
        return AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)


def step_meta(model_dir: Path) -> tuple[Step, dict[str, Any]]:
    from transformers import AutoConfig

    from gate.probe.batch import load_tokenizer

    problems: list[str] = []
    config = AutoConfig.from_pretrained(str(model_dir), local_files_only=True)
    model = meta_model(config)
    params = list(model.parameters())
    on_meta = all(p.is_meta for p in params)
    if not on_meta:
        problems.append("some parameters were allocated outside the meta device")
    n_params = sum(p.numel() for p in params)
    fp32 = sorted({_short(n) for n, p in model.named_parameters() if str(p.dtype) == "torch.float32"})
    declared = (config.architectures or [None])[0]
    built = type(model).__name__
    if declared and declared != built:
        problems.append(f"config declares {declared}, transformers builds {built}")
    tok, tok_src = load_tokenizer(model_dir, config.vocab_size)
    if len(tok) > config.vocab_size:
        problems.append(f"tokenizer has {len(tok)} tokens, the embedding {config.vocab_size} rows")
    try:
        rendered = tok.apply_chat_template(_PROBE_CHAT, tokenize=False)
    except Exception as exc:  # the template's own error (jinja2 raises many kinds)
        problems.append(f"chat template does not render a plain chat: {exc}")
        rendered = ""
    template_kind = "GLM" if "<|assistant|>" in (tok.chat_template or "") else (
        "ChatML" if "<|im_start|>" in (tok.chat_template or "") else "other")
    ev = (f"{built} ({config.model_type}), {n_params:,} params on meta (0 B allocated); fp32 kept: "
          f"{', '.join(fp32) or 'none'}; tokenizer {len(tok)} <= vocab {config.vocab_size}; {template_kind} chat "
          f"template renders ({rendered[:24]!r}...)") if not problems else "; ".join(problems)
    details = {"architecture": built, "model_type": config.model_type, "params": n_params, "on_meta": on_meta,
               "fp32_parameters": fp32, "tokenizer": tok_src, "tokenizer_len": len(tok),
               "vocab_size": config.vocab_size, "chat_template": template_kind}
    return judged(3, "config + tokenizer on meta", not problems, ev, details), {"config": config, "model": model,
                                                                                 "tokenizer": tok}


def _short(name: str) -> str:
    """`model.layers.1.mlp.gate.weight` -> `mlp.gate.weight`: one entry per kind, not per layer."""
    parts = name.split(".")
    if "layers" in parts:
        i = parts.index("layers")
        return ".".join(parts[i + 2:])
    return name
