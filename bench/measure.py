"""Run a command and measure its wall time and the peak RSS of its whole process tree (workers included)."""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass

import psutil


@dataclass
class Measured:
    seconds: float
    peak_rss_mb: float
    returncode: int
    stdout: str
    stderr: str


def run_measured(cmd: list[str], env: dict[str, str] | None = None, interval: float = 0.02,
                 timeout: float = 3600) -> Measured:
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    root = psutil.Process(proc.pid)
    peak = 0
    while proc.poll() is None:
        try:
            procs = [root, *root.children(recursive=True)]
            rss = 0
            for p in procs:
                try:
                    rss += p.memory_info().rss
                except psutil.Error:
                    pass
            peak = max(peak, rss)
        except psutil.Error:
            pass
        if time.perf_counter() - t0 > timeout:
            proc.kill()
        time.sleep(interval)
    out, err = proc.communicate()
    return Measured(time.perf_counter() - t0, peak / 2**20, proc.returncode, out, err)
