"""Loading the model under probe the same way in every process (parent, resume child, torchrun workers).

Everything a comparison across processes depends on is fixed here: fp32 weights (so merged-vs-unmerged and resume
differences measure the stack, not bf16 rounding), a seeded adapter init, one thread (so CPU kernels reduce in the
same order in every process), and one optimizer recipe.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from gate.probe.spec import LoraSpec, honour_targets

LR = 1e-3


def quiet_libraries() -> None:
    """Progress bars and advisory warnings from transformers would drown the table."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    import warnings

    warnings.filterwarnings("ignore")
    from transformers.utils import logging as tlog

    tlog.set_verbosity_error()
    tlog.disable_progress_bar()


def load_model(model_dir: str | Path, spec: LoraSpec | None, *, seed: int = 0) -> Any:
    """The model in fp32 with the adapter applied (or every parameter trainable when there is no spec)."""
    import torch
    from transformers import AutoModelForCausalLM

    quiet_libraries()
    torch.set_num_threads(1)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32, local_files_only=True)
    if spec is not None:
        from peft import get_peft_model

        with honour_targets(spec):
            model = get_peft_model(model, spec.lora_config())
    else:
        # full fine-tuning: the DSA indexer never gets a gradient, so AdamW never makes state for it, and a fresh
        # optimizer's (which has it) then cannot load a sharded checkpoint; freeze it, as a trainer must
        from gate.probe.modules import part_of

        for n, p in model.named_parameters():
            if part_of(n) == "indexer":
                p.requires_grad_(False)
    return model


def trainable(model: Any) -> dict[str, Any]:
    return {n: p for n, p in model.named_parameters() if p.requires_grad}


def optimizer_for(model: Any) -> Any:
    import torch

    return torch.optim.AdamW(list(trainable(model).values()), lr=LR, betas=(0.9, 0.95), weight_decay=0.0)


def train_step(model: Any, optimizer: Any, batch: dict[str, Any]) -> float:
    """One forward, backward and optimizer step; returns the loss before the update."""
    model.train()
    out = model(**batch)
    out.loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return float(out.loss.detach())
