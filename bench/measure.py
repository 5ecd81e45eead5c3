"""Run a command and measure its wall time and the peak memory of its whole process tree (workers included).

Two figures: the sum of RSS (counts pages shared between the parent and its forked workers once per process,
so it overstates) and the sum of PSS (shares each page among the processes mapping it: the memory the tree
really holds).
"""

from __future__ import annotations

import os
import resource
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
#: The environment a benchmarked `gate` command runs in: CI's, offline (no hub, no GX analytics, no public-suffix
#: list download), so no network wait enters a figure.
GATE_ENV = {**os.environ, "CI": "true", "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
            "GX_ANALYTICS_ENABLED": "false", "TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS": "",
            "TLDEXTRACT_CACHE": str(ROOT / ".cache" / "tld")}


def git_uncompressed(repo: Path, *args: str) -> None:
    """git in a benchmark repository without zlib: committing and reading back a 650 MB blob stays a copy, as on a
    real CI runner's cache, instead of minutes of compression in the figures."""
    subprocess.run(["git", "-C", str(repo), "-c", "core.compression=0", "-c", "core.looseCompression=0", *args],
                   check=True, capture_output=True)


@dataclass
class Measured:
    seconds: float
    peak_rss_mb: float
    peak_pss_mb: float
    returncode: int
    stdout: str
    stderr: str


def run_measured(cmd: list[str], env: dict[str, str] | None = None, interval: float = 0.02,
                 timeout: float = 3600, monitor: bool = True, cwd: str | Path | None = None) -> Measured:
    """`monitor=False` times the command alone: reading every process's smaps every 20 ms costs CPU, and on two
    cores it slows a tool with worker processes more than a single-process one (peaks are then 0)."""
    t0 = time.perf_counter()
    if not monitor:
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout, check=False, cwd=cwd)
        return Measured(time.perf_counter() - t0, 0.0, 0.0, done.returncode, done.stdout, done.stderr)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd)
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


def cpu_seconds(include_self: bool = False) -> float:
    """User + system CPU seconds of this process's finished children (and of the process itself with
    `include_self`). On a shared machine wall time mostly measures the neighbours; CPU time is what a run costs.
    Children only for a measured command: the sampler's own polling is not the command's cost."""
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = c.ru_utime + c.ru_stime
    if include_self:
        s = resource.getrusage(resource.RUSAGE_SELF)
        total += s.ru_utime + s.ru_stime
    return total


def measure_command(name: str, cmd: list[str], env: dict[str, str] | None = None, *, cwd: str | Path | None = None,
                    rows: int | None = None, timeout: float = 7200) -> dict:
    """One benchmarked `gate` command: wall s, CPU s of its process tree, peak RSS and PSS of the tree; exits the
    benchmark on any exit code but 0 (pass) and 100 (gate failed), and prints the figures as it goes."""
    before = cpu_seconds()
    m = run_measured(cmd, env=env, timeout=timeout, cwd=cwd)
    cpu = cpu_seconds() - before
    if m.returncode not in (0, 100):
        raise SystemExit(f"{name} failed ({m.returncode}): {m.stderr[-2000:]}")
    out = {"seconds": round(m.seconds, 2), "cpu_s": round(cpu, 2), "peak_rss_mb": round(m.peak_rss_mb),
           "peak_pss_mb": round(m.peak_pss_mb), "exit_code": m.returncode}
    if rows:
        out["rows"] = rows
        out["rows_per_s"] = round(rows / m.seconds)
    print(f"{name}: {out}", flush=True)
    return out


def generated_triage_lines(gen: Path, rows: int) -> list[bytes]:
    """`rows` triage rows from the fixture generator (fixtures/generate.py, deterministic), generated once into
    `gen/train.jsonl` and reused by later runs; their lines, newlines kept."""
    import sys

    if not (gen / "train.jsonl").is_file():
        subprocess.run([sys.executable, str(ROOT / "fixtures" / "generate.py"), "--scale", str(rows), "--kind",
                        "triage", "--out", str(gen)], check=True)
    lines = (gen / "train.jsonl").read_bytes().splitlines(keepends=True)
    assert len(lines) == rows, len(lines)
    return lines


def base_repository(repo: Path, train: bytes) -> Path:
    """A fresh git repository at `repo` (branch main) whose first commit, "base", holds `train` as
    data/train.jsonl: the target branch a benchmarked pull request changes. Returns the data file."""
    import shutil

    shutil.rmtree(repo, ignore_errors=True)
    (repo / "data").mkdir(parents=True)
    git_uncompressed(repo, "init", "-q", "-b", "main")
    git_uncompressed(repo, "config", "user.email", "bench@example.org")
    git_uncompressed(repo, "config", "user.name", "bench")
    data = repo / "data" / "train.jsonl"
    data.write_bytes(train)
    git_uncompressed(repo, "add", "-A")
    git_uncompressed(repo, "commit", "-qm", "base")
    return data
