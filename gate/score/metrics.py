"""Metrics: the aggregation step between per-item scores and everything that reads numbers (tables, gates, record).

Scorers never aggregate and metrics never look at raw outputs (the inspect_ai split, evaluation notes §1). Per suite,
category ('all' plus each item category), scorer and key:
- repeated epochs are first reduced per item (mean over epochs, inspect's default reducer), so `n` counts items and
  the standard error is not shrunk by counting one item several times;
- `mean` and its standard error (sample sd / sqrt(n)) for every key: strict and flexible extraction are separate keys,
  so they stay separate here;
- p50/p95/p99 over every request for the latency-like keys of the operations scorer, where the tail is the finding.
A key absent from an item's score (e.g. over_refusal on an unsafe prompt) simply does not count for that item.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from gate.score.scorers.operations import LATENCY_KEYS

METRIC_FIELDS = ("n", "mean", "stderr", "p50", "p95", "p99", "epochs")


def percentile(values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default method), without importing numpy."""
    xs = sorted(values)
    if len(xs) == 1:
        return xs[0]
    pos = (len(xs) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def aggregate(scores: Iterable[dict[str, Any]], resources: Iterable[dict[str, Any]] = ()) -> list[dict[str, Any]]:
    """Metric rows from score rows (`suite, item_id, category, scorer, key, value`, optional `epoch`) and run-level
    measurements (`suite, scorer, key, value`, e.g. peak memory), sorted for stable tables."""
    per_item: dict[tuple[str, str, str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for s in scores:
        if s.get("value") is None:
            continue
        for cat in ("all", s["category"]):
            per_item[(s["suite"], cat, s["scorer"], s["key"])][s["item_id"]].append(float(s["value"]))
    rows: list[dict[str, Any]] = []
    for (suite, cat, scorer, key), items in per_item.items():
        means = [sum(v) / len(v) for v in items.values()]
        n = len(means)
        mean = sum(means) / n
        sd = math.sqrt(sum((x - mean) ** 2 for x in means) / (n - 1)) if n > 1 else None
        row: dict[str, Any] = {"suite": suite, "category": cat, "scorer": scorer, "key": key, "n": n, "mean": mean,
                               "stderr": sd / math.sqrt(n) if sd is not None else None, "p50": None, "p95": None,
                               "p99": None, "epochs": max(len(v) for v in items.values())}
        if key in LATENCY_KEYS:
            flat = [x for v in items.values() for x in v]
            row.update(p50=percentile(flat, 50), p95=percentile(flat, 95), p99=percentile(flat, 99))
        rows.append(row)
    for r in resources:
        rows.append({"suite": r["suite"], "category": "all", "scorer": r["scorer"], "key": r["key"], "n": 1,
                     "mean": float(r["value"]), "stderr": None, "p50": None, "p95": None, "p99": None, "epochs": 1})
    rows.sort(key=lambda r: (r["suite"], r["category"] != "all", r["category"], r["scorer"], r["key"]))
    return rows


def cell(row: dict[str, Any] | None) -> str:
    """How one metric reads in a table: percentiles for latencies, mean ± stderr (n) for the rest."""
    if not row:
        return "–"
    if row.get("p50") is not None:
        return f"p50 {row['p50']:.3g} · p95 {row['p95']:.3g} · p99 {row['p99']:.3g} (n={row['n']})"
    se = f" ± {row['stderr']:.3f}" if row.get("stderr") else ""
    return f"{row['mean']:.3f}{se} (n={row['n']})"
