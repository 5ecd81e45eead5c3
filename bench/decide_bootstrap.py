"""Paired bootstrap of a release decision: gate.decide.stats.paired_bootstrap vs scipy.stats.bootstrap (the peer).

Case: n = 500 paired items, 10,000 resamples, percentile 95 % interval of mean(candidate) - mean(baseline), for one
metric and for the 12 metric keys a triage scorecard emits (scipy needs one call per metric; gate does all at once
with one multinomial weight matrix per block). One run each, same machine, side by side; the intervals are
reported too, so the speed is not bought with a different answer. Writes bench/results/decide_bootstrap.{json,md}.
"""

from __future__ import annotations

import json
import platform
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gate.decide.stats import paired_bootstrap  # noqa: E402
from gate.io.atomic import atomic_write_text  # noqa: E402

N, B, K = 500, 10_000, 12


def _scipy(base: np.ndarray, cand: np.ndarray) -> tuple[float, float]:
    from scipy.stats import bootstrap

    res = bootstrap((base, cand), lambda x, y, axis=-1: np.mean(y, axis=axis) - np.mean(x, axis=axis), paired=True,
                    vectorized=True, n_resamples=B, method="percentile", random_state=np.random.default_rng(1))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def main() -> int:
    import scipy

    rng = np.random.default_rng(0)
    base = (rng.random((N, K)) < 0.6).astype(float)
    cand = np.where(rng.random((N, K)) < 0.1, 1.0, base)
    _scipy(base[:50, 0], cand[:50, 0])  # warm both (imports, first-call overheads)
    paired_bootstrap(base[:50, :1], cand[:50, :1], resamples=1000)
    rows = []
    for k in (1, K):
        t0 = time.perf_counter()
        ours = paired_bootstrap(base[:, :k], cand[:, :k], resamples=B, seed=1)
        lo, hi = ours.interval(0.95)
        t_gate = time.perf_counter() - t0
        t0 = time.perf_counter()
        peer = [_scipy(base[:, j], cand[:, j]) for j in range(k)]
        t_scipy = time.perf_counter() - t0
        rows.append({"metrics": k, "gate_s": round(t_gate, 4), "scipy_s": round(t_scipy, 4),
                     "speedup": round(t_scipy / t_gate, 2),
                     "gate_ci_metric0": [round(float(lo[0]), 4), round(float(hi[0]), 4)],
                     "scipy_ci_metric0": [round(peer[0][0], 4), round(peer[0][1], 4)]})
    result = {"bench": "decide_bootstrap", "date": datetime.now(UTC).isoformat(), "n_items": N, "resamples": B,
              "numpy": np.__version__, "scipy": scipy.__version__, "python": platform.python_version(),
              "machine": platform.processor() or platform.machine(), "runs": rows,
              "note": "one run each on a shared machine: expect +-20 % noise"}
    out = ROOT / "bench" / "results"
    atomic_write_text(out / "decide_bootstrap.json", json.dumps(result, indent=2) + "\n")
    md = ["# Paired bootstrap: gate vs scipy.stats.bootstrap", "",
          f"n = {N} paired items, {B} resamples, percentile 95 % CI; numpy {np.__version__}, "
          f"scipy {scipy.__version__}; one run each.", "",
          "| metrics | gate (s) | scipy (s) | ratio | gate CI (metric 0) | scipy CI (metric 0) |",
          "|---|---|---|---|---|---|"]
    md += [f"| {r['metrics']} | {r['gate_s']} | {r['scipy_s']} | {r['speedup']}x | {r['gate_ci_metric0']} | "
           f"{r['scipy_ci_metric0']} |" for r in rows]
    atomic_write_text(out / "decide_bootstrap.md", "\n".join(md) + "\n")
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
