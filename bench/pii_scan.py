"""Benchmark: gate's batched PII scan against presidio's plain per-text `AnalyzerEngine.analyze` loop.

Same recognisers, same messages, pattern-only and with the spaCy NER model, in one run; writes
bench/results/pii_scan.{json,md}. The peer is presidio as a user builds it (`scan_texts_stock`: its own
`SpacyNlpEngine.load()`, the whole pipeline on spaCy's default ops); gate's own plain loop on gate's engine is
shown too. Rates are texts per CPU second of the whole process tree (the machine is shared: wall time measures
the neighbours), with the load average.

    .venv/bin/python bench/pii_scan.py [--n 2000] [--workers 1 2] [--no-ner] [--repeat 3]
    .venv/bin/python bench/pii_scan.py --command [--n 1000] [--workers 1] [--no-ner] [--repeat 1]

Prints texts/s of both paths, the ratio, whether the findings are identical, and recall/precision against the
planted spans of the synthetic messages (a hit counts when it covers ≥ 50 % of a planted span of the same type).

`--command` (issue 30 item 3) measures instead the whole `gate check --checks pii` command, a fresh process
(interpreter, imports, model load, reading, scan, snippets, reports), once with masked snippets and once with
`--snippets none`, against a fresh process running presidio's plain loop on the same texts (imports, its own model
load, reading, one `analyze` per text); CPU seconds of each process tree. Writes bench/results/pii_command.{json,md}.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "pii"))

from synth import make_messages  # noqa: E402

from gate.pii.config import PiiConfig  # noqa: E402
from gate.pii.hits import Hit  # noqa: E402
from gate.pii.oracles import scan_texts_plain, scan_texts_stock  # noqa: E402
from gate.pii.presidio_engine import _engine, scan_texts  # noqa: E402


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


#: presidio's plain loop as a fresh process: presidio's own AnalyzerEngine (`_stock_analyzer`) around gate's
#: recognisers, one `analyze` per text. `_stock_analyzer` builds gate's engine first to borrow its recognisers; the
#: CPU of that build (imports done before) is printed and subtracted, so the peer is not charged for a model load it
#: would not do.
PEER = """
import json, sys, time
from gate.pii.config import PiiConfig
from gate.pii.oracles import _stock_analyzer
from gate.pii.postfilters import _to_hits
from gate.pii.presidio_engine import _engine, _import_presidio
_import_presidio()  # presidio without torch, as gate imports it: the peer is not charged for torch either
import spacy
config = PiiConfig(use_ner=sys.argv[2] == "ner")
c0 = time.process_time(); eng = _engine(config); borrowed = time.process_time() - c0
analyzer = _stock_analyzer(config)
texts = [json.loads(line)["messages"][0]["content"] for line in open(sys.argv[1], encoding="utf-8")]
hits = sum(len(_to_hits(t, analyzer.analyze(t, config.language, entities=eng.entities), 0, config)) for t in texts)
print(json.dumps({"hits": hits, "borrowed_cpu_s": borrowed}))
"""


def children_cpu_s() -> float:
    """CPU seconds of this process's finished children and theirs (each joins its own workers)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(cmd: list[str]) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    """(CPU s of the process tree, wall s, the finished process) of one command."""
    env = {**os.environ, "CI": "true", "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    c0, t0 = children_cpu_s(), time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    return children_cpu_s() - c0, time.perf_counter() - t0, proc


def command_main(args: argparse.Namespace) -> None:
    """The whole `gate check --checks pii` command against presidio's plain loop, both as fresh processes."""
    texts = [t for t, _ in make_messages(args.n)]
    tmp = Path(tempfile.mkdtemp(prefix="pii_command_"))
    data = tmp / "ds" / "train.jsonl"
    data.parent.mkdir()
    with open(data, "w", encoding="utf-8") as fh:
        for i, t in enumerate(texts):
            fh.write(json.dumps({"id": f"b{i}", "messages": [{"role": "user", "content": t}]}) + "\n")
    modes = [("pattern-only", False)] + ([] if args.no_ner else [("NER", True)])
    rows: list[dict] = []
    for name, ner in modes:
        contract = tmp / f"{name}.yaml"
        contract.write_text(f"name: bench\nversion: 1\nchecks:\n  pii:\n    use_ner: {str(ner).lower()}\n")
        best: dict[str, tuple[float, float]] = {}
        extra: dict[str, object] = {}
        for _ in range(args.repeat):  # interleaved, best of each: the machine may be shared
            cpu, wall, proc = timed([sys.executable, "-c", PEER, str(data), "ner" if ner else "pattern"])
            if proc.returncode:
                raise SystemExit(f"peer failed: {proc.stderr[-2000:]}")
            peer = json.loads(proc.stdout.strip().splitlines()[-1])
            cpu -= peer["borrowed_cpu_s"]
            extra["peer_hits"], extra["peer_borrowed_cpu_s"] = peer["hits"], round(peer["borrowed_cpu_s"], 2)
            best["presidio"] = min(best.get("presidio", (cpu, wall)), (cpu, wall))
            for w in args.workers:
                for snippets in ("masked", "none"):
                    out = tmp / f"out-{name}-{w}-{snippets}"
                    cpu, wall, proc = timed([sys.executable, "-m", "gate", "check", str(data.parent), "-c",
                                             str(contract), "--checks", "pii", "--no-db", "-q", "-o", str(out),
                                             "--workers", str(w), "--snippets", snippets])
                    if proc.returncode not in (0, 100):
                        raise SystemExit(f"gate check failed ({proc.returncode}): {proc.stderr[-2000:]}")
                    report = json.loads((out / "report.json").read_text())
                    key = f"gate workers={w} snippets={snippets}"
                    best[key] = min(best.get(key, (cpu, wall)), (cpu, wall))
                    extra[f"{key} findings"] = len(report["findings"])
                    extra[f"{key} timings"] = report.get("timings")
        peer_cpu = best["presidio"][0]
        for key, (cpu, wall) in best.items():
            row = {"mode": name, "run": key, "cpu_s": round(cpu, 2), "wall_s": round(wall, 2),
                   "texts_per_cpu_s": round(len(texts) / cpu, 1), "ratio_vs_presidio": round(peer_cpu / cpu, 2)}
            rows.append(row)
            print(f"{name:12} {key:34} {cpu:7.2f} CPU s {wall:7.2f} wall s {row['texts_per_cpu_s']:8.1f} "
                  f"texts/CPU-s  {row['ratio_vs_presidio']:5.2f}x presidio")
        print(f"  {extra}")
        rows.append({"mode": name, "details": extra})
    load = os.getloadavg()
    results = {"benchmark": "pii_command", "date": datetime.now(UTC).isoformat(timespec="seconds"),
               "texts": len(texts), "cpus": os.cpu_count(), "load_average": load, "rows": rows,
               "command": " ".join(sys.argv)}
    out_dir = ROOT / "bench" / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "pii_command.json").write_text(json.dumps(results, indent=2) + "\n")
    md = ["# PII: the whole `gate check --checks pii` command vs presidio's plain loop", "",
          f"{results['date']}, {len(texts)} synthetic chat messages (one user message per row), {results['cpus']} "
          f"CPUs, load average {load[0]:.1f} at the end; best of {args.repeat} interleaved runs. Each side is a fresh "
          "process; CPU seconds of its process tree (workers included): interpreter start, imports, model load, "
          "reading, scanning and (gate) snippets, reports. presidio: its own AnalyzerEngine and model load around "
          "gate's recognisers, one `analyze` per text, less the CPU of the gate engine build it borrows the "
          "recognisers from (presidio imported as gate imports it, without torch).", "",
          f"    {results['command']}", "",
          "| mode | run | CPU s | wall s | texts/CPU-s | ratio vs presidio (CPU) |", "|---|---|---:|---:|---:|---:|"]
    md += [f"| {r['mode']} | {r['run']} | {r['cpu_s']} | {r['wall_s']} | {r['texts_per_cpu_s']} | "
           f"{r['ratio_vs_presidio']}x |" for r in rows if "run" in r]
    md += ["", "Target (issue 30 item 3): the whole command >= 3x presidio's plain loop, NER on and pattern-only.", ""]
    (out_dir / "pii_command.md").write_text("\n".join(md))


def main() -> None:
    """Run the comparison for pattern-only and (when installed) NER."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--no-ner", action="store_true")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--command", action="store_true", help="the whole gate check command (see the docstring)")
    args = ap.parse_args()
    if args.command:
        command_main(args)
        return
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
