"""Benchmark: gate's near-duplicate detection against datasketch and rensa, end to end, on one generated corpus.

Side by side in one run, on the same tool-use corpus with planted near-duplicate pairs (fixtures/generate.py):
  1. gate, the real CLI: ``python -m gate check DIR --checks near_duplicate`` (threshold 0.8, LSH 16x6, every
     candidate verified by exact Jaccard), and the in-process library call ``gate.dedup.find_near_duplicates`` with a
     per-stage breakdown (reading + text extraction, shingling, signatures, banding, verification, clusters);
  2. datasketch 2.x: ``MinHash.bulk`` + ``LeanMinHash`` + ``MinHashLSH`` at its defaults (threshold 0.8, num_perm
     128 -> it picks 9x13) and at gate's banding (``params=(16, 6)``); insert all, query each, union-find;
  3. rensa: ``RMinHash.from_token_sets`` + ``RMinHashLSH(0.8, 128, 16)`` (``insert_many`` / ``query_all``),
     union-find.
Every engine runs in its own process, measured from reading the file to clusters (wall time, CPU seconds = user + sys
of the process tree, peak RSS of the process tree); gate's CLI also runs as one process (``gate check -j 1``), the row
to read next to single-threaded rensa, so the comparison is per core as well as per wall second. All read the same
rows, take the same text (``row_text(row, ("user", "assistant"), True)``) and the same tokens
(``gate.dedup.shingles.tokenize``, word 5-grams), so only the MinHash/LSH engines differ.

Quality per engine: recall = share of planted pairs with exact Jaccard >= 0.8 (on the 5-gram sets) that end in one
cluster; precision = share of a seeded sample of the engine's reported pairs (LSH candidates for the peers, which do
not verify; gate's verified pairs) whose exact Jaccard >= 0.8. Writes bench/results/neardup.{json,md}.

    .venv/bin/python bench/neardup.py [--rows 100000] [--work bench/data] [--sample 2000]
"""

from __future__ import annotations

import argparse
import importlib.metadata
import itertools
import json
import os
import platform
import random
import re
import resource
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.measure import run_measured  # noqa: E402

PY = sys.executable
CONTRACT = ROOT / "contracts" / "tool-use.yaml"
ROLES = ("user", "assistant")
TOOL_CALLS = True
THRESHOLD = 0.8
NUM_PERM = 128
NGRAM = 5
CHUNK = 4096  # rows per streamed chunk for the peers (gate shingles 4096 texts per batch too)
ENGINES = ("gate-lib", "datasketch-default", "datasketch-16x6", "rensa-16x8")


# ---------------------------------------------------------------------------------------------------------------
# Shared by the engine processes: reading, tokens, union-find, stage timing


def text_chunks(path: Path, size: int = CHUNK) -> Iterator[list[str]]:
    """The dedup text of every row, ``size`` rows at a time (orjson, as gate's own checks parse JSON)."""
    import orjson

    from gate.data.text import row_text

    with open(path, "rb") as fh:
        while lines := list(itertools.islice(fh, size)):
            yield [row_text(orjson.loads(line), ROLES, TOOL_CALLS) for line in lines]


def peer_shingles(text: str) -> list[str]:
    """Word 5-grams of gate's normalised tokens, as strings; a text shorter than 5 tokens is one shingle (as in
    gate); repeats are left in (MinHash ignores them)."""
    from gate.dedup.shingles import ShingleConfig, tokenize

    w = tokenize(text, ShingleConfig(n=NGRAM))
    if len(w) < NGRAM:
        return [" ".join(w)] if w else []
    return list(map(" ".join, zip(*(w[k:] for k in range(NGRAM)), strict=False)))


def shingle_set(text: str) -> set[str]:
    return set(peer_shingles(text))


def union_find(n: int, pairs: list[tuple[int, int]]) -> np.ndarray:
    """Component label (smallest member) per document from candidate pairs; path halving, union by smaller root."""
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in pairs:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return np.array([find(i) for i in range(n)], dtype=np.int64)


