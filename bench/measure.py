"""Run a command and measure its wall time and the peak memory of its whole process tree (workers included).

Two figures: the sum of RSS (counts pages shared between the parent and its forked workers once per process,
so it overstates) and the sum of PSS (shares each page among the processes mapping it: the memory the tree
really holds).
"""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass

import psutil


@dataclass
class Measured:
    seconds: float
    peak_rss_mb: float
    peak_pss_mb: float
    returncode: int
    stdout: str
    stderr: str


def run_measured(cmd: list[str], env: dict[str, str] | None = None, interval: float = 0.02,
                 timeout: float = 3600, monitor: bool = True) -> Measured:
    """`monitor=False` times the command alone: reading every process's smaps every 20 ms costs CPU, and on two
    cores it slows a tool with worker processes more than a single-process one (peaks are then 0)."""
    t0 = time.perf_counter()
    if not monitor:
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout, check=False)
        return Measured(time.perf_counter() - t0, 0.0, 0.0, done.returncode, done.stdout, done.stderr)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    root = psutil.Process(proc.pid)
    peak = peak_pss = 0
    while proc.poll() is None:
        try:
            procs = [root, *root.children(recursive=True)]
            rss = pss = 0
            for p in procs:
                try:
                    info = p.memory_full_info()
                    rss += info.rss
                    pss += getattr(info, "pss", info.rss)
                except psutil.Error:
                    pass
            peak = max(peak, rss)
            peak_pss = max(peak_pss, pss)
        except psutil.Error:
            pass
        if time.perf_counter() - t0 > timeout:
            proc.kill()
        time.sleep(interval)
    out, err = proc.communicate()
    return Measured(time.perf_counter() - t0, peak / 2**20, peak_pss / 2**20, proc.returncode, out, err)
