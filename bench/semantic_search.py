"""Pair search growth of the semantic check (gate.embed.encoder.bucketed_pairs: bounded k-means buckets, exact
cosine inside) at 10k, 20k, 40k, 80k vectors, written to bench/results/semantic_search.{md,json}.

The search part does not need the model, so the vectors are synthetic and shaped like sentence embeddings of a
dataset: 384 dimensions, unit length, topics of ~200 rows (cosine ~0.6 inside a topic, ~0 across) and 5% of rows
reworded copies of another row (cosine 0.92-0.99 with it). Growth is measured in CPU seconds of this process
(the machine is shared) and wall seconds. Recall is the share of the exact pairs (cosine >= threshold) that the
buckets find, over every pair that touches a random sample of 1,000 rows (exact search of the sample against all
rows); precision is 1 by construction (every reported pair is verified exactly).

    .venv/bin/python bench/semantic_search.py [--sizes 10000,20000,40000,80000] [--threshold 0.92]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def vectors(n: int, dim: int = 384, topic: int = 200, copies: float = 0.05, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if topic > 0:
        centers = rng.normal(size=(max(1, n // topic), dim)).astype(np.float32)
        centers /= np.linalg.norm(centers, axis=1, keepdims=True)
        x = centers[rng.integers(0, len(centers), n)] * 0.77 + rng.normal(size=(n, dim)).astype(np.float32) * (
            0.64 / np.sqrt(dim))
    else:  # no structure at all: the worst case for k-means buckets (borders everywhere)
        x = rng.normal(size=(n, dim)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    k = int(n * copies)
    src, dst = rng.choice(n, size=k, replace=False), rng.choice(n, size=k, replace=False)
    keep = src != dst
    src, dst = src[keep], dst[keep]
    noise = rng.normal(size=(len(src), dim)).astype(np.float32)
    noise /= np.linalg.norm(noise, axis=1, keepdims=True)
    angle = np.arccos(rng.uniform(0.92, 0.99, size=(len(src), 1))).astype(np.float32)
    noise -= (noise * x[src]).sum(1, keepdims=True) * x[src]  # orthogonal to the source: cosine = cos(angle)
    noise /= np.linalg.norm(noise, axis=1, keepdims=True)
    x[dst] = x[src] * np.cos(angle) + noise * np.sin(angle)
    return x.astype(np.float32)


def sample_recall(emb: np.ndarray, found: set[tuple[int, int]], threshold: float, m: int = 1000) -> tuple[int, int]:
    rng = np.random.default_rng(1)
    q = rng.choice(len(emb), size=min(m, len(emb)), replace=False)
    sims = emb[q] @ emb.T
    want = 0
    got = 0
    for row, i in zip(sims, q.tolist(), strict=True):
        for j in np.nonzero(row >= threshold)[0].tolist():
            if j != i:
                want += 1
                got += (min(i, j), max(i, j)) in found
    return got, want


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10000,20000,40000,80000")
    ap.add_argument("--threshold", type=float, default=0.92)
    ap.add_argument("--topic", type=int, default=200, help="rows per topic (0: unstructured vectors)")
    args = ap.parse_args()
    from gate.embed.encoder import bucketed_pairs, buckets, cosine_pairs

    rows = []
    for n in (int(s) for s in args.sizes.split(",")):
        emb = vectors(n, topic=args.topic)
        load = os.getloadavg()[0]
        t0, c0 = time.perf_counter(), time.process_time()
        a, b, _ = bucketed_pairs(emb, args.threshold)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        sizes = [len(x) for x in buckets(emb)]
        got, want = sample_recall(emb, set(zip(a.tolist(), b.tolist(), strict=True)), args.threshold)
        row = {"n": n, "pairs": len(a), "cpu_s": round(cpu, 2), "wall_s": round(wall, 2),
               "cpu_us_per_row": round(cpu / n * 1e6, 1), "buckets": len(sizes), "max_bucket": max(sizes),
               "rows_in_buckets": sum(sizes), "recall_sample": round(got / want, 4) if want else 1.0,
               "sample_pairs": want, "load": round(load, 1)}
        if n <= 20000:  # the exact search, for the ratio (n^2)
            c0 = time.process_time()
            cosine_pairs(emb, args.threshold)
            row["exact_cpu_s"] = round(time.process_time() - c0, 2)
        rows.append(row)
        print(row, flush=True)
    base = rows[0]
    lines = [
        "# Semantic dedup: pair search growth (bounded k-means buckets)",
        "",
        "`gate.embed.encoder.bucketed_pairs` (used above `checks.semantic_duplicate.exact_max`, 20,000 rows): a",
        "k-means tree splits the vectors into buckets of at most ~1,024 rows (fan-out <= 256, each split fitted on a",
        "bounded sample; a row within 0.04 of its second centroid goes to both), exact cosine inside each bucket.",
        "Synthetic 384-d unit vectors shaped like a dataset's embeddings: "
        + (f"topics of ~{args.topic} rows" if args.topic > 0 else "no topics (unstructured: the worst case)")
        + ", 5% reworded copies",
        f"(cosine 0.92-0.99). Threshold {args.threshold}. CPU seconds of the process (shared 2-core machine).",
        "",
        f"Command: `.venv/bin/python bench/semantic_search.py --sizes {args.sizes} --threshold {args.threshold} "
        f"--topic {args.topic}`",
        "",
        "| rows | CPU s | wall s | CPU us/row | x rows vs first | x CPU vs first | buckets | largest | rows in "
        "buckets | pairs | recall (1k-row sample vs exact) | exact search CPU s |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        *[f"| {r['n']:,} | {r['cpu_s']} | {r['wall_s']} | {r['cpu_us_per_row']} | {r['n'] / base['n']:.0f} | "
          f"{r['cpu_s'] / base['cpu_s']:.2f} | {r['buckets']} | {r['max_bucket']} | {r['rows_in_buckets']:,} | "
          f"{r['pairs']:,} | {r['recall_sample']} ({r['sample_pairs']} pairs) | {r.get('exact_cpu_s', '-')} |"
          for r in rows],
        "",
        f"Load average during the runs: {', '.join(str(r['load']) for r in rows)}.",
        "",
    ]
    out = ROOT / "bench" / "results"
    tag = "" if args.topic == 200 else f"_topic{args.topic}"
    (out / f"semantic_search{tag}.md").write_text("\n".join(lines), "utf-8")
    (out / f"semantic_search{tag}.json").write_text(json.dumps(rows, indent=1) + "\n", "utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
