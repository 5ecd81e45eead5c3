"""Measure `scan_texts` against the plain `AnalyzerEngine.analyze` loop (run by hand, not by pytest).

    PYTHONPATH=. python tests/pii/bench_scan.py [--n 2000] [--workers 1 2] [--no-ner]

Prints texts/s of both paths, the ratio, whether the findings are identical, and recall/precision against the
planted spans of the synthetic messages (a hit counts when it covers ≥ 50 % of a planted span of the same type).
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synth import make_messages

from gate.pii.config import PiiConfig
from gate.pii.presidio_engine import Hit, _engine, scan_texts, scan_texts_plain


def quality(data: list, found: list[list[Hit]]) -> None:
    """Recall per planted type and the number of hits on no planted span (per hit type)."""
    planted_n: collections.Counter[str] = collections.Counter()
    caught: collections.Counter[str] = collections.Counter()
    false: collections.Counter[str] = collections.Counter()
    flagged_clean = 0
    for (_, planted), hits in zip(data, found, strict=True):
        for p in planted:
            planted_n[p.entity_type] += 1
            want = {p.entity_type} | ({"LOCATION"} if p.entity_type == "ADDRESS" else set())
            if any(h.entity_type in want and min(h.end, p.end) - max(h.start, p.start) >= 0.5 * (p.end - p.start)
                   for h in hits):
                caught[p.entity_type] += 1
        for h in hits:
            if not any(min(h.end, p.end) - max(h.start, p.start) > 0 for p in planted):
                false[h.entity_type] += 1
        flagged_clean += bool(hits) and not planted
    print("  recall:", {k: f"{caught[k]}/{planted_n[k]}" for k in sorted(planted_n)})
    print("  hits on no planted span:", dict(false))
    print(f"  clean messages flagged: {flagged_clean}/{sum(1 for _, p in data if not p)}")


def main() -> None:
    """Run the comparison for pattern-only and (when installed) NER."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--no-ner", action="store_true")
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    data = make_messages(args.n)
    texts = [t for t, _ in data]
    configs = [("pattern-only", PiiConfig(use_ner=False))]
    if not args.no_ner:
        configs.append(("NER (en_core_web_sm)", PiiConfig()))
    for name, config in configs:
        eng = _engine(config)
        print(f"{name}: ner={eng.nlp is not None} entities={eng.entities}")
        scan_texts_plain(texts[:20], config)
        plain_s = float("inf")
        fast_s = dict.fromkeys(args.workers, float("inf"))
        same = dict.fromkeys(args.workers, True)
        for _ in range(args.repeat):  # interleaved, best of each: the machine may be shared
            t0 = time.perf_counter()
            plain = scan_texts_plain(texts, config)
            plain_s = min(plain_s, time.perf_counter() - t0)
            for w in args.workers:
                t0 = time.perf_counter()
                fast = scan_texts(texts, config, workers=w)
                fast_s[w] = min(fast_s[w], time.perf_counter() - t0)
                same[w] = same[w] and fast == plain
        print(f"  plain analyze loop: {len(texts) / plain_s:8.1f} texts/s")
        for w in args.workers:
            print(f"  scan_texts workers={w}: {len(texts) / fast_s[w]:8.1f} texts/s  "
                  f"ratio {plain_s / fast_s[w]:4.2f}x  identical={same[w]}")
        print(f"  load average {os.getloadavg()}")
        quality(data, plain)


if __name__ == "__main__":
    main()
