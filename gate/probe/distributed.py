"""Step 10: a short multi-worker run that exercises the parallel layout and the distributed checkpoint.

On CPU this is `torchrun --nproc-per-node 2` with gloo and FSDP2: the same collective, sharding and
torch.distributed.checkpoint code paths a GPU run uses, at toy size. The sharded checkpoint is loaded into a
copy with a different init, so a match proves the shards, not the process memory, carried the state.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from gate.probe.result import Step, judged

TOL = 1e-6
_RANK_LINE = re.compile(r"^\[rank(\d+)\]: ?(.*)$", re.M)
_ROOT_RANK = re.compile(r"Root Cause.*?^\s*rank\s*:\s*(\d+)", re.M | re.S)
_SIGNALLED = re.compile(r"Signal (\d+) \((SIG\w+)\) received by PID")
_TERMINATE = re.compile(r"terminate called after throwing an instance of '([^']+)'\s*\n\s*what\(\):\s*(.+)")
_FATAL = re.compile(r"Fatal Python error: (\w+)(?:.*?\n(?:Current )?[Tt]hread [^\n]*\(most recent call first\):"
                    r"\n\s*File \"([^\"]+)\", line (\d+) in (\S+))?", re.S)


def _exception_line(lines: list[str]) -> str | None:
    """The exception line of the last traceback in `lines`: the first unindented line after its header (a message
    may run on over more lines; an exception may be dotted, e.g. `_pickle.UnpicklingError`, or have no message)."""
    starts = [i for i, ln in enumerate(lines) if ln.startswith("Traceback (most recent call last):")]
    for ln in lines[starts[-1] + 1:] if starts else []:
        if ln.strip() and not ln[0].isspace():
            return ln.strip()
    return None


def torchrun_cause(output: str) -> str:
    """Why a torchrun run failed, in one line: the exception line of the failing rank (torchrun's "Root Cause" rank,
    else the first rank that said anything), not torchrun's own ChildFailedError and "=====" banner that end the
    output. Without rank-prefixed lines, the first traceback that is not torchrun's own."""
    if signalled(output) and (native := _native_cause(_RANK_LINE.sub(r"\2", output))):
        return native  # the first rank to fail died of a signal: the others' errors (connection reset) follow it
    by_rank: dict[int, list[str]] = {}
    for rank, line in _RANK_LINE.findall(output):
        by_rank.setdefault(int(rank), []).append(line)
    root = _ROOT_RANK.search(output)
    order = ([int(root.group(1))] if root else []) + sorted(by_rank)
    for rank in order:
        cause = _exception_line(by_rank.get(rank, []))
        if cause:
            return f"rank {rank}: {cause}"
    plain = [ln for ln in output.splitlines() if not _RANK_LINE.match(ln)]
    blocks = "\n".join(plain).split("Traceback (most recent call last):")[1:]
    for block in blocks:
        cause = _exception_line(["Traceback (most recent call last):", *block.splitlines()[1:]])
        if cause and "ChildFailedError" not in cause:
            return cause
    native = _native_cause(_RANK_LINE.sub(r"\2", output))
    if native:
        return native
    lines = [ln.strip() for ln in plain if ln.strip() and not set(ln.strip()) <= set("=-")]
    return lines[-1] if lines else ""


def _native_cause(output: str) -> str | None:
    """Why a rank died without a Python exception: the C++ exception that ended it (gloo's "Connection closed by
    peer" is one), else Python's fault handler line with the frame it died in (PYTHONFAULTHANDLER is set for the
    ranks), with the signal torchrun saw."""
    signal = signalled(output)
    tail = f" ({signal})" if signal else ""
    if m := _TERMINATE.search(output):
        return f"{m.group(1)}: {m.group(2).strip()}{tail}"
    if m := _FATAL.search(output):
        where = f" in {m.group(4)} ({Path(m.group(2)).name}:{m.group(3)})" if m.group(2) else ""
        return f"Fatal Python error: {m.group(1)}{where}{tail}"
    return None


