"""Checks generated ms-swift arguments with ms-swift's own argument classes, inside the venv that has it installed.

`swift sft` parses its command line with HfArgumentParser over `SftArguments` and raises on any argument left over
(`swift/pipelines/base.py`); this script builds the same parser and parses the generated arguments at the argparse
level, which catches unknown or renamed names (3.x `--train_type`) and bad choices without loading a model. The
export command is parsed against `ExportArguments`, Megatron arguments against `MegatronSftArguments` when
megatron-core is importable, and the training files are loaded with ms-swift's dataset loader to prove the data format.

Usage: python ms_swift_check.py PLAN_DIR [PLAN_DIR...]   -> one stdout line per plan: {"ok": true, "checks": [...]}
"""

from __future__ import annotations

import json
import shlex
import sys
import traceback
from pathlib import Path
from typing import Any


def _parse(cls: Any, argv: list[str]) -> Any:
    from swift.utils.utils import _patch_get_type_hints
    from transformers import HfArgumentParser

    with _patch_get_type_hints():
        parser = HfArgumentParser([cls])
    ns, unknown = parser.parse_known_args(argv)
    if unknown:
        raise ValueError(f"remaining_argv: {unknown}")
    return ns


def main(plan_dir: str) -> int:
    pdir = Path(plan_dir)
    done: list[str] = []
    try:
        args_file = next(pdir.glob("*_sft.args.json"))
        spec = json.loads(args_file.read_text())
        program, argv = spec["program"], spec["args"]
        import swift

        done.append(f"ms-swift {swift.__version__}")
        if program[0] == "megatron":
            try:
                from swift.megatron.arguments import MegatronSftArguments
            except ImportError as exc:  # megatron-core / transformer-engine are GPU stacks
                print(json.dumps({"ok": True, "checks": done,
                                  "skipped": [f"megatron sft arguments (megatron stack not importable: {exc})"]}))
                return 0
            ns = _parse(MegatronSftArguments, argv)
            done.append("megatron sft arguments")
        else:
            from swift.arguments import SftArguments

            ns = _parse(SftArguments, argv)
            done.append("swift sft arguments")
        done.append(f"tuner_type={ns.tuner_type}")
        if getattr(ns, "target_parameters", None):
            done.append(f"target_parameters={ns.target_parameters}")
        export = pdir / "export.sh"
        if export.is_file() and program[0] == "swift":
            from swift.arguments import ExportArguments

            line = next(ln for ln in export.read_text().splitlines() if ln.startswith("swift export"))
            ex = _parse(ExportArguments, [a.replace('"$CKPT"', "ckpt") for a in shlex.split(line)[2:]])
            assert ex.merge_lora, "export does not merge"
            done.append("swift export --merge_lora arguments")
        from swift.dataset import load_dataset

        train, _ = load_dataset(list(ns.dataset), use_hf=True, load_from_cache_file=False)
        first = train[0]
        assert first.get("messages"), "no messages after ms-swift preprocessing"
        done.append(f"dataset rows={len(train)} roles={[m['role'] for m in first['messages']]}")
    except Exception as exc:
        print(traceback.format_exc(limit=4), file=sys.stderr)
        print(json.dumps({"ok": False, "checks": done, "error": f"{type(exc).__name__}: {exc}"[:500]}))
        return 1
    print(json.dumps({"ok": True, "checks": done}))
    return 0


if __name__ == "__main__":
    # several plan directories in one process: the trainer's imports dominate the time
    sys.exit(max(main(d) for d in sys.argv[1:]))
