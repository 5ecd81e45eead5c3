"""Checks a generated AutoModel recipe with NeMo AutoModel's own loaders, inside the venv that has it installed.

What it proves without a GPU: the CLI accepts the command line, the recipe name resolves, every typed section the
recipe reads (step_scheduler, lr_scheduler, optimizer, loss_fn, checkpoint) is built by AutoModel's own config classes
(an unknown or misspelt key raises there), the PEFT and backend configs instantiate, the model section's dtype resolves
with AutoModel's own `dtype_from_str` (as from_pretrained resolves it; the model is not loaded, its from_pretrained
needs CUDA), a multi-node launch parses with torchrun's own parser, and the ChatDataset encodes every training row (a
seeded sample of 1,000 plus every row kind above that) with the model's own tokenizer and chat template. What could not
be checked is listed under "skipped"; what AutoModel accepts but trains other than the spec asks, under "warnings".

Usage: python nemo_automodel_check.py PLAN_DIR [PLAN_DIR...]
  -> one stdout line per plan: {"ok": true, "checks": [...], "skipped": [...], "warnings": [...]}
"""

from __future__ import annotations

import json
import sys
import traceback
from pathlib import Path
from typing import Any

SAMPLE = 1000


def main(plan_dir: str) -> int:
    plan = json.loads((Path(plan_dir) / "plan.json").read_text())
    cmd = plan["command"]
    done: list[str] = []
    skipped: list[str] = []
    warnings: list[str] = []
    try:
        from nemo_automodel.cli.app import build_parser
        from nemo_automodel.cli.utils import resolve_recipe_name
        from nemo_automodel.components.config._arg_parser import parse_args_and_load_config
        from nemo_automodel.recipes._typed_config import RecipeConfig

        config = str(Path(plan_dir) / "automodel.yaml")
        if cmd[0] == "bash":  # multi-node: every node runs torchrun -m nemo_automodel.cli.app CONFIG
            import shlex

            from torch.distributed.run import get_args_parser

            script = Path(cmd[1]).read_text()
            line = next(ln for ln in script.splitlines() if ln.startswith("torchrun "))
            ns = get_args_parser().parse_args(
                shlex.split(line.replace("$NODE_RANK", "0").replace("$MASTER_ADDR", "localhost"))[1:])
            assert ns.module and ns.training_script == "nemo_automodel.cli.app", ns.training_script
            args, extra = build_parser().parse_known_args(ns.training_script_args)
            config = ns.training_script_args[0]
            done.append(f"torchrun(nnodes={ns.nnodes}, nproc_per_node={ns.nproc_per_node})")
        else:
            args, extra = build_parser().parse_known_args(cmd[1:])
            config = cmd[1]
        assert not extra, f"automodel CLI left arguments unparsed: {extra}"
        done.append("cli")
        cfg = parse_args_and_load_config(config, argv=[])
        done.append("yaml")
        target = resolve_recipe_name(cfg.get("recipe"))
        assert target.endswith("TrainFinetuneRecipeForNextTokenPrediction"), target
        done.append(f"recipe={target}")
        typed = RecipeConfig(cfg)
        for section in ("step_scheduler", "lr_scheduler", "optimizer", "loss_fn", "checkpoint"):
            obj = getattr(typed, section)
            assert obj is not None, f"{section} missing"
            done.append(f"{section}={type(obj).__name__}")
        ck = typed.checkpoint
        assert ck.enabled, "checkpointing disabled"
        done.append("checkpoint.enabled")
        if cfg.get("peft", None) is not None:
            peft = cfg.peft.instantiate()
            done.append(f"peft={type(peft).__name__}(dim={peft.dim}, targets={len(peft.target_modules)})")
        backend = cfg.model.backend.instantiate()
        done.append(f"backend={type(backend).__name__}")
        _model_dtype(cfg, done, warnings)
        tok_path = cfg.get("dataset.tokenizer.pretrained_model_name_or_path", None)
        if not (tok_path and Path(str(tok_path)).is_dir()):
            skipped.append(f"ChatDataset tokenization of the training rows (tokenizer {tok_path} is not on this "
                           "machine and the hub is not contacted)")
        else:
            ds = cfg.dataset.instantiate()
            done.append(_encode_rows(ds))
    except Exception as exc:  # report, do not crash: the caller turns this into one line
        print(traceback.format_exc(limit=3), file=sys.stderr)
        print(json.dumps({"ok": False, "checks": done, "skipped": skipped, "warnings": warnings,
                          "error": f"{type(exc).__name__}: {exc}"[:1000]}))
        return 1
    print(json.dumps({"ok": True, "checks": done, "skipped": skipped, "warnings": warnings}))
    return 0


