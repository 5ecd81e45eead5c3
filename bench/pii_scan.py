"""Benchmark: gate's batched PII scan against presidio's plain per-text `AnalyzerEngine.analyze` loop.

Same recognisers, same messages, pattern-only and with the spaCy NER model, in one run; writes
bench/results/pii_scan.{json,md}. The peer is presidio as a user builds it (`scan_texts_stock`: its own
`SpacyNlpEngine.load()`, the whole pipeline on spaCy's default ops); gate's own plain loop on gate's engine is
shown too. Rates are texts per CPU second of the whole process tree (the machine is shared: wall time measures
the neighbours), with the load average.

    .venv/bin/python bench/pii_scan.py [--n 2000] [--workers 1 2] [--no-ner] [--repeat 3]

Prints texts/s of both paths, the ratio, whether the findings are identical, and recall/precision against the
planted spans of the synthetic messages (a hit counts when it covers ≥ 50 % of a planted span of the same type).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "pii"))

from synth import make_messages  # noqa: E402

from gate.pii.config import PiiConfig  # noqa: E402
from gate.pii.presidio_engine import Hit, _engine, scan_texts, scan_texts_plain, scan_texts_stock  # noqa: E402


def cpu_s() -> float:
    """CPU seconds of this process and its finished children (the scan's forked workers)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def quality(data: list, found: list[list[Hit]]) -> dict:
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
    out = {"recall": {k: f"{caught[k]}/{planted_n[k]}" for k in sorted(planted_n)},
           "hits_on_no_planted_span": dict(false),
           "clean_messages_flagged": f"{flagged_clean}/{sum(1 for _, p in data if not p)}"}
    for k, v in out.items():
        print(f"  {k}: {v}")
    return out


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
    results: dict = {"benchmark": "pii_scan", "date": datetime.now(UTC).isoformat(timespec="seconds"),
                     "texts": len(texts), "cpus": os.cpu_count(), "modes": []}
    configs = [("pattern-only", PiiConfig(use_ner=False))]
    if not args.no_ner:
        configs.append(("NER (en_core_web_sm)", PiiConfig()))
    for name, config in configs:
        eng = _engine(config)
        print(f"{name}: ner={eng.nlp is not None} entities={eng.entities}")
        scan_texts_plain(texts[:20], config)
        scan_texts_stock(texts[:20], config)
        plain_s = own_s = float("inf")
        plain_wall = float("inf")
        fast_s = dict.fromkeys(args.workers, float("inf"))
        fast_wall = dict.fromkeys(args.workers, float("inf"))
        same = dict.fromkeys(args.workers, True)
        differ = dict.fromkeys(args.workers, 0)
        for _ in range(args.repeat):  # interleaved, best of each: the machine may be shared
            t0, c0 = time.perf_counter(), cpu_s()
            plain = scan_texts_stock(texts, config)
            plain_s, plain_wall = min(plain_s, cpu_s() - c0), min(plain_wall, time.perf_counter() - t0)
            c0 = cpu_s()
            own = scan_texts_plain(texts, config)
            own_s = min(own_s, cpu_s() - c0)
            for w in args.workers:
                t0, c0 = time.perf_counter(), cpu_s()
                fast = scan_texts(texts, config, workers=w)
                fast_s[w], fast_wall[w] = min(fast_s[w], cpu_s() - c0), min(fast_wall[w], time.perf_counter() - t0)
                same[w] = same[w] and fast == plain
                differ[w] = sum(a != b for a, b in zip(fast, plain, strict=True))
        print(f"  presidio plain loop: {len(texts) / plain_s:8.1f} texts/CPU-s; gate's plain loop "
              f"{len(texts) / own_s:8.1f} (identical to gate's fast path: {own == fast})")
        for w in args.workers:
            print(f"  scan_texts workers={w}: {len(texts) / fast_s[w]:8.1f} texts/CPU-s  "
                  f"ratio {plain_s / fast_s[w]:4.2f}x  identical={same[w]} (texts differing: {differ[w]})")
        print(f"  load average {os.getloadavg()}")
        results["modes"].append({
            "mode": name, "ner": eng.nlp is not None, "plain_texts_per_cpu_s": round(len(texts) / plain_s, 1),
            "plain_wall_s": round(plain_wall, 1), "gate_plain_loop_texts_per_cpu_s": round(len(texts) / own_s, 1),
            "gate": [{"workers": w, "texts_per_cpu_s": round(len(texts) / fast_s[w], 1),
                      "wall_s": round(fast_wall[w], 1), "ratio_cpu": round(plain_s / fast_s[w], 2),
                      "identical_findings": same[w], "texts_differing": differ[w]} for w in args.workers],
            "quality": quality(data, plain), "load_average": os.getloadavg()})
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "pii_scan.json").write_text(json.dumps(results, indent=2) + "\n")
    md = ["# PII scan: gate batched vs presidio plain `analyze` loop", "",
          f"{results['date']}, {results['texts']} synthetic chat messages (~310 chars, ~31% with PII), "
          f"{results['cpus']} CPUs; best of {args.repeat} interleaved runs; texts per CPU second of the process "
          f"tree (workers included); load average {results['modes'][-1]['load_average'][0]:.1f} at the end.", "",
          f"    {' '.join(sys.argv)}", "",
          "| mode | presidio plain loop texts/CPU-s | gate workers | gate texts/CPU-s | ratio | gate wall s "
          "| identical findings (texts differing) |",
          "|---|---:|---:|---:|---:|---:|---|"]
    for m in results["modes"]:
        for g in m["gate"]:
            md.append(f"| {m['mode']} | {m['plain_texts_per_cpu_s']} | {g['workers']} | {g['texts_per_cpu_s']} | "
                      f"{g['ratio_cpu']}x | {g['wall_s']} | {g['identical_findings']} ({g['texts_differing']}) |")
    md += ["", "Target (issue 19 s1): NER >= 600 texts/s on 2 cores (300 per CPU second) and >= 10x the plain loop, "
           "identical findings.", ""]
    (out / "pii_scan.md").write_text("\n".join(md))


if __name__ == "__main__":
    main()
