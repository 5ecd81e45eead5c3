"""`gate train`: load the spec, write the runner's plan, optionally validate it with the trainer's own parsers, and
(unless --dry-run) launch, record and collect. Output only; the work is in `gate.train`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from gate.errors import GateError

VALIDATORS = {"nemo-automodel": "nemo_automodel_check.py", "ms-swift": "ms_swift_check.py"}


def validate_plan(runner: str, plan_dir: Path, python: str, timeout: float = 600) -> dict[str, object]:
    """Runs the runner's validator script under the trainer's Python; returns its JSON verdict."""
    return validate_plans(runner, [plan_dir], python, timeout)[0]


def validate_plans(runner: str, plan_dirs: list[Path], python: str, timeout: float = 600) -> list[dict[str, object]]:
    """Several plans in one trainer process (its imports take most of the time); one verdict per plan."""
    script = VALIDATORS.get(runner)
    if script is None:
        raise GateError(f"no plan validator for runner '{runner}'", field="--validate-with")
    import tempfile

    path = Path(__file__).resolve().parents[1] / "train" / "validators" / script
    try:
        with tempfile.TemporaryDirectory(prefix="gate-validate-") as cache:  # trainers cache datasets; not here
            proc = subprocess.run([python, str(path), *map(str, plan_dirs)], capture_output=True, text=True,
                                  timeout=timeout, env={"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
                                                        "TRANSFORMERS_OFFLINE": "1", "HF_HOME": cache,
                                                        "MODELSCOPE_CACHE": cache, "PATH": "/usr/bin:/bin",
                                                        "HOME": cache})
    except FileNotFoundError:
        raise GateError("trainer Python not found", file=python, field="--validate-with") from None
    except subprocess.TimeoutExpired:
        raise GateError(f"plan validation took longer than {timeout:.0f} s", file=python) from None
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith('{"ok"')]
    if len(lines) != len(plan_dirs):
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise GateError(f"plan validator gave no verdict: {tail}", file=python, field="--validate-with")
    return [json.loads(ln) for ln in lines]


def run_train_command(*, spec_path: str, runner: str, dry_run: bool, db: str | None, record: bool,
                      validate_with: str | None, quiet: bool, strict: bool = False) -> int:
    from gate.report.console import make_console
    from gate.train.plan_launch import TrainFailed, launch, write_plan
    from gate.train.runners import get_runner
    from gate.train.spec import load_spec

    console = make_console()
    spec = load_spec(spec_path)
    run = get_runner(runner)
    if dry_run:
        plan, plan_dir = write_plan(spec, run)
        if not quiet:
            console.print(f"[bold]plan[/bold] {runner} -> {plan_dir}")
            console.print(plan.shell(), soft_wrap=True, markup=False)
            for f in sorted(plan.files):
                console.print(f"  wrote {plan_dir / f}", markup=False)
            for n in plan.notes:
                console.print(f"  note: {n}", markup=False)
        if validate_with:
            verdict = validate_plan(runner, plan_dir, validate_with)
            for c in verdict.get("checks", []):  # type: ignore[union-attr]
                console.print(f"  ok  {c}", markup=False)
            # what was not checked is not "validated": say so on stderr, and --strict makes it a failure
            skipped = list(verdict.get("skipped", []))  # type: ignore[call-overload]
            warned = list(verdict.get("warnings", []))  # type: ignore[call-overload]
            for c in skipped:
                print(f"gate: warning: not validated: {c}", file=sys.stderr)
            for c in warned:
                print(f"gate: warning: {c}", file=sys.stderr)
            if not verdict.get("ok"):
                raise GateError(f"{runner} rejects the plan: {verdict.get('error')}", file=str(plan_dir))
            if strict and (skipped or warned):
                raise GateError(f"--strict: {len(skipped)} check(s) skipped and {len(warned)} warning(s) "
                                f"in {runner}'s validation", file=str(plan_dir))
            what = "validated" if not skipped else f"partly validated ({len(skipped)} check(s) skipped)"
            console.print(f"{what} with {runner}'s own parsers ({validate_with})", markup=False)
        return 0
    try:
        result = launch(spec, run, db=db, record=record)
    except TrainFailed as exc:
        print(f"gate: error: {exc}", file=sys.stderr)
        for line in exc.tail:
            print(f"  | {line}", file=sys.stderr)
        return 1
    train = [m for m in result.metrics if m["kind"] == "train"]
    if not quiet:
        first, last = (train[0], train[-1]) if train else ({}, {})
        console.print(f"[bold green]trained[/bold green] {spec.name} with {runner} in {result.seconds:.0f} s: "
                      f"{len(train)} metric rows, loss {first.get('loss')} -> {last.get('loss')}")
        console.print(f"  checkpoint {result.checkpoint} (MANIFEST.json sha256 {result.manifest_sha256[:12]})",
                      markup=False)
        console.print(f"  log {result.log_path}; run id {result.run_id}", markup=False)
    return 0
