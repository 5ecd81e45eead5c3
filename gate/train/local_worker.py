"""The training process the `local` runner launches: transformers + PEFT on CPU or one GPU.

It runs as its own process (never inside `gate`) so the launch machinery is the same for every runner: a command, a
log, metric lines parsed as they arrive, a checkpoint directory at the end. It reads one JSON config the runner wrote
and prints AutoModel-style metric lines (`step N | epoch E | loss ... | grad_norm ... | lr ... | tps ...`, and
`[val] step N | ... | loss ...` for the validation split), so one parser serves both and validation loss lands in the
same metrics table as training loss. Validation runs where AutoModel's does in the plan the nemo-automodel runner
writes (`val_every_steps` = the checkpoint interval): at every checkpoint and at the end. Of the step checkpoints,
only the newest `checkpoint.keep` (counting the final one) survive, like AutoModel's `max_recent_checkpoints` and
ms-swift's `save_total_limit`. Loss is taken on assistant tokens only (the chat template's `{% generation %}` mask,
else a prefix render), which is what makes a tiny model learn an answer format instead of the prompt.

Usage: python -m gate.train.local_worker CONFIG.json
"""

from __future__ import annotations

import json
import math
import random
import sys
import time
from pathlib import Path
from typing import Any


def _rows(paths: list[str]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for p in paths:
        with open(p, encoding="utf-8") as fh:
            rows.extend(json.loads(line) for line in fh if line.strip())
    return rows


def _encode(tok: Any, row: dict[str, Any], max_len: int) -> tuple[list[int], list[int]] | None:
    """Token ids and labels (-100 outside assistant turns); None when no assistant token survives truncation."""
    messages = row["messages"]
    tools = row.get("tools") or None
    if isinstance(tools, str):
        tools = json.loads(tools)
    try:
        enc = tok.apply_chat_template(messages, tools=tools, tokenize=True, return_dict=True,
                                      return_assistant_tokens_mask=True)
        ids = list(enc["input_ids"])
        mask = list(enc["assistant_masks"])
        if not any(mask):
            raise ValueError("template has no generation markers")
    except ValueError:
        prompt = tok.apply_chat_template(messages[:-1], tools=tools, tokenize=True, add_generation_prompt=True,
                                         return_dict=True)["input_ids"]
        ids = list(tok.apply_chat_template(messages, tools=tools, tokenize=True, return_dict=True)["input_ids"])
        mask = [0] * len(prompt) + [1] * (len(ids) - len(prompt))
    eos = tok.eos_token_id
    # supervise the end-of-turn token right after the answer, or the model never learns to stop
    for i in range(1, len(ids)):
        if mask[i - 1] and not mask[i] and ids[i] == eos:
            mask[i] = 1
    ids, mask = ids[:max_len], mask[:max_len]
    if not any(mask):
        return None
    return ids, [t if m else -100 for t, m in zip(ids, mask, strict=True)]


def _pad(batch: list[tuple[list[int], list[int]]], pad: int, device: str) -> tuple[Any, Any, Any]:
    """Right-padded input_ids, labels (-100 on padding) and attention mask for one micro batch."""
    import torch

    width = max(len(ids) for ids, _ in batch)
    return (torch.tensor([ids + [pad] * (width - len(ids)) for ids, _ in batch], device=device),
            torch.tensor([lab + [-100] * (width - len(lab)) for _, lab in batch], device=device),
            torch.tensor([[1] * len(ids) + [0] * (width - len(ids)) for ids, _ in batch], device=device))


def _val_loss(model: Any, encoded: list[tuple[list[int], list[int]]], micro: int, pad: int,
              device: str) -> tuple[float, int]:
    """Mean cross-entropy per assistant token over the whole validation split (the training loss's definition, so
    the two curves are comparable), and the number of tokens it averages over."""
    import torch

    total, n_label = 0.0, 0
    model.eval()
    try:
        with torch.no_grad():
            for start in range(0, len(encoded), micro):
                ids_t, lab_t, att_t = _pad(encoded[start:start + micro], pad, device)
                logits = model(input_ids=ids_t, attention_mask=att_t).logits[:, :-1].float()
                target = lab_t[:, 1:]
                total += float(torch.nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)),
                                                                 target.reshape(-1), ignore_index=-100,
                                                                 reduction="sum"))
                n_label += int((target != -100).sum())
    finally:
        model.train()
    return total / max(n_label, 1), n_label


