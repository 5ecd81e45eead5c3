"""Benchmark: `gate check` (contract + exact duplicates) against a plain great-expectations validation.

Side by side in one run, on data from the fixture generator:
  1. gate on a 200k-row triage dataset: rows/s and peak RSS of the whole process tree (workers included);
  2. gate and the great-expectations peer on the same first N rows (the peer's built-in JSON Schema
     expectation validates ~150 rows/s, so it gets a prefix): the throughput ratio;
  3. gate on a ~2 GB file: peak RSS stays flat (the peer would hold the whole file in pandas). The big file is
     tool-use data (~3 KB rows): triage ids have six digits, so 1.6M triage rows would overflow them.
Writes bench/results/check_throughput.{json,md}.

    .venv/bin/python bench/check_throughput.py [--rows 200000] [--peer-rows 20000] [--big-gb 2]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.measure import run_measured  # noqa: E402

PY = sys.executable
CONTRACT = str(ROOT / "contracts" / "triage.yaml")


def generate(rows: int, out: Path, kind: str = "triage") -> Path:
    if not (out / "train.jsonl").exists():
        subprocess.run([PY, str(ROOT / "fixtures" / "generate.py"), "--scale", str(rows), "--kind", kind,
                        "--near-dup-rate", "0", "--out", str(out)], check=True)
    return out


def prefix(src: Path, rows: int, out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    target = out / "train.jsonl"
    if not target.exists():
        with open(src / "train.jsonl", "rb") as fh, open(target, "wb") as dst:
            for i, line in enumerate(fh):
                if i >= rows:
                    break
                dst.write(line)
    return out


def gate_check(dataset: Path, contract: str = CONTRACT) -> dict:
    m = run_measured([PY, "-m", "gate", "check", str(dataset), "--contract", contract, "--checks",
                      "contract,exact_duplicate", "--no-db", "--report-dir", str(dataset.parent / "report"),
                      "--quiet"], env={**os.environ, "CI": "true"})
    if m.returncode not in (0, 100):
        raise SystemExit(f"gate check failed: {m.stderr}")
    report = json.loads((dataset.parent / "report" / "report.json").read_text())
    rows = sum(s["rows"] for s in report["dataset"]["splits"])
    return {"rows": rows, "seconds": round(m.seconds, 2), "rows_per_s": round(rows / m.seconds),
            "peak_rss_mb": round(m.peak_rss_mb), "peak_pss_mb": round(m.peak_pss_mb), "verdict": report["verdict"],
            "bytes": sum(s["bytes"] for s in report["dataset"]["splits"])}


def gx_peer(dataset: Path) -> dict:
    m = run_measured([PY, str(ROOT / "bench" / "peers" / "gx_plain.py"), str(dataset / "train.jsonl"), CONTRACT])
    if m.returncode != 0:
        raise SystemExit(f"peer failed: {m.stderr[-2000:]}")
    out = json.loads(m.stdout.strip().splitlines()[-1])
    return {"rows": out["rows"], "seconds": round(m.seconds, 2), "rows_per_s": round(out["rows"] / m.seconds),
            "peak_rss_mb": round(m.peak_rss_mb), "peak_pss_mb": round(m.peak_pss_mb), "success": out["success"]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--peer-rows", type=int, default=20_000)
    ap.add_argument("--big-gb", type=float, default=2.0)
    ap.add_argument("--work", type=Path, default=ROOT / "bench" / "data")
    args = ap.parse_args()
    work = args.work
    full = generate(args.rows, work / f"triage-{args.rows}" / "data")
    results: dict = {"benchmark": "check_throughput", "date": datetime.now(UTC).isoformat(timespec="seconds"),
                     "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                                 "platform": platform.platform()}}
    results["gate_full"] = gate_check(full)
    small = prefix(full, args.peer_rows, work / f"triage-prefix-{args.peer_rows}" / "data")
    results["gate_prefix"] = gate_check(small)
    results["gx_prefix"] = gx_peer(small)
    results["ratio_rows_per_s_gate_over_gx"] = round(results["gate_prefix"]["rows_per_s"]
                                                     / results["gx_prefix"]["rows_per_s"], 1)
    if args.big_gb > 0:
        probe = generate(2000, work / "tool-use-2000" / "data", "tool-use")
        bytes_per_row = (probe / "train.jsonl").stat().st_size / 2000
        big_rows = int(args.big_gb * 2**30 / bytes_per_row)
        big = generate(big_rows, work / f"tool-use-{big_rows}" / "data", "tool-use")
        results["gate_big"] = gate_check(big, str(ROOT / "contracts" / "tool-use.yaml"))
    results["targets"] = {"rows_per_s_min": 20_000, "peak_rss_mb_max_on_2gb": 1024,
                          "met_rows_per_s": results["gate_full"]["rows_per_s"] >= 20_000,
                          "met_rss": 0 < results.get("gate_big", {}).get("peak_rss_mb", 0) < 1024}
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "check_throughput.json").write_text(json.dumps(results, indent=2) + "\n")
    md = ["# gate check vs great-expectations (contract + exact duplicates)", "",
          f"{results['date']}, {os.cpu_count()} CPUs, Python {platform.python_version()}. "
          "Peak memory of the whole process tree (workers included): the sum of RSS (shared pages counted once "
          "per process, so it overstates) and the sum of PSS (what the tree really holds).", "",
          "| run | rows | seconds | rows/s | peak RSS MB | peak PSS MB |", "|---|---:|---:|---:|---:|---:|"]
    for key, label in (("gate_full", "gate, full dataset"), ("gate_prefix", "gate, prefix"),
                       ("gx_prefix", "great-expectations (plain), same prefix"), ("gate_big", "gate, ~2 GB file")):
        if key in results:
            r = results[key]
            md.append(f"| {label} | {r['rows']:,} | {r['seconds']} | {r['rows_per_s']:,} | {r['peak_rss_mb']:,} | "
                      f"{r['peak_pss_mb']:,} |")
    ratio = results["ratio_rows_per_s_gate_over_gx"]
    md += ["", f"gate / great-expectations throughput on the same rows: **{ratio}x**.",
           f"Targets: >= 20,000 rows/s ({'met' if results['targets']['met_rows_per_s'] else 'NOT met'}); "
           f"peak RSS < 1 GB on 2 GB ({'met' if results['targets']['met_rss'] else 'NOT met or not run'}).", ""]
    (out / "check_throughput.md").write_text("\n".join(md))
    print("\n".join(md))


if __name__ == "__main__":
    main()
