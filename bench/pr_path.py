"""Benchmark: what the dataset-gate action costs on a pull request, old path against new, in one run.

The action runs `gate check --changed-since origin/<target>`. Until issue 33 item 6 that checked every changed
dataset twice, whole (here and at the merge-base: the new-or-existing labels); now it passes `--base` too and each
changed dataset is checked incrementally: the added or edited rows, duplicates and leakage against the dataset's
index, built on the first run (no CI cache) and reused after. Same data, same machine, same run:

  1. N generated triage rows (fixtures/generate.py) are the base commit of a throwaway git repository; the pull
     request appends P more, one of them a copy of a base row with a new id (an exact duplicate the change adds);
  2. `--changed-since main` (the old default): every row, twice;
  3. `--changed-since main --base main` with no index (the first run on a CI runner without a cache);
  4. the same again with the index from step 3 (a runner that caches `.gate-index/`).

Each is the full contract (every check the contract runs, PII with its NER model included). Reported: wall and CPU
seconds of the whole process tree, the ratios, and whether both paths find the same new findings. Writes
bench/results/pr_path.{json,md}.

    .venv/bin/python bench/pr_path.py [--rows 25000] [--pr 200]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.measure import GATE_ENV as ENV  # noqa: E402
from bench.measure import (  # noqa: E402
    base_repository,
    generated_triage_lines,
    measure_command,
)
from bench.measure import git_uncompressed as git  # noqa: E402

PY = sys.executable
CONTRACT = str(ROOT / "contracts" / "triage.yaml")


def new_findings(report_dir: Path) -> list[tuple[str, str, int]]:
    """(check, split, row) of every finding the change adds: all of an incremental run's, the `new` ones of a
    full run's (its existing ones were on the base already)."""
    rep = json.loads((report_dir / "report.json").read_text())
    return sorted((f["check"], f["split"], f["row"]) for f in rep.get("findings", [])
                  if f.get("novelty") in (None, "new"))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=25_000)
    ap.add_argument("--pr", type=int, default=200)
    args = ap.parse_args()
    work = ROOT / "bench" / "data" / f"pr-path-{args.rows}"
    gen = work / "gen"
    total = args.rows + args.pr - 1
    lines = generated_triage_lines(gen, total)
    repo = work / "repo"
    data = base_repository(repo, b"".join(lines[: args.rows]))
    git(repo, "checkout", "-q", "-b", "pr")
    copy = json.loads(lines[10])
    copy["id"] = "pr-copy-of-row-11"
    with open(data, "ab") as fh:  # the pull request appends rows, one of them a copy of a base row
        fh.write(b"".join(lines[args.rows:]) + (json.dumps(copy) + "\n").encode())
    git(repo, "commit", "-qam", "pull request")

    results: dict = {"benchmark": "pr_path", "date": datetime.now(UTC).isoformat(timespec="seconds"),
                     "cpus": os.cpu_count(), "python": platform.python_version(), "base_rows": args.rows,
                     "pr_rows": args.pr, "loadavg_before": round(os.getloadavg()[0], 2)}
    common = [PY, "-m", "gate", "check", "data", "-c", CONTRACT, "--changed-since", "main", "--no-db", "-q"]
    shutil.rmtree(repo / ".gate-index", ignore_errors=True)
    steps = {"full": ("`--changed-since main` (before: every row, here and at the base)", []),
             "incremental_cold": ("`--changed-since main --base main`, no index yet (built)", ["--base", "main"]),
             "incremental_warm": ("the same, index from the run before (a cached `.gate-index/`)", ["--base", "main"])}
    for key, (label, extra) in steps.items():
        out = work / f"report-{key}"
        results[key] = measure_command(label, [*common, *extra, "-o", str(out)], ENV, cwd=repo)
        results[key]["label"] = label
        results[key]["new_findings"] = new_findings(out)
        results[key]["path_line"] = next((ln for ln in (out / "report.md").read_text().splitlines()
                                          if ln.startswith(("Incremental against", "Full check"))), "")
    full, cold, warm = results["full"], results["incremental_cold"], results["incremental_warm"]
    results["same_new_findings"] = full["new_findings"] == cold["new_findings"] == warm["new_findings"]
    results["the_copy_found"] = ["exact_duplicate", "train", total + 1] in [list(f) for f in cold["new_findings"]]
    for key in ("incremental_cold", "incremental_warm"):
        results[f"cpu_ratio_full_over_{key}"] = round(full["cpu_s"] / results[key]["cpu_s"], 1)
        results[f"wall_ratio_full_over_{key}"] = round(full["seconds"] / results[key]["seconds"], 1)

    out_dir = ROOT / "bench" / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "pr_path.json").write_text(json.dumps(results, indent=2) + "\n")
    r = results
    md = ["# The dataset-gate action on a pull request: full path vs incremental path", "",
          f"{r['date']}, {r['cpus']} CPUs (1-min load average {r['loadavg_before']} before the run), Python "
          f"{r['python']}. Base: {r['base_rows']:,} generated triage rows in a git repository; the pull request "
          f"appends {r['pr_rows']:,} rows, one a copy of a base row. Every check of contracts/triage.yaml, PII with "
          "NER. Wall and CPU seconds of the whole `gate` process tree (bench/measure.py).", "",
          "| step | wall s | CPU s | full / this (CPU) | peak PSS MB | new findings | report says |",
          "|---|---:|---:|---:|---:|---:|---|"]
    for key in steps:
        s = r[key]
        ratio = "1.0" if key == "full" else f"{r[f'cpu_ratio_full_over_{key}']}x"
        md.append(f"| {s['label']} | {s['seconds']} | {s['cpu_s']} | {ratio} | {s['peak_pss_mb']} | "
                  f"{len(s['new_findings'])} | {s['path_line'][:90]} |")
    md += ["", f"Same new findings on all three paths: **{r['same_new_findings']}**; the planted copy found "
               f"(exact_duplicate, row {total + 1}): **{r['the_copy_found']}**."]
    if not r["same_new_findings"]:  # what each path reports that the other does not, with the full path's label
        full_all = {(f["check"], f["split"], f["row"]): f.get("novelty")
                    for f in json.loads((work / "report-full" / "report.json").read_text())["findings"]}
        only_inc = sorted(set(map(tuple, cold["new_findings"])) - set(map(tuple, full["new_findings"])))
        only_full = sorted(set(map(tuple, full["new_findings"])) - set(map(tuple, cold["new_findings"])))
        md.append("Only the incremental path: " + (", ".join(
            f"{c} {sp} row {row} (the full path: {full_all.get((c, sp, row)) or 'not found'})"
            for c, sp, row in only_inc) or "none") + ". Only the full path: "
            + (", ".join(f"{c} {sp} row {row}" for c, sp, row in only_full) or "none") + ".")
    (out_dir / "pr_path.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
