"""Checks a generated AutoModel recipe with NeMo AutoModel's own loaders, inside the venv that has it installed.

What it proves without a GPU: the CLI accepts the command line, the recipe name resolves, every typed section the
recipe reads (step_scheduler, lr_scheduler, optimizer, loss_fn, checkpoint) is built by AutoModel's own config classes
(an unknown or misspelt key raises there), the PEFT and backend configs instantiate, and the ChatDataset tokenizes the
training file with the model's own tokenizer and chat template.

Usage: python nemo_automodel_check.py PLAN_DIR [PLAN_DIR...]
  -> one stdout line per plan: {"ok": true, "checks": [...]}
"""

from __future__ import annotations

import json
import sys
import traceback
from pathlib import Path


def main(plan_dir: str) -> int:
    plan = json.loads((Path(plan_dir) / "plan.json").read_text())
    cmd = plan["command"]
    done: list[str] = []
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
        tok_path = cfg.get("dataset.tokenizer.pretrained_model_name_or_path", None)
        if not (tok_path and Path(str(tok_path)).is_dir()):
            done.append("dataset=skipped (tokenizer not local)")
            print(json.dumps({"ok": True, "checks": done}))
            return 0
        ds = cfg.dataset.instantiate()
        first = ds[0]
        labels = first.get("labels")
        n_sup = sum(1 for t in labels if t != -100) if labels is not None else None
        assert n_sup, "the first row has no supervised token"
        done.append(f"dataset={type(ds).__name__}(rows={len(ds)}, first_row_supervised_tokens={n_sup})")
    except Exception as exc:  # report, do not crash: the caller turns this into one line
        print(traceback.format_exc(limit=3), file=sys.stderr)
        print(json.dumps({"ok": False, "checks": done, "error": f"{type(exc).__name__}: {exc}"[:500]}))
        return 1
    print(json.dumps({"ok": True, "checks": done}))
    return 0


if __name__ == "__main__":
    # several plan directories in one process: the trainer's imports dominate the time
    sys.exit(max(main(d) for d in sys.argv[1:]))
