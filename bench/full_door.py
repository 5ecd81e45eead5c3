"""Benchmark: the full default data door (every check, PII with the NER model and secrets included) at scale.

Runs `gate check` on prefixes of the triage bench (`fixtures/generate.py --scale N --kind triage`) in fresh
processes, one size after the other, and records per size: CPU seconds of the whole process tree (user + system
of the command and its workers, from `os.wait4`), wall seconds, the peak RSS of the largest single process
(`ru_maxrss` of the waited children: not a sum over workers), rows per CPU-second, and each check's seconds from
report.json (its map work plus its finish step). A linear fit of CPU seconds against rows gives the curve to 1M
rows. Writes bench/results/full_door.{json,md}.

    .venv/bin/python fixtures/generate.py --scale 200000 --kind triage --out /tmp/door/200k
    .venv/bin/python bench/full_door.py --data /tmp/door/200k/train.jsonl --sizes 50000 100000 200000

No peer: this measures gate's own door (issue 30 item 4); the per-check peers are in bench/results/.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_door(data_dir: Path, out: Path, contract: Path) -> dict:
    """One `gate check` of `data_dir` in a fresh process: CPU, wall, peak RSS and the per-check seconds."""
    cmd = [sys.executable, "-m", "gate", "check", str(data_dir), "-c", str(contract), "--no-db", "-q", "-o", str(out)]
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - t0
    stdout, stderr = proc.communicate()
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 100):
        raise SystemExit(f"gate check failed ({code}): {stderr[-2000:]}")
    # the command's own rusage includes the workers it waited for (they are its children)
    cpu = usage.ru_utime + usage.ru_stime
    report = json.loads((out / "report.json").read_text())
    timings = report.get("timings") or {}
    checks = {c["name"]: round(c["seconds"] + timings.get(f"finish.{c['name']}", 0.0), 2) for c in report["checks"]}
    return {"cpu_s": round(cpu, 1), "wall_s": round(wall, 1), "peak_rss_mb": round(usage.ru_maxrss / 1024),
            "verdict": report["verdict"], "findings": len(report["findings"]), "checks": checks,
            "read_and_map_wall_s": timings.get("read_and_map"), "summary": stdout.strip()[-300:]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, help="a triage bench train.jsonl as long as the sizes")
    ap.add_argument("--sizes", type=int, nargs="+", default=[50_000, 100_000, 200_000])
    ap.add_argument("--contract", type=Path, default=ROOT / "contracts" / "triage.yaml")
    ap.add_argument("--from-json", action="store_true", help="rewrite the .md from bench/results/full_door.json")
    ap.add_argument("--add", action="store_true",
                    help="measure only --sizes and add them to the sizes already in bench/results/full_door.json")
    args = ap.parse_args()
    if args.from_json:
        results = json.loads((ROOT / "bench" / "results" / "full_door.json").read_text())
        if "rss_mb_per_row" not in results["fit"]:
            rows = results["rows"]
            per_row, base = _fit([r["rows"] for r in rows], [r["peak_rss_mb"] for r in rows])
            results["fit"].update(rss_mb_per_row=per_row, rss_mb_at_1m=base + per_row * 1_000_000)
            (ROOT / "bench" / "results" / "full_door.json").write_text(json.dumps(results, indent=2) + "\n")
        write_md(results)
        return
    if args.data is None:
        ap.error("--data is required (or --from-json)")
    tmp = Path(tempfile.mkdtemp(prefix="full_door_"))
    earlier = json.loads((ROOT / "bench" / "results" / "full_door.json").read_text()) if args.add else {}
    rows: list[dict] = [r for r in earlier.get("rows", []) if r["rows"] not in args.sizes]
    for n in sorted(args.sizes):
        d = tmp / f"n{n}"
        d.mkdir()
        with open(args.data, encoding="utf-8") as src, open(d / "train.jsonl", "w", encoding="utf-8") as dst:
            for i, line in enumerate(src):
                if i >= n:
                    break
                dst.write(line)
        res = {"rows": n, **run_door(d, tmp / f"out{n}", args.contract)}
        res["rows_per_cpu_s"] = round(n / res["cpu_s"], 1)
        rows.append(res)
        print(f"{n:>9,} rows  {res['cpu_s']:8.1f} CPU s  {res['wall_s']:7.1f} wall s  {res['rows_per_cpu_s']:7.1f} "
              f"rows/CPU-s  peak RSS {res['peak_rss_mb']} MB", flush=True)
        (d / "train.jsonl").unlink()
    rows.sort(key=lambda r: r["rows"])
    slope, fixed = _fit([r["rows"] for r in rows], [r["cpu_s"] for r in rows])
    mb_per_row, mb_fixed = _fit([r["rows"] for r in rows], [r["peak_rss_mb"] for r in rows])
    results = {"benchmark": "full_door", "date": datetime.now(UTC).isoformat(timespec="seconds"),
               "cpus": os.cpu_count(), "load_average": os.getloadavg(),
               "contract": str(args.contract.relative_to(ROOT)), "rows": rows,
               "fit": {"cpu_s_per_row": slope, "fixed_cpu_s": fixed, "cpu_s_at_1m": fixed + slope * 1_000_000,
                       "rss_mb_per_row": mb_per_row, "rss_mb_at_1m": mb_fixed + mb_per_row * 1_000_000},
               "command": " ".join(sys.argv), "notes": earlier.get("notes", "")}
    if earlier:  # each size keeps the date and command that measured it
        before = {k: earlier[k] for k in ("date", "command", "load_average")}
        results["earlier"] = [*earlier.get("earlier", []), before]
    (ROOT / "bench" / "results" / "full_door.json").write_text(json.dumps(results, indent=2) + "\n")
    write_md(results)


def _fit(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least-squares line through (xs, ys): (slope, intercept)."""
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / max(sum((x - mx) ** 2 for x in xs), 1e-9)
    return slope, my - slope * mx