def signalled(output: str) -> str | None:
    """The signal the first rank to fail died of (torchrun's "Root Cause" entry, "Signal 6 (SIGABRT) received by
    PID ..."; the others are then sent SIGTERM), None when it did not die of a signal."""
    root = output.rfind("Root Cause")
    m = _SIGNALLED.search(output[root:] if root >= 0 else output)
    return m.group(2) if m else None


def run_torchrun(cmd: list[str], env: dict[str, str], timeout: float) -> tuple[subprocess.CompletedProcess[str],
                                                                                str | None]:
    """Runs torchrun once more when a rank was killed by a signal (an abort in gloo's transport, the OOM killer):
    such a death says nothing about the model and may not come again; a Python exception is never run again, the
    same code would raise it again. Returns the last run and, when there was a second, why the first one died, so
    the step reports it as a warning instead of hiding it."""
    env = {**env, "PYTHONFAULTHANDLER": "1"}  # a rank killed by a signal names its Python frame
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    output = proc.stderr + "\n" + proc.stdout
    if proc.returncode == 0 or signalled(output) is None:
        return proc, None
    first = torchrun_cause(output)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env), first


def _every_rank_a_row(batch_path: Path, work: Path, nproc: int) -> tuple[Path, str]:
    """The batch the workers split (`rows[rank::world]`), with rows repeated when there are fewer than workers: with
    `--rows 1`, rank 1 of 2 got an empty batch and died on a reshape of 0 elements, which said nothing about the
    model. Returns the path to use and a note for the evidence ("" when the batch was large enough)."""
    import torch

    batch = torch.load(batch_path)
    n = len(batch["input_ids"])
    if n >= nproc:
        return batch_path, ""
    idx = torch.arange(nproc) % n
    padded = work / "dist-batch.pt"
    torch.save({k: v[idx] for k, v in batch.items()}, padded)
    return padded, f"; the batch has {n} row(s) for {nproc} workers: repeated so that every rank trains on one"


def step_distributed(model_dir: Path, spec_path: str | None, batch_path: Path, work: Path, nproc: int = 2,
                     timeout: float = 300) -> Step:
    ckpt, out = work / "dcp-ckpt", work / "dist-result.json"
    batch_path, note = _every_rank_a_row(batch_path, work, nproc)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(nproc), "-m",
           "gate.probe._dist_worker", str(model_dir), spec_path or "-", str(batch_path), str(ckpt), str(out)]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    t = time.perf_counter()
    try:
        proc, first = run_torchrun(cmd, env, timeout)
    except subprocess.TimeoutExpired:
        return judged(10, "torchrun 2 workers + sharded ckpt", False, f"torchrun did not finish in {timeout:.0f}s")
    secs = time.perf_counter() - t
    again = [f"torchrun ran a second time: a rank of the first run died of a signal: {first[:300]}"] if first else []
    if proc.returncode != 0 or not out.exists():
        tail = torchrun_cause(proc.stderr + "\n" + proc.stdout)
        return judged(10, "torchrun 2 workers + sharded ckpt", False,
                      f"torchrun exited {proc.returncode}: {tail[:300]}", warnings=again)
    r = json.loads(out.read_text(encoding="utf-8"))
    shards = [f for f in r["files"] if f.endswith(".distcp")]
    ok = r["max_param_abs_diff"] <= TOL and len(shards) >= nproc and r["sharded_tensors"] > 0
    ev = (f"torchrun --nproc-per-node {nproc}, gloo, {r['strategy']}: losses "
          f"{', '.join(f'{x:.4f}' for x in r['losses'])}; {r['sharded_tensors']}/{r['trainable_tensors']} trainable "
          f"tensors sharded; DCP checkpoint {len(shards)} shards + .metadata, reloaded into a fresh init: max |diff| "
          f"{r['max_param_abs_diff']:.1e} ({secs:.1f}s){note}")
    return judged(10, "torchrun 2 workers + sharded ckpt", ok, ev, r, warnings=again)