class Stopwatch:
    """Accumulated seconds per named stage."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)

    def timed(self, name: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            self.seconds[name] += time.perf_counter() - t0

    def rounded(self) -> dict[str, float]:
        return {k: round(v, 3) for k, v in self.seconds.items()}


def _streamed(path: Path, sw: Stopwatch) -> Iterator[list[str]]:
    """``text_chunks`` with the time spent reading and extracting text charged to the stage "read+text"."""
    it = text_chunks(path)
    while (chunk := sw.timed("read+text", next, it, None)) is not None:
        yield chunk


# ---------------------------------------------------------------------------------------------------------------
# Engines (each runs in its own process: ``bench/neardup.py --engine NAME --corpus FILE --out NPZ``)


class _Profile:
    """Exclusive time per stage of gate.dedup's functions, by wrapping them in gate.dedup.cluster's namespace."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self._stack: list[list[Any]] = []  # [stage, child seconds]

    def wrap(self, fn: Callable[..., Any], stage: str | Callable[[str | None], str]) -> Callable[..., Any]:
        def inner(*args: Any, **kwargs: Any) -> Any:
            parent = self._stack[-1][0] if self._stack else None
            name = stage(parent) if callable(stage) else stage
            frame: list[Any] = [name, 0.0]
            self._stack.append(frame)
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                elapsed = time.perf_counter() - t0
                self._stack.pop()
                self.seconds[name] += elapsed - frame[1]
                if self._stack:
                    self._stack[-1][1] += elapsed

        return inner


def engine_gate_lib(corpus: Path) -> tuple[dict[str, Any], np.ndarray, np.ndarray]:
    from gate.dedup import NearDupConfig, cluster

    sw = Stopwatch()
    texts: list[str] = []
    for chunk in _streamed(corpus, sw):
        texts.extend(chunk)
    prof = _Profile()
    # the loop overhead of the chunked pass
    cluster.compute_signatures = prof.wrap(cluster.compute_signatures, "signatures")
    cluster.shingle_batch = prof.wrap(
        cluster.shingle_batch, lambda parent: "shingling" if parent == "signatures" else "verification")
    cluster.minhash_signatures = prof.wrap(cluster.minhash_signatures, "signatures")
    for name in ("_full_signature_groups", "band_keys", "split_candidate_pairs"):
        setattr(cluster, name, prof.wrap(getattr(cluster, name), "banding"))
    cluster.ShingleSets.prefix_join = prof.wrap(cluster.ShingleSets.prefix_join, "banding")  # type: ignore[method-assign]
    cluster.verify_spanning = prof.wrap(cluster.verify_spanning, "verification")
    cluster._Subset.__init__ = prof.wrap(cluster._Subset.__init__, "verification")  # type: ignore[method-assign]
    cluster.ShingleSets.jaccard = prof.wrap(cluster.ShingleSets.jaccard, "verification")  # type: ignore[method-assign]
    config = NearDupConfig()
    res = sw.timed("find_near_duplicates", cluster.find_near_duplicates, texts, None, config)
    n = len(texts)
    labels = np.arange(n, dtype=np.int64)
    for cl in res.clusters:
        labels[list(cl.members)] = cl.kept
    pairs = np.array([(p.left, p.right) for p in res.pairs], dtype=np.int64).reshape(-1, 2)
    breakdown = {k: round(v, 3) for k, v in prof.seconds.items()}
    breakdown["clusters+result"] = round(sw.seconds["find_near_duplicates"] - sum(prof.seconds.values()), 3)
    c = res.counters
    info = {
        "docs": n, "stages": sw.rounded(), "find_near_duplicates_breakdown": breakdown,
        "params": f"threshold {config.threshold}, num_perm {config.minhash.num_perm}, "
                  f"LSH {res.plan.bands}x{res.plan.rows}, exact verification",
        "bands": res.plan.bands, "rows": res.plan.rows, "plan": res.plan.describe(), "config_key": res.config_key,
        "counters": {k: getattr(c, k) for k in c.__dataclass_fields__},
    }
    return info, labels, pairs


def _pairs_from_neighbours(neighbours: list[list[int]] | Iterator[tuple[int, list[int]]]) -> list[tuple[int, int]]:
    out: set[tuple[int, int]] = set()
    it = neighbours if not isinstance(neighbours, list) else enumerate(neighbours)
    for i, keys in it:
        for j in keys:
            if j != i:
                out.add((i, j) if i < j else (j, i))
    return sorted(out)


