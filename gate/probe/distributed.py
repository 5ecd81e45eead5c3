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
_CAUSE = re.compile(r"^(?:\[rank\d+\]: )?(\w+(?:Error|Exception): .+)$", re.M)


def step_distributed(model_dir: Path, spec_path: str | None, batch_path: Path, work: Path, nproc: int = 2,
                     timeout: float = 300) -> Step:
    ckpt, out = work / "dcp-ckpt", work / "dist-result.json"
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
        causes = _CAUSE.findall(proc.stderr + proc.stdout)
        tail = causes[-1] if causes else (proc.stderr.strip().splitlines() or [""])[-1]
        return judged(10, "torchrun 2 workers + sharded ckpt", False,
                      f"torchrun exited {proc.returncode}: {tail[:300]}")
    r = json.loads(out.read_text(encoding="utf-8"))
    shards = [f for f in r["files"] if f.endswith(".distcp")]
    ok = r["max_param_abs_diff"] <= TOL and len(shards) >= nproc and r["sharded_tensors"] > 0
    ev = (f"torchrun --nproc-per-node {nproc}, gloo, {r['strategy']}: losses "
          f"{', '.join(f'{x:.4f}' for x in r['losses'])}; {r['sharded_tensors']}/{r['trainable_tensors']} trainable "
          f"tensors sharded; DCP checkpoint {len(shards)} shards + .metadata, reloaded into a fresh init: max |diff| "
          f"{r['max_param_abs_diff']:.1e} ({secs:.1f}s)")
    return judged(10, "torchrun 2 workers + sharded ckpt", ok, ev, r)
