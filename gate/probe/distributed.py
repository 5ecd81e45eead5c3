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
    lines = [ln.strip() for ln in plain if ln.strip() and not set(ln.strip()) <= set("=-")]
    return lines[-1] if lines else ""


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
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return judged(10, "torchrun 2 workers + sharded ckpt", False, f"torchrun did not finish in {timeout:.0f}s")
    secs = time.perf_counter() - t
    if proc.returncode != 0 or not out.exists():
        tail = torchrun_cause(proc.stderr + "\n" + proc.stdout)
        return judged(10, "torchrun 2 workers + sharded ckpt", False,
                      f"torchrun exited {proc.returncode}: {tail[:300]}")
    r = json.loads(out.read_text(encoding="utf-8"))
    shards = [f for f in r["files"] if f.endswith(".distcp")]
    ok = r["max_param_abs_diff"] <= TOL and len(shards) >= nproc and r["sharded_tensors"] > 0
    ev = (f"torchrun --nproc-per-node {nproc}, gloo, {r['strategy']}: losses "
          f"{', '.join(f'{x:.4f}' for x in r['losses'])}; {r['sharded_tensors']}/{r['trainable_tensors']} trainable "
          f"tensors sharded; DCP checkpoint {len(shards)} shards + .metadata, reloaded into a fresh init: max |diff| "
          f"{r['max_param_abs_diff']:.1e} ({secs:.1f}s){note}")
    return judged(10, "torchrun 2 workers + sharded ckpt", ok, ev, r)