def engine_datasketch(corpus: Path, params: tuple[int, int] | None) -> tuple[dict[str, Any], np.ndarray, np.ndarray]:
    from datasketch import LeanMinHash, MinHash, MinHashLSH

    sw = Stopwatch()
    sigs: list[LeanMinHash] = []
    for chunk in _streamed(corpus, sw):
        shingles = sw.timed("shingling", lambda c: [[s.encode("utf-8", "surrogatepass") for s in peer_shingles(t)]
                                                    for t in c], chunk)
        mhs = sw.timed("signatures", MinHash.bulk, shingles, num_perm=NUM_PERM)
        sigs.extend(sw.timed("signatures", lambda ms: [LeanMinHash(m) for m in ms], mhs))
    n = len(sigs)
    lsh = (MinHashLSH(threshold=THRESHOLD, num_perm=NUM_PERM) if params is None
           else MinHashLSH(num_perm=NUM_PERM, params=params))

    def insert_all() -> None:
        with lsh.insertion_session() as session:
            for i, m in enumerate(sigs):
                session.insert(i, m, check_duplication=False)

    sw.timed("lsh insert", insert_all)
    pairs = sw.timed("lsh query", lambda: _pairs_from_neighbours((i, lsh.query(m)) for i, m in enumerate(sigs)))
    labels = sw.timed("union-find", union_find, n, pairs)
    info = {"docs": n, "stages": sw.rounded(), "bands": lsh.b, "rows": lsh.r,
            "params": f"{'threshold 0.8, ' if params is None else ''}num_perm {NUM_PERM}, LSH {lsh.b}x{lsh.r}"
                      f"{' (its default choice)' if params is None else ' (params=)'}, no verification",
            "candidate_pairs": len(pairs)}
    return info, labels, np.array(pairs, dtype=np.int64).reshape(-1, 2)


def engine_rensa(corpus: Path, bands: int = 16) -> tuple[dict[str, Any], np.ndarray, np.ndarray]:
    from rensa import RMinHash, RMinHashLSH

    sw = Stopwatch()
    lsh = RMinHashLSH(threshold=THRESHOLD, num_perm=NUM_PERM, num_bands=bands)
    sigs: list[Any] = []
    for chunk in _streamed(corpus, sw):
        shingles = sw.timed("shingling", lambda c: [peer_shingles(t) for t in c], chunk)
        mhs = sw.timed("signatures", RMinHash.from_token_sets, shingles, NUM_PERM, 42)
        sw.timed("lsh insert", lsh.insert_many, mhs, start_key=len(sigs))
        sigs.extend(mhs)
    n = len(sigs)
    neighbours = sw.timed("lsh query", lsh.query_all, sigs)
    pairs = sw.timed("lsh query", _pairs_from_neighbours, neighbours)
    labels = sw.timed("union-find", union_find, n, pairs)
    info = {"docs": n, "stages": sw.rounded(), "bands": bands, "rows": NUM_PERM // bands,
            "params": f"threshold 0.8, num_perm {NUM_PERM}, LSH {bands}x{NUM_PERM // bands}, no verification",
            "candidate_pairs": len(pairs)}
    return info, labels, np.array(pairs, dtype=np.int64).reshape(-1, 2)


def run_engine(name: str, corpus: Path, out: Path) -> None:
    if name == "gate-lib":
        info, labels, pairs = engine_gate_lib(corpus)
    elif name == "datasketch-default":
        info, labels, pairs = engine_datasketch(corpus, None)
    elif name == "datasketch-16x6":
        info, labels, pairs = engine_datasketch(corpus, (16, 6))
    elif name == "rensa-16x8":
        info, labels, pairs = engine_rensa(corpus, 16)
    else:
        raise SystemExit(f"unknown engine {name!r}")
    np.savez(out, labels=labels, pairs=pairs)
    print(json.dumps(info))


# ---------------------------------------------------------------------------------------------------------------
# Orchestration


def generate(rows: int, out: Path) -> Path:
    import subprocess

    if not (out / "train.jsonl").exists() or not (out / "PAIRS.json").exists():
        subprocess.run([PY, str(ROOT / "fixtures" / "generate.py"), "--scale", str(rows), "--kind", "tool-use",
                        "--near-dup-rate", "0.05", "--out", str(out)], check=True)
    return out


