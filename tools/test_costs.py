#!/usr/bin/env python3
"""Sums the per-test costs that tests/costs_plugin.py wrote (GATE_TEST_COSTS=FILE) per group of tests.

Why CPU seconds beside wall: with several pytest-xdist workers on 2 cores, a test's wall time includes waiting for
the other workers; CPU seconds (the test's process plus every child process it reaped: `gate` subprocesses,
trainers, servers) are what the suite costs the machine, and they add up. A group is a test file, or with
`--by dir` its folder under tests/.

Usage: python tools/test_costs.py .cache/test-costs.jsonl [--by file|dir] [--top 25]
                                 [--write-costs tests/costs.json]

`--write-costs` records CPU seconds per test file; tests/costs_plugin.py starts the costliest files first.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path


def load(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def group_of(nodeid: str, by: str) -> str:
    file = nodeid.split("::", 1)[0]
    if by == "dir":
        parts = file.split("/")
        return "/".join(parts[:2]) + "/" if len(parts) > 2 else file
    return file


def summarise(records: list[dict], by: str = "file") -> list[tuple[str, int, float, float]]:
    """(group, tests, wall s, CPU s) per group, the costliest CPU first."""
    acc: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
    for r in records:
        row = acc[group_of(r["test"], by)]
        row[0] += 1
        row[1] += r["wall"]
        row[2] += r["cpu_self"] + r["cpu_children"]
    return sorted(((g, int(n), w, c) for g, (n, w, c) in acc.items()), key=lambda t: -t[3])


def render(records: list[dict], by: str, top: int) -> str:
    rows = summarise(records, by)
    total_cpu = sum(r[3] for r in rows)
    lines = [f"| {by} | tests | wall s (summed) | CPU s | share of CPU |", "|---|---:|---:|---:|---:|"]
    for g, n, w, c in rows[:top]:
        lines.append(f"| `{g}` | {n} | {w:,.0f} | {c:,.0f} | {c / total_cpu:.1%} |" if total_cpu else
                     f"| `{g}` | {n} | {w:,.0f} | {c:,.0f} | - |")
    rest = rows[top:]
    if rest:
        lines.append(f"| ({len(rest)} more) | {sum(r[1] for r in rest)} | {sum(r[2] for r in rest):,.0f} | "
                     f"{sum(r[3] for r in rest):,.0f} | {sum(r[3] for r in rest) / (total_cpu or 1):.1%} |")
    lines.append(f"| **all** | {len(records)} | {sum(r[2] for r in rows):,.0f} | {total_cpu:,.0f} | 100% |")
    bad = [r for r in records if r.get("outcome", "passed") in ("failed", "error")]
    lines += [f"{r['outcome'].upper()}: {r['test']} ({r['worker']}, {r['wall']:.0f} s)" for r in bad]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("file", type=Path)
    ap.add_argument("--by", choices=("file", "dir"), default="file")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--write-costs", type=Path, help="write {test file: CPU s} for the scheduling order")
    args = ap.parse_args()
    if not args.file.is_file():
        raise SystemExit(f"test_costs: {args.file}: no such file (set GATE_TEST_COSTS when running pytest)")
    records = load(args.file)
    print(render(records, args.by, args.top))
    if args.write_costs:
        costs = {g: round(c, 1) for g, _, _, c in summarise(records, "file")}
        args.write_costs.write_text(json.dumps(costs, indent=1, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