def write_md(results: dict) -> None:
    """bench/results/full_door.md from the results (also `--from-json`, to rewrite the page without a rerun)."""
    rows, fit, load = results["rows"], results["fit"], results["load_average"]
    slope, fixed, at_1m = fit["cpu_s_per_row"], fit["fixed_cpu_s"], fit["cpu_s_at_1m"]
    out_dir = ROOT / "bench" / "results"
    names = list(rows[-1]["checks"])
    md = ["# The full default door at scale: every check, PII with the NER model and secrets", "",
          f"{results['date']}, {results['cpus']} CPUs, load average {load[0]:.1f} at the end. Triage bench rows "
          f"(`fixtures/generate.py --scale`), contract `{results['contract']}`, default checks, default workers. "
          "CPU seconds of the whole process tree (user + system, workers included); peak RSS of the largest single "
          "process.", "", f"    {results['command']}", "",
          "| rows | CPU s | wall s | rows per CPU-second | peak RSS MB | findings | verdict |",
          "|---:|---:|---:|---:|---:|---:|---|"]
    md += [f"| {r['rows']:,} | {r['cpu_s']} | {r['wall_s']} | {r['rows_per_cpu_s']} | {r['peak_rss_mb']} | "
           f"{r['findings']:,} | {r['verdict']} |" for r in rows]
    md += ["", "Seconds per check (report.json: the check's map work, summed over workers, plus its finish step):", "",
           "| check | " + " | ".join(f"{r['rows']:,} rows" for r in rows) + " |",
           "|---|" + "---:|" * len(rows)]
    md += [f"| {c} | " + " | ".join(str(r["checks"].get(c, "")) for r in rows) + " |" for c in names]
    for e in results.get("earlier", []):
        md += ["", f"Sizes measured before: {e['date']}, load average {e['load_average'][0]:.1f} at the end:", "",
               f"    {e['command']}"]
    measured = any(r["rows"] >= 1_000_000 for r in rows)
    md += ["", f"Linear fit of CPU seconds on rows: {slope * 1000:.2f} CPU s per 1,000 rows plus {fixed:.1f} s fixed; "
           f"**1M rows: {at_1m:,.0f} CPU s by the fit** ({at_1m / 3600:.1f} CPU hours; {at_1m / 3600 / 2:.1f} h wall "
           "on 2 cores if the workers keep both busy). "
           + ("The 1M-row line above is a run, not an extrapolation." if measured
              else "An extrapolation from the sizes above, not a 1M-row run."), "",
           f"Peak RSS grows with the rows too: {fit['rss_mb_per_row'] * 1000:.1f} MB per 1,000 rows, about "
           f"{fit['rss_mb_at_1m']:,.0f} MB at 1M rows by the same fit (peak RSS of the largest single process).", ""]
    if results.get("notes"):
        md += [results["notes"].rstrip(), ""]
    (out_dir / "full_door.md").write_text("\n".join(md))


if __name__ == "__main__":
    main()