def _children_cpu() -> float:
    """user + sys seconds of every waited-for child process tree so far (a tool's workers included)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def measure_engine(name: str, corpus: Path, out_dir: Path, monitor: bool = True) -> dict[str, Any]:
    out = out_dir / f"{name}.npz"
    cpu0 = _children_cpu()
    m = run_measured([PY, str(Path(__file__).resolve()), "--engine", name, "--corpus", str(corpus),
                      "--out", str(out)], monitor=monitor)
    cpu = _children_cpu() - cpu0
    if m.returncode != 0:
        raise SystemExit(f"engine {name} failed:\n{m.stderr[-3000:]}")
    info = json.loads(m.stdout.strip().splitlines()[-1])
    data = np.load(out)
    info.update(seconds=round(m.seconds, 2), docs_per_s=round(info["docs"] / m.seconds), cpu_s=round(cpu, 2),
                docs_per_cpu_s=round(info["docs"] / max(cpu, 1e-9)),
                peak_rss_mb=round(m.peak_rss_mb), loadavg_1min_after=round(os.getloadavg()[0], 2))
    info["_labels"], info["_pairs"] = data["labels"], data["pairs"]
    print(f"  {name}: {m.seconds:.1f} s, {m.peak_rss_mb:.0f} MB, stages {info['stages']}", flush=True)
    return info


_FINDING = re.compile(r"near duplicate of row (\d+)\b.*?cluster [^:\s]+:(\d+)")


def measure_gate_cli(dataset: Path, report_dir: Path, n: int, monitor: bool = True,
                     workers: int | None = None) -> dict[str, Any]:
    """The real CLI; ``workers=1`` (`gate check -j 1`) is the row to set next to single-threaded rensa."""
    cpu0 = _children_cpu()
    m = run_measured([PY, "-m", "gate", "check", str(dataset), "--contract", str(CONTRACT), "--checks",
                      "near_duplicate", "--no-db", "--report-dir", str(report_dir), "--quiet",
                      *(["-j", str(workers)] if workers else [])],
                     env={**os.environ, "CI": "true"}, monitor=monitor)
    cpu = _children_cpu() - cpu0
    if m.returncode not in (0, 100):
        raise SystemExit(f"gate check failed (rc {m.returncode}):\n{m.stderr[-3000:]}")
    report = json.loads((report_dir / "report.json").read_text())
    check = next(c for c in report["checks"] if c["name"] == "near_duplicate")
    labels = np.arange(n, dtype=np.int64)
    pairs = []
    parsed = 0
    for f in report["findings"]:
        hit = _FINDING.search(f["message"]) if f["check"] == "near_duplicate" else None
        if hit:
            row, partner, kept = f["row"] - 1, int(hit.group(1)) - 1, int(hit.group(2)) - 1
            labels[row] = kept
            pairs.append((min(row, partner), max(row, partner)))
            parsed += 1
    d = check["details"]
    info = {"docs": n, "seconds": round(m.seconds, 2), "docs_per_s": round(n / m.seconds), "cpu_s": round(cpu, 2),
            "docs_per_cpu_s": round(n / max(cpu, 1e-9)), "workers": workers or "all cores",
            "peak_rss_mb": round(m.peak_rss_mb), "loadavg_1min_after": round(os.getloadavg()[0], 2),
            "verdict": report["verdict"], "report_seconds": report["seconds"],
            "timings": report["timings"], "counts": check["counts"], "counters": d["counters"],
            "bands": d["bands"], "rows": d["rows"], "config_key": d["config"],
            "params": f"threshold {d['threshold']}, num_perm {NUM_PERM}, LSH {d['bands']}x{d['rows']}, "
                      "exact verification",
            "findings_parsed": parsed, "plan": d["report_lines"][0]}
    info["_labels"], info["_pairs"] = labels, np.array(pairs, dtype=np.int64).reshape(-1, 2)
    print(f"  gate-cli: {m.seconds:.1f} s, {m.peak_rss_mb:.0f} MB, timings {report['timings']}", flush=True)
    return info


def exact_jaccards(corpus: Path, pairs: list[tuple[int, int]]) -> list[float]:
    """Exact Jaccard of the 5-gram sets (string shingles, independent of gate's hashing) of each pair."""
    need = sorted({i for p in pairs for i in p})
    sets: dict[int, set[str]] = {}
    pos = 0
    k = 0
    for chunk in text_chunks(corpus):
        while k < len(need) and need[k] < pos + len(chunk):
            sets[need[k]] = shingle_set(chunk[need[k] - pos])
            k += 1
        pos += len(chunk)
    out = []
    for a, b in pairs:
        sa, sb = sets[a], sets[b]
        union = len(sa | sb)
        out.append(len(sa & sb) / union if union else 0.0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--work", type=Path, default=ROOT / "bench" / "data")
    ap.add_argument("--sample", type=int, default=2000, help="reported pairs sampled per engine for precision")
    ap.add_argument("--seed", type=int, default=20260)
    ap.add_argument("--repeat", type=int, default=3, help="rounds over all engines; each keeps its fastest")
    ap.add_argument("--engine", choices=ENGINES, help=argparse.SUPPRESS)
    ap.add_argument("--corpus", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.engine:
        run_engine(args.engine, args.corpus, args.out)
        return

    t_start = time.perf_counter()
    load_before = round(os.getloadavg()[0], 2)
    base = args.work / f"neardup-{args.rows}"
    dataset = generate(args.rows, base / "data")
    corpus = dataset / "train.jsonl"
    out_dir = base / "out"
    out_dir.mkdir(parents=True, exist_ok=True)
    n = sum(1 for _ in open(corpus, "rb"))
    planted = [(a - 1, b - 1) for a, b in json.loads((dataset / "PAIRS.json").read_text())]

    from gate.contract import load_contract

    contract = load_contract(CONTRACT)
    if tuple(contract.text_roles) != ROLES or bool(contract.include_tool_calls) != TOOL_CALLS:
        raise SystemExit(f"contract text roles {contract.text_roles} / tool calls {contract.include_tool_calls} "
                         f"differ from the benchmark's {ROLES} / {TOOL_CALLS}")

    print(f"corpus: {n:,} rows, {len(planted):,} planted pairs, {corpus.stat().st_size / 2**20:.0f} MiB", flush=True)
    # repeats go round-robin over the engines, so a burst of load from elsewhere hits them alike; best wall time wins
    runs: dict[str, dict[str, Any]] = {}
    all_seconds: dict[str, list[float]] = defaultdict(list)
    # round 1 also samples memory (the smaps of every process every 20 ms); later rounds time the tools alone,
    # since that sampling takes CPU that a tool with worker processes misses more on two cores
    peak: dict[str, int] = {}
    for rep in range(args.repeat):
        print(f"round {rep + 1}/{args.repeat} (1-min load average {os.getloadavg()[0]:.2f})", flush=True)
        for name in ("gate-cli", "gate-cli-j1", *ENGINES):
            if name.startswith("gate-cli"):
                r = measure_gate_cli(dataset, base / "report", n, monitor=rep == 0,
                                     workers=1 if name == "gate-cli-j1" else None)
            else:
                r = measure_engine(name, corpus, out_dir, monitor=rep == 0)
            if rep == 0:
                peak[name] = r["peak_rss_mb"]
            all_seconds[name].append(r["seconds"])
            if name not in runs or r["seconds"] < runs[name]["seconds"]:
                runs[name] = r
    for name, r in runs.items():
        r["seconds_all_rounds"] = all_seconds[name]
        r["peak_rss_mb"] = peak[name]
    if runs["gate-cli"]["config_key"] != runs["gate-lib"]["config_key"]:
        raise SystemExit("the CLI's near-dup config differs from NearDupConfig(): the library breakdown would not "
                         "describe the CLI run")

    # quality: exact Jaccard of the planted pairs and of a sample of each engine's reported pairs
    rng = random.Random(args.seed)
    samples = {}
    for name, r in runs.items():
        reported = [tuple(p) for p in r["_pairs"].tolist()]
        samples[name] = rng.sample(reported, min(args.sample, len(reported)))
    all_pairs = sorted(set(planted) | {p for s in samples.values() for p in s})
    jac = dict(zip(all_pairs, exact_jaccards(corpus, all_pairs), strict=True))
    planted_j = np.array([jac[p] for p in planted])
    positives = [p for p in planted if jac[p] >= THRESHOLD]
    for name, r in runs.items():
        labels = r.pop("_labels")
        reported = r.pop("_pairs")
        r["reported_pairs"] = int(len(reported))
        r["recall"] = round(float(np.mean([labels[a] == labels[b] for a, b in positives])), 4)
        r["recall_all_planted"] = round(float(np.mean([labels[a] == labels[b] for a, b in planted])), 4)
        counts = np.bincount(labels, minlength=n)
        r["clusters"] = int((counts > 1).sum())
        r["rows_in_clusters"] = int(counts[counts > 1].sum())
        s = samples[name]
        r["precision_sample"] = len(s)
        r["precision"] = round(float(np.mean([jac[p] >= THRESHOLD for p in s])), 4) if s else None

    import datasketch

    def speed(a: str, b: str) -> float:
        return round(runs[b]["seconds"] / runs[a]["seconds"], 2)

    def per_cpu(a: str, b: str) -> float:
        return round(runs[b]["cpu_s"] / max(runs[a]["cpu_s"], 1e-9), 2)

    peers = ("datasketch-default", "datasketch-16x6", "rensa-16x8")
    ratios = {f"{a}/{b}": speed(a, b) for a in ("gate-cli", "gate-cli-j1", "gate-lib") for b in peers}
    cpu_ratios = {f"{a}/{b}": per_cpu(a, b) for a in ("gate-cli", "gate-cli-j1", "gate-lib") for b in peers}
    results: dict[str, Any] = {
        "benchmark": "neardup", "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "cpus_usable": len(os.sched_getaffinity(0)),
                    "python": platform.python_version(), "platform": platform.platform(),
                    "processor": platform.processor() or platform.machine(),
                    "loadavg_1min_before": load_before, "loadavg_1min_after": round(os.getloadavg()[0], 2)},
        "versions": {"gate": importlib.metadata.version("finetune-gate"), "datasketch": datasketch.__version__,
                     "rensa": importlib.metadata.version("rensa"), "numpy": np.__version__,
                     "orjson": importlib.metadata.version("orjson")},
        "corpus": {"rows": n, "bytes": corpus.stat().st_size, "planted_pairs": len(planted),
                   "planted_ge_threshold": len(positives),
                   "planted_jaccard_min_median_max": [round(float(q), 3) for q in np.quantile(planted_j, [0, .5, 1])],
                   "generator": "fixtures/generate.py --kind tool-use --near-dup-rate 0.05",
                   "text": "row_text(row, ('user', 'assistant'), True)", "shingles": "word 5-grams after gate's "
                   "normalisation (gate.dedup.shingles.tokenize)"},
        "threshold": THRESHOLD, "precision_sample_seed": args.seed, "repeat": args.repeat,
        "runs": runs,
        "speed_ratios": ratios,
        "speed_ratio_meaning": "peer seconds / gate seconds, end to end (> 1: gate faster)",
        "cpu_ratios": cpu_ratios,
        "cpu_ratio_meaning": "peer CPU seconds / gate CPU seconds (user + sys of the process tree; > 1: gate "
                             "does the work in less CPU)",
        "targets": {"faster_than_datasketch": ratios["gate-cli/datasketch-default"] > 1,
                    "at_least_as_fast_as_rensa": ratios["gate-cli/rensa-16x8"] >= 1,
                    "recall_ge_0.99": runs["gate-cli"]["recall"] >= 0.99,
                    "precision_1.0": runs["gate-cli"]["precision"] == 1.0},
        "bench_seconds": round(time.perf_counter() - t_start, 1),
    }
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "neardup.json").write_text(json.dumps(results, indent=2) + "\n")
    md = render_md(results)
    (out / "neardup.md").write_text(md)
    print(md)


LABELS = {"gate-cli": "gate CLI (`gate check --checks near_duplicate`)",
          "gate-cli-j1": "gate CLI, one process (`gate check -j 1`)",
          "gate-lib": "gate library (`find_near_duplicates`, in-process)",
          "datasketch-default": "datasketch `MinHash.bulk` + `MinHashLSH` (defaults)",
          "datasketch-16x6": "datasketch `MinHash.bulk` + `MinHashLSH(params=(16, 6))`",
          "rensa-16x8": "rensa `RMinHash` + `RMinHashLSH`"}


def render_md(res: dict[str, Any]) -> str:
    runs, c, v, mach = res["runs"], res["corpus"], res["versions"], res["machine"]
    md = ["# Near-duplicate detection: gate vs datasketch vs rensa", "",
          f"{res['date']}, {mach['cpus']} CPUs (1-min load average {mach['loadavg_1min_before']} before, "
          f"{mach['loadavg_1min_after']} after), Python {mach['python']}; datasketch {v['datasketch']}, rensa "
          f"{v['rensa']}, numpy {v['numpy']}. Corpus: {c['rows']:,} tool-use rows ({c['bytes'] / 2**20:.0f} MiB), "
          f"{c['planted_pairs']:,} planted near-duplicate pairs ({c['planted_ge_threshold']:,} with exact Jaccard >= "
          f"{res['threshold']}; min/median/max {'/'.join(map(str, c['planted_jaccard_min_median_max']))}).", "",
          f"Each run is its own process, from reading the JSONL to clusters; best of {res['repeat']} round(s) "
          "(round 1 also samples peak memory every 20 ms, later rounds run unobserved) "
          "(all rounds' seconds are in the JSON); peak RSS is the whole process tree. Same "
          "text and tokens for all (word 5-grams after gate's normalisation). Recall: planted pairs with exact "
          f"J >= {res['threshold']} that end in one cluster. Precision: a seeded sample of each tool's reported pairs "
          "(LSH candidates for the peers, which do not verify; gate's verified pairs / findings) with exact "
          f"J >= {res['threshold']}.", "",
          "| tool | params | seconds | docs/s | CPU s | docs/CPU s | peak RSS MB | recall | precision (sample) "
          "| reported pairs |",
          "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, r in runs.items():
        md.append(f"| {LABELS[name]} | {r['params']} | {r['seconds']} | {r['docs_per_s']:,} | {r['cpu_s']} | "
                  f"{r['docs_per_cpu_s']:,} | {r['peak_rss_mb']:,} | "
                  f"{r['recall']:.4f} | {r['precision']:.4f} ({r['precision_sample']:,}) | "
                  f"{r['reported_pairs']:,} |")
    ratios = res["speed_ratios"]
    md += ["", "Speed ratios (peer seconds / gate seconds, end to end; > 1 means gate is faster):", ""]
    for key, val in ratios.items():
        md.append(f"- {key}: **{val}x**")
    md += ["", "Per CPU second (peer CPU s / gate CPU s, process tree user + sys; the per-core comparison, e.g. "
           "`gate-cli-j1/rensa-16x8` is one process against single-threaded rensa):", ""]
    for key, val in res.get("cpu_ratios", {}).items():
        md.append(f"- {key}: **{val}x**")
    t = res["targets"]
    md += ["", "Targets (gate CLI): faster than datasketch: " + ("met" if t["faster_than_datasketch"] else "NOT met")
           + "; at least as fast as rensa: " + ("met" if t["at_least_as_fast_as_rensa"] else "NOT met")
           + "; recall >= 0.99: " + ("met" if t["recall_ge_0.99"] else "NOT met")
           + "; precision 1.0: " + ("met" if t["precision_1.0"] else "NOT met") + ".", ""]
    cli, lib = runs["gate-cli"], runs["gate-lib"]
    md += ["## Where the time goes", "",
           f"gate CLI report timings (s): {', '.join(f'{k} {v}' for k, v in cli['timings'].items())} "
           f"(report total {cli['report_seconds']} s; the rest of {cli['seconds']} s is interpreter start and "
           "imports). Against the library run: reading + mapping "
           f"{cli['timings']['read_and_map']} s vs {lib['stages']['read+text']} s (`orjson.loads` + `row_text`, "
           f"row by row); near_duplicate finish {cli['timings']['finish.near_duplicate']} s vs "
           f"`find_near_duplicates` {lib['stages']['find_near_duplicates']} s.", "",
           "gate library, in-process (s): " + ", ".join(f"{k} {v}" for k, v in lib["stages"].items())
           + "; inside `find_near_duplicates`: "
           + ", ".join(f"{k} {v}" for k, v in lib["find_near_duplicates_breakdown"].items()) + ".", ""]
    for name in ("datasketch-default", "datasketch-16x6", "rensa-16x8"):
        md.append(f"{name} (s): " + ", ".join(f"{k} {v}" for k, v in runs[name]["stages"].items()) + ".")
        md.append("")
    md += ["## gate's detection curve", "", f"`{lib['plan']}`", ""]
    return "\n".join(md)


if __name__ == "__main__":
    main()
