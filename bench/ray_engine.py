"""Benchmark: the Ray engine on a 2-worker local Ray cluster vs the local engine (2 forked workers), same data.

One run each, in one process, on generated triage rows: every check except PII (measured separately on a
prefix, it is the heaviest per-row step and dominates any projection). Ray's fixed start-up (starting a local
head and its workers) is reported apart from the check itself. Per-worker throughput (rows/s and an estimate of
tokens/s at 4 characters per token) feeds the projection in the README.
Writes bench/results/ray_engine.{json,md}.

    .venv/bin/python bench/ray_engine.py [--rows 20000] [--pii-rows 500]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
os.environ.setdefault("TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS", "")
os.environ.setdefault("TLDEXTRACT_CACHE", str(ROOT / ".cache" / "tld"))
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")


def generate(rows: int, out: Path) -> Path:
    if not (out / "train.jsonl").is_file():
        subprocess.run([sys.executable, str(ROOT / "fixtures" / "generate.py"), "--scale", str(rows), "--kind",
                        "triage", "--out", str(out)], check=True)
    return out


def one(dataset: Path, contract, checks: list[str], engine: str) -> dict:
    from gate.data.runner import run_checks

    t0 = time.perf_counter()
    run = run_checks(str(dataset), contract, checks=checks, workers=2, progress=False, engine=engine)
    wall = time.perf_counter() - t0
    startup = run.timings.get("ray_startup", 0.0)
    return {"engine": engine, "seconds": round(wall, 2), "startup_s": round(startup, 2),
            "seconds_without_startup": round(wall - startup, 2), "rows": run.rows,
            "map_cpu_s": run.timings.get("map_cpu"), "findings": {r.name: len(r.findings) for r in run.results},
            "statuses": {r.name: r.status for r in run.results}}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=20_000)
    ap.add_argument("--pii-rows", type=int, default=500)
    args = ap.parse_args()
    from gate.contract import load_contract
    from gate.data.registry import CHECKS

    contract = load_contract(ROOT / "contracts" / "triage.yaml")
    data = generate(args.rows, ROOT / "bench" / "data" / f"ray-{args.rows}")
    chars = sum(len(line) for line in (data / "train.jsonl").read_text().splitlines())
    checks = [n for n in CHECKS if n != "pii"]
    pii_dir = ROOT / "bench" / "data" / f"ray-pii-{args.pii_rows}"
    pii_dir.mkdir(parents=True, exist_ok=True)
    head = (data / "train.jsonl").read_text().splitlines(keepends=True)[: args.pii_rows]
    (pii_dir / "train.jsonl").write_text("".join(head))
    one(pii_dir, contract, checks, "local")  # not reported: the driver's imports (GX, ...) are paid once, up front
    local = one(data, contract, checks, "local")
    ray = one(data, contract, checks, "ray")
    assert local["findings"] == ray["findings"] and local["statuses"] == ray["statuses"]
    pii_chars = sum(len(line) for line in head)
    pii = one(pii_dir, contract, ["pii"], "ray")

    per_worker_rows = args.rows / (ray["map_cpu_s"] or 1)
    tok_per_row = chars / 4 / args.rows
    pii_worker_rows = args.pii_rows / (pii["map_cpu_s"] or 1)
    res = {"benchmark": "ray_engine", "date": datetime.now(UTC).isoformat(timespec="seconds"),
           "cpus": os.cpu_count(), "python": platform.python_version(), "rows": args.rows, "checks": checks,
           "local": local, "ray": ray, "pii_on_ray": pii, "identical_findings": True,
           "ratio_ray_over_local_without_startup": round(ray["seconds_without_startup"] / local["seconds"], 2),
           "per_worker": {"rows_per_s_all_but_pii": round(per_worker_rows), "est_tokens_per_row": round(tok_per_row),
                          "est_tokens_per_s_all_but_pii": round(per_worker_rows * tok_per_row),
                          "pii_rows_per_s": round(pii_worker_rows, 1),
                          "est_tokens_per_s_pii": round(pii_worker_rows * pii_chars / 4 / args.pii_rows)}}
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "ray_engine.json").write_text(json.dumps(res, indent=2) + "\n")
    pw = res["per_worker"]
    md = [
        "# Ray engine (2-worker local cluster) vs local engine (2 forked workers)",
        "",
        f"{res['date']}, {res['cpus']} CPUs (shared machine: expect noise), Python {res['python']}. "
        f"{args.rows:,} generated triage rows; checks: every check except PII (PII: separate row). One run each.",
        "",
        "| engine | wall s | fixed start-up s | wall without start-up s | map CPU s |",
        "|---|---:|---:|---:|---:|",
        f"| local | {local['seconds']} | 0 | {local['seconds']} | {local['map_cpu_s']} |",
        f"| ray | {ray['seconds']} | {ray['startup_s']} | {ray['seconds_without_startup']} | {ray['map_cpu_s']} |",
        f"| ray, PII only, {args.pii_rows:,} rows | {pii['seconds']} | {pii['startup_s']} | "
        f"{pii['seconds_without_startup']} | {pii['map_cpu_s']} |",
        "",
        f"Ray / local without start-up: **{res['ratio_ray_over_local_without_startup']}x**; findings identical.",
        f"Per worker: {pw['rows_per_s_all_but_pii']:,} rows/s (~{pw['est_tokens_per_s_all_but_pii']:,} tokens/s at "
        f"~{pw['est_tokens_per_row']} tokens/row, 4 chars/token) for all checks but PII; PII (spaCy NER): "
        f"{pw['pii_rows_per_s']} rows/s (~{pw['est_tokens_per_s_pii']:,} tokens/s).",
    ]
    (out / "ray_engine.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