def _prune(saved: list[Path], keep: int) -> None:
    """Deletes the oldest of this run's step checkpoints until `keep` remain. Only checkpoints this process wrote
    are candidates (an output directory reused from an earlier run keeps its files), and each one is first renamed
    out of the `checkpoint-*` namespace, so a crash mid-delete never leaves a half checkpoint under a real name."""
    import os
    import shutil

    while len(saved) > max(keep, 0):
        old = saved.pop(0)
        trash = old.with_name(f".{old.name}.deleting")
        shutil.rmtree(trash, ignore_errors=True)
        os.replace(old, trash)
        shutil.rmtree(trash)
        print(f"gate-local: removed {old.name} (checkpoint.keep)", flush=True)


def _load_model(cfg: dict[str, Any], device: str) -> tuple[Any, Any]:
    """The tokenizer and the model in training mode on `device`, wrapped by PEFT for a LoRA run.

    The weights load in the spec's `dtype`, as ms-swift's `--torch_dtype` does, so one spec trains in one precision
    whichever runner runs it. A plan written before the dtype reached it has no `dtype` key: it was float32 then.
    PEFT keeps a LoRA adapter in float32 over a bfloat16 base (its `autocast_adapter_dtype` default)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    dtype = cfg.get("dtype") or "float32"
    tok = AutoTokenizer.from_pretrained(cfg["model"], revision=cfg.get("revision"))
    model = AutoModelForCausalLM.from_pretrained(cfg["model"], revision=cfg.get("revision"),
                                                 dtype=getattr(torch, dtype))
    method = cfg["method"]
    if method["type"] == "lora":
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(
            r=method["rank"], lora_alpha=method["alpha"], lora_dropout=method.get("dropout", 0.0),
            target_modules=method.get("targets") or "all-linear",
            target_parameters=method.get("target_parameters") or None, task_type="CAUSAL_LM"))
    model.to(device).train()
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    print(f"gate-local: model {cfg['model']} method {method['type']} dtype {dtype} trainable_params {trainable}",
          flush=True)
    return tok, model


def _encoded(tok: Any, paths: list[str], max_len: int) -> list[tuple[list[int], list[int]]]:
    """The rows of `paths` that keep an assistant token within `max_len`, encoded."""
    return [e for e in (_encode(tok, r, max_len) for r in _rows(paths)) if e]


def _lr_schedule(cfg: dict[str, Any]) -> Any:
    """Step -> learning rate: linear warm-up, then cosine down to `min_lr` (or constant)."""
    steps, warmup, lr = cfg["max_steps"], cfg["warmup_steps"], cfg["lr"]

    def lr_at(step: int) -> float:
        if step < warmup:
            return lr * (step + 1) / warmup
        if cfg.get("schedule", "cosine") == "constant":
            return lr
        progress = (step - warmup) / max(1, steps - warmup)
        return cfg.get("min_lr", 0.0) + 0.5 * (lr - cfg.get("min_lr", 0.0)) * (1 + math.cos(math.pi * progress))
    return lr_at


class _Sampler:
    """Micro batches drawn without replacement from a shuffled order, reshuffled (a new epoch) when it runs out."""

    def __init__(self, encoded: list[tuple[list[int], list[int]]], micro: int) -> None:
        self.encoded, self.micro = encoded, micro
        self.order: list[int] = []
        self.epoch = 0

    def draw(self, accum: int) -> list[list[tuple[list[int], list[int]]]]:
        batches = []
        for _ in range(accum):
            if len(self.order) < self.micro:
                if self.order:
                    self.epoch += 1
                self.order = list(range(len(self.encoded)))
                random.shuffle(self.order)
            batches.append([self.encoded[self.order.pop()] for _ in range(self.micro)])
        return batches


def _accumulate(model: Any, batches: list[list[tuple[list[int], list[int]]]], pad: int, device: str
                ) -> tuple[float, int, int]:
    """Forward and backward over one optimizer step's micro batches, the loss normalised by the step's assistant
    tokens (not per micro batch); returns the loss, the label tokens and all tokens seen."""
    import torch

    total_loss, n_label, tokens = 0.0, 0, 0
    label_total = sum(sum(1 for t in lab if t != -100) for b in batches for _, lab in b)
    for batch in batches:
        ids_t, lab_t, att_t = _pad(batch, pad, device)
        logits = model(input_ids=ids_t, attention_mask=att_t).logits[:, :-1].float()
        target = lab_t[:, 1:]
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)), target.reshape(-1),
                                                 ignore_index=-100, reduction="sum") / label_total
        loss.backward()
        total_loss += float(loss.detach())
        n_label += int((target != -100).sum())
        tokens += int(att_t.sum())
    return total_loss, n_label, tokens


def main(config_path: str) -> int:
    cfg = json.loads(Path(config_path).read_text(encoding="utf-8"))
    import torch

    torch.manual_seed(cfg["seed"])
    random.seed(cfg["seed"])
    if cfg.get("threads"):
        torch.set_num_threads(int(cfg["threads"]))
    device = "cuda" if cfg.get("device") == "cuda" else "cpu"
    out = Path(cfg["output_dir"])
    tok, model = _load_model(cfg, device)

    encoded = _encoded(tok, cfg["train_files"], cfg["sequence_length"])
    if not encoded:
        print("gate-local: error: no training row has an assistant token within sequence_length", flush=True)
        return 2
    print(f"gate-local: {len(encoded)} training rows", flush=True)
    val = _encoded(tok, cfg.get("val_files") or [], cfg["sequence_length"])
    if cfg.get("val_files"):
        if not val:
            print("gate-local: error: no validation row has an assistant token within sequence_length", flush=True)
            return 2
        print(f"gate-local: {len(val)} validation rows", flush=True)
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    micro, accum = cfg["micro_batch_size"], max(1, cfg["global_batch_size"] // cfg["micro_batch_size"])
    steps = cfg["max_steps"]
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=cfg["lr"],
                            weight_decay=cfg.get("weight_decay", 0.0), betas=(0.9, 0.95))
    lr_at = _lr_schedule(cfg)
    sampler = _Sampler(encoded, micro)
    every = cfg.get("ckpt_every_steps") or 0
    log_every = max(1, cfg.get("log_every_steps", 1))
    keep = cfg.get("ckpt_keep")  # absent from a plan written before pruning existed: keep everything
    saved: list[Path] = []
    tokens = 0
    t_log = time.perf_counter()

    def validate(step: int) -> None:
        if val:
            loss, n = _val_loss(model, val, micro, pad, device)
            print(f"[val] step {step} | epoch {sampler.epoch} | loss {loss:.4f} | num_label_tokens {n}", flush=True)

    for step in range(steps):
        for group in opt.param_groups:
            group["lr"] = lr_at(step)
        total_loss, n_label, step_tokens = _accumulate(model, sampler.draw(accum), pad, device)
        tokens += step_tokens
        grad_norm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.get("max_grad_norm", 1.0)))
        opt.step()
        opt.zero_grad(set_to_none=True)
        if not math.isfinite(total_loss):
            print(f"gate-local: error: loss is not finite at step {step + 1}", flush=True)
            return 3
        if (step + 1) % log_every == 0 or step + 1 == steps:
            now = time.perf_counter()
            tps = tokens / max(now - t_log, 1e-9)
            tokens, t_log = 0, now
            print(f"step {step + 1} | epoch {sampler.epoch} | loss {total_loss:.4f} | grad_norm {grad_norm:.4f} | "
                  f"lr {lr_at(step):.6g} | tps {tps:.1f} | num_label_tokens {n_label}", flush=True)
        if every and (step + 1) % every == 0 and step + 1 < steps:
            validate(step + 1)
            saved.append(out / f"checkpoint-{step + 1}")
            _save(model, tok, saved[-1])
            if keep is not None:
                _prune(saved, int(keep))
    validate(steps)
    final = out / "checkpoint-final"
    _save(model, tok, final)
    print(f"gate-local: saved {final}", flush=True)
    if keep is not None:
        _prune(saved, int(keep) - 1)  # the final checkpoint counts against `keep` and is never a candidate
    return 0


def _save(model: Any, tok: Any, path: Path) -> None:
    """Writes the checkpoint into a sibling and renames it into place, so a checkpoint directory is never half
    written. Weights stay in the training precision (the spec's dtype; a LoRA adapter in float32)."""
    import os
    import shutil

    tmp = path.with_name(f".{path.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    model.save_pretrained(tmp)  # a PEFT model writes only its adapter
    tok.save_pretrained(tmp)
    if path.exists():
        shutil.rmtree(path)
    os.replace(tmp, path)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
