"""Step 7: a checkpoint is enough to resume: save, kill the process, resume in a clean one, compare the next step.

The saving process is killed with SIGKILL (no atexit, no flush) and the resuming process starts from a different
adapter init, so the only way the two next steps can agree is through what the checkpoint holds: weights,
optimizer moments, step and RNG state.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from gate.probe.result import Step, judged

TOL = 1e-6


def _child(mode: str, model_dir: Path, spec_path: str, batch: Path, ckpt: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "gate.probe._resume_child", mode, str(model_dir), spec_path, str(batch), str(ckpt),
            str(out)]


def step_resume(model_dir: Path, spec_path: str | None, batch_path: Path, work: Path, timeout: float = 300) -> Step:
    import torch

    ckpt, ref, res = work / "resume-ckpt", work / "resume-ref.pt", work / "resume-out.pt"
    spec_arg = spec_path or "-"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    t = time.perf_counter()
    log = work / "resume-save.log"  # a file, not a pipe: a chatty child must not block before it says READY
    with open(log, "w", encoding="utf-8") as err_fh:
        saver = subprocess.Popen(_child("save", model_dir, spec_arg, batch_path, ckpt, ref), stdout=subprocess.PIPE,
                                 stderr=err_fh, stdin=subprocess.PIPE, text=True, env=env)
        try:
            line = _read_ready(saver, timeout)
        finally:
            if saver.poll() is None:
                saver.send_signal(signal.SIGKILL)
            saver.wait()
    if line != "READY":
        err = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()
        return judged(7, "checkpoint, kill, resume", False, f"the saving process failed: {err[-1] if err else line}")
    killed = saver.returncode == -signal.SIGKILL
    resumed = subprocess.run(_child("resume", model_dir, spec_arg, batch_path, ckpt, res), capture_output=True,
                             text=True, timeout=timeout, env=env)
    if resumed.returncode != 0 or not res.exists():
        tail = (resumed.stdout + resumed.stderr).strip().splitlines()
        return judged(7, "checkpoint, kill, resume", False, f"the resuming process failed: {tail[-1] if tail else ''}")
    a: dict[str, Any] = torch.load(ref)
    b: dict[str, Any] = torch.load(res)
    loss_diff = abs(a["loss"] - b["loss"])
    diff = max(float((a["params"][n] - b["params"][n]).abs().max()) for n in a["params"])
    files = sorted(p.name for p in ckpt.iterdir())
    ok = killed and loss_diff <= TOL and diff <= TOL
    ev = (f"checkpoint at step 1 ({', '.join(files)}); saver killed by SIGKILL; clean process resumed step 2: "
          f"loss {b['loss']:.6f} vs {a['loss']:.6f} (|diff| {loss_diff:.1e}), max |param diff| {diff:.1e} "
          f"({time.perf_counter() - t:.1f}s)")
    return judged(7, "checkpoint, kill, resume", ok, ev, {"loss_saved_run": a["loss"], "loss_resumed": b["loss"],
                                                          "loss_abs_diff": loss_diff, "max_param_abs_diff": diff,
                                                          "killed": killed, "checkpoint_files": files})


def _read_ready(proc: subprocess.Popen[str], timeout: float) -> str:
    """The child's READY line, or '' if it exits or stalls first (a blocking readline with a watchdog)."""
    import threading

    box: list[str] = []
    th = threading.Thread(target=lambda: box.append(proc.stdout.readline().strip() if proc.stdout else ""),
                          daemon=True)
    th.start()
    th.join(timeout)
    return box[0] if box else ""
