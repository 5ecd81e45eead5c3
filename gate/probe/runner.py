"""Chains the ten probe steps, skips what depends on a failed step, and decides the exit code.

An exception inside a step is that step's failure (the stack cannot do what the step asks: that is the finding),
while a `GateError` (no such model directory, a malformed spec or dataset) means the probe itself could not run.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gate.errors import ExitCode, GateError, InputError
from gate.probe.result import Status, Step

NAMES = {1: "pin revision and versions", 2: "verify shards and storage", 3: "config + tokenizer on meta",
         4: "trainable modules", 5: "forward/backward/optimizer step", 6: "finite loss, grad norm per path",
         7: "checkpoint, kill, resume", 8: "adapter save/reload/merge", 9: "base vs trained outputs",
         10: "torchrun 2 workers + sharded ckpt"}
# 7 and 10 train in their own processes: they need a loadable model and a usable spec, not step 5's result
_NEEDS = {2: {1}, 4: {3}, 5: {2, 3, 4}, 6: {5}, 7: {2, 3, 4}, 8: {5, 6}, 9: {5, 6}, 10: {2, 3, 4}}


@dataclass
class ProbeOptions:
    model_dir: Path
    spec_path: str | None = None
    data: str | None = None
    rows: int = 2
    max_tokens: int = 128
    steps: frozenset[int] = frozenset(NAMES)
    work_dir: Path | None = None
    nproc: int = 2


@dataclass
class ProbeReport:
    model: str
    spec: str | None
    steps: list[Step] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def exit_code(self) -> int:
        return int(ExitCode.GATE_FAILED if any(s.status == Status.FAIL for s in self.steps) else ExitCode.PASS)

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "lora_spec": self.spec, "passed": self.exit_code == 0,
                "exit_code": self.exit_code, "seconds": round(self.seconds, 2),
                "steps": [s.to_json() for s in self.steps]}


def parse_steps(text: str | None) -> frozenset[int]:
    """`1-4,7` -> {1,2,3,4,7}."""
    if not text:
        return frozenset(NAMES)
    out: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        try:
            lo, _, hi = part.partition("-")
            out.update(range(int(lo), int(hi or lo) + 1))
        except ValueError:
            raise GateError(f"not a step list: {text!r} (e.g. 1-4,7)", field="--steps") from None
    if not out or not out <= set(NAMES):
        raise GateError(f"steps are numbered 1-10: {text!r}", field="--steps")
    return frozenset(out)


def _closure(steps: frozenset[int]) -> set[int]:
    todo, seen = list(steps), set(steps)
    while todo:
        for n in _NEEDS.get(todo.pop(), set()):
            if n not in seen:
                seen.add(n)
                todo.append(n)
    return seen


def run_probe(opts: ProbeOptions, progress: Callable[[str], None] | None = None) -> ProbeReport:
    from gate.probe.model import quiet_libraries
    from gate.probe.spec import load_spec

    model_dir = opts.model_dir
    state: dict[str, Any] = {}
    if not model_dir.is_dir():
        raise InputError("model directory not found", file=str(model_dir))
    if not (model_dir / "config.json").is_file():
        raise InputError("no config.json: not a model directory", file=str(model_dir))
    try:
        json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"not valid JSON: {getattr(exc, 'msg', exc)}", file=str(model_dir / "config.json"),
                         line=getattr(exc, "lineno", None)) from None
    spec = load_spec(opts.spec_path) if opts.spec_path else None
    run = _closure(opts.steps)
    if run & {5, 6, 7, 8, 9, 10}:  # bad rows are a usage problem: found before any step runs
        from gate.probe.batch import DEFAULT_DATA, read_rows

        state["rows"] = read_rows(opts.data or DEFAULT_DATA, opts.rows)
    report = ProbeReport(model=str(model_dir), spec=opts.spec_path)
    t0 = time.perf_counter()
    if run - {1, 2}:
        quiet_libraries()
    results: dict[int, Step] = {}

    def ready(n: int) -> bool:
        if n not in run:
            return False
        blocked = [m for m in _NEEDS.get(n, set()) if m in results and not results[m].ok]
        if blocked:
            results[n] = Step(n, NAMES[n], Status.SKIP, f"not run: step {min(blocked)} did not pass")
            return False
        return True

    def do(n: int, fn: Callable[[], Step | tuple[Step, ...]]) -> None:
        if not ready(n):
            return
        if progress:
            progress(f"step {n}/10: {NAMES[n]}")
        t = time.perf_counter()
        try:
            out = fn()
        except GateError:
            raise
        except Exception as exc:  # the stack failing the step is the finding, reported on its row
            msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            out = Step(n, NAMES[n], Status.FAIL, f"{type(exc).__name__}: {msg[:400]}")
        for s in out if isinstance(out, tuple) else (out,):
            s.seconds = round(time.perf_counter() - t, 2)
            results[s.number] = s

    with _work_dir(opts.work_dir) as work:
        from gate.probe.meta_device import meta_model, step_meta
        from gate.probe.modules import step_modules
        from gate.probe.pin import step_pin
        from gate.probe.shards import step_shards

        do(1, lambda: step_pin(model_dir))

        def s3() -> Step:
            s, ctx = step_meta(model_dir)
            state.update(ctx)
            return s

        do(3, s3)
        do(4, lambda: step_modules(lambda: meta_model(state["config"]), spec))
        hint = int(results[4].details.get("trainable_params", 0)) if 4 in results else 0
        do(2, lambda: step_shards(model_dir, work, hint))
        _train_steps(opts, spec, state, work, do, ready, results)
    for n in sorted(NAMES):
        if n in opts.steps:
            report.steps.append(results.get(n) or Step(n, NAMES[n], Status.SKIP, "not run: a step it needs was "
                                                                                  "not run"))
    report.seconds = time.perf_counter() - t0
    return report


def _train_steps(opts: ProbeOptions, spec: Any, state: dict[str, Any], work: Path,
                 do: Callable[[int, Callable[[], Any]], None], ready: Callable[[int], bool],
                 results: dict[int, Step]) -> None:
    """Steps 7 and 10 mostly wait on their subprocesses, so they run in threads beside the in-process steps."""
    run = _closure(opts.steps)
    if not run & {5, 6, 7, 8, 9, 10}:
        return
    import torch

    from gate.probe.batch import encode
    from gate.probe.distributed import step_distributed
    from gate.probe.resume import step_resume

    if "tokenizer" not in state:
        return
    batch = encode(state["tokenizer"], state["rows"], opts.max_tokens)
    batch_path = work / "batch.pt"
    torch.save(batch, batch_path)

    background = {7: lambda: step_resume(opts.model_dir, opts.spec_path, batch_path, work),
                  10: lambda: step_distributed(opts.model_dir, opts.spec_path, batch_path, work, nproc=opts.nproc)}
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {n: pool.submit(fn) for n, fn in background.items() if ready(n)}
        _in_process(opts, spec, state, batch, work, do, results)
        for n, fut in futures.items():
            do(n, fut.result)


def _in_process(opts: ProbeOptions, spec: Any, state: dict[str, Any], batch: dict[str, Any], work: Path,
                do: Callable[[int, Callable[[], Any]], None], results: dict[int, Step]) -> None:
    from gate.probe.adapter import step_adapter
    from gate.probe.compare import step_compare
    from gate.probe.model import load_model
    from gate.probe.train import step_train

    def s56() -> tuple[Any, ...]:
        state["model"] = load_model(opts.model_dir, spec)
        s5, s6, extra = step_train(state["model"], batch)
        state.update(extra)
        return s5, s6

    do(5, s56)  # step 6 is measured on the same backward pass
    if 6 in _closure(opts.steps) and 6 not in results:
        results[6] = Step(6, NAMES[6], Status.SKIP, results[5].evidence if 5 in results else "not run")
    do(8, lambda: step_adapter(state["model"], spec, opts.model_dir, batch, work))

    @contextmanager
    def base() -> Iterator[Any]:
        model = state["model"]
        if spec is not None:
            with model.disable_adapter():
                yield model
        else:
            yield load_model(opts.model_dir, None)

    do(9, lambda: step_compare(state["model"], base, state["tokenizer"]))


@contextmanager
def _work_dir(path: Path | None) -> Iterator[Path]:
    """A given --work-dir is kept (its checkpoints are evidence); the default temporary one is removed."""
    if path is not None:
        path.mkdir(parents=True, exist_ok=True)
        yield path
        return
    tmp = Path(tempfile.mkdtemp(prefix="gate-probe-"))
    try:
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