def _model_dtype(cfg: Any, done: list[str], warnings: list[str]) -> None:
    """The precision from_pretrained will build the model in, resolved as it resolves it: `dtype` wins over
    `torch_dtype`, both go through dtype_from_str, and absent is "auto" (the checkpoint's dtype; bfloat16 for
    AutoModel's own model classes), which follows the checkpoint, not the spec."""
    import torch
    from nemo_automodel.shared.utils import dtype_from_str

    key = next((k for k in ("dtype", "torch_dtype") if cfg.get(f"model.{k}", None) is not None), None)
    raw = cfg.get(f"model.{key}", None) if key else None
    if raw is None or raw == "auto":
        warnings.append('the model section sets no dtype: AutoModel loads it "auto" (the checkpoint\'s dtype, '
                        "bfloat16 for its own model classes), not the spec's dtype")
        return
    resolved = dtype_from_str(raw)
    assert resolved.is_floating_point, f"model.{key}={raw} is not a floating-point dtype"
    done.append(f"model.{key}={resolved}")
    if resolved == torch.float16:
        warnings.append(f"model.{key}={resolved}: AutoModel 0.7 has no loss scaling, so float16 gradients underflow")


def _kind(row: dict) -> str:
    """A row's shape, for "every row kind is encoded": tool calls, several assistant turns, reasoning."""
    msgs = [m for m in row.get("messages") or [] if isinstance(m, dict)]
    parts = [name for name, hit in (
        ("tool_calls", any(m.get("tool_calls") for m in msgs)),
        ("multi_turn", sum(m.get("role") == "assistant" for m in msgs) > 1),
        ("reasoning", any(m.get("reasoning_content") for m in msgs))) if hit]
    return "+".join(parts) or "plain"


def _encode_rows(ds: object) -> str:
    """Every row through AutoModel's own ChatDataset (normalisation, chat template, answer-only mask), or above
    SAMPLE rows a seeded sample plus the first row of every kind: one failing row fails training when it is drawn."""
    import random

    n = len(ds)  # type: ignore[arg-type]
    rows = ds.dataset  # type: ignore[attr-defined]
    kinds = [_kind(rows[i]) for i in range(n)]
    idx = set(range(n)) if n <= SAMPLE else set(random.Random(1234).sample(range(n), SAMPLE))
    idx |= {kinds.index(k) for k in set(kinds)}
    failures: dict[str, list[int]] = {}
    no_loss: list[int] = []
    supervised = 0
    for i in sorted(idx):
        try:
            labels = ds[i].get("labels")  # type: ignore[index]
        except Exception as exc:
            failures.setdefault(f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}", []).append(i)
            continue
        n_sup = sum(1 for t in labels if t != -100) if labels is not None else 0
        supervised += n_sup
        if not n_sup:
            no_loss.append(i)
    if failures or no_loss:
        msgs = [f"{len(v)} row(s) raise {err} (rows {', '.join(map(str, v[:5]))}; kinds "
                f"{sorted({kinds[i] for i in v})})" for err, v in sorted(failures.items(), key=lambda kv: -len(kv[1]))]
        if no_loss:
            msgs.append(f"{len(no_loss)} row(s) have no supervised token (rows {', '.join(map(str, no_loss[:5]))})")
        if any("has no attribute 'items'" in e or "answer-only loss mask" in e for e in failures):
            # AutoModel 0.7 hands tool-call arguments to the template as JSON strings, and builds the loss mask from
            # prefix renders, which a template that drops earlier reasoning contradicts: an export can avoid both
            msgs.append("export the rows with `gate export --format nemo-automodel --tokenizer MODEL` (arguments "
                        "kept as objects with a chat template that reads them, reasoning the template does not render "
                        "left out) and plan the run from that export")
        raise ValueError(f"ChatDataset fails on {sum(map(len, failures.values())) + len(no_loss)} of {len(idx)} "
                         f"encoded rows: " + "; ".join(msgs))
    counts = {k: kinds.count(k) for k in sorted(set(kinds))}
    return (f"dataset={type(ds).__name__}(rows={n}, encoded={len(idx)}, kinds={counts}, "
            f"supervised_tokens={supervised})")


if __name__ == "__main__":
    # several plan directories in one process: the trainer's imports dominate the time
    sys.exit(max(main(d) for d in sys.argv[1:]))
