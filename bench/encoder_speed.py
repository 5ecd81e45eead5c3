"""Sentence-encoder speed, alone and inside `gate check`, written to bench/results/encoder_speed.md (issue 32 item 2).

Texts nobody here wrote: the MRPC sentences (magsail/MRPC, short: 20 words on average) and GSM8K worked answers
(openai/grade-school-math, long: about 100 words, many past the 256 tokens all-MiniLM-L6-v2 reads), from git mirrors
(the `fetch` tool's layout). Measured:

- the encoder alone (gate.embed.encoder.Encoder) at 1 and 2 torch threads, batch 64 sorted by length, in the
  precision `auto` picks on this CPU and in fp32; texts per second of wall time and per CPU-second (process time);
  the largest cosine difference between the two precisions over pairs of the same texts (the tolerance);
- the whole `gate check --checks semantic_duplicate` on the same texts as rows (its own workers), CPU seconds of the
  process tree, texts per second of wall time.

    .venv/bin/python bench/encoder_speed.py [--mirrors /work/.mirror] [--short 4000] [--long 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.measure import measure_command  # noqa: E402
from bench.semantic_dedup import read_pairs  # noqa: E402

OUT = ROOT / "bench" / "results" / "encoder_speed.md"


def gsm8k_answers(mirrors: Path, n: int) -> list[str]:
    raw = subprocess.run(["git", f"--git-dir={mirrors / 'openai+grade-school-math' / 'repo'}", "show",
                          "3101c7d:grade_school_math/data/train.jsonl"], capture_output=True, check=True).stdout
    return [json.loads(line)["answer"] for line in raw.decode().splitlines()[:n]]


def alone(texts: list[str], threads: int, precision: str) -> tuple[dict, np.ndarray]:
    from gate.embed.encoder import Encoder
    from gate.embed.model import ensure_model

    enc = Encoder(ensure_model(), threads=threads, precision=precision)
    enc.encode(texts[:64])  # warm
    t0, c0 = time.perf_counter(), time.process_time()
    emb = enc.encode(texts)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"threads": threads, "precision": enc.precision, "texts_per_s": round(len(texts) / wall),
            "texts_per_cpu_s": round(len(texts) / cpu)}, emb


def in_check(texts: list[str], name: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        (t / "ds").mkdir()
        with open(t / "ds" / "train.jsonl", "w") as f:
            for i, text in enumerate(texts):
                f.write(json.dumps({"id": f"{name}-{i}", "messages": [{"role": "user", "content": text},
                                                                      {"role": "assistant", "content": "ok"}]}) + "\n")
        contract = {"name": name, "version": "1", "messages": {"roles": ["user", "assistant"]},
                    "text": {"roles": ["user"]}, "checks": {"semantic_duplicate": {"enabled": True}}}
        (t / "c.yaml").write_text(json.dumps(contract))
        cmd = [str(ROOT / ".venv" / "bin" / "gate"), "check", str(t / "ds"), "-c", str(t / "c.yaml"), "--checks",
               "semantic_duplicate", "-o", str(t / "r"), "--no-db", "-q", "-j", "2"]
        m = measure_command(f"gate check semantic_duplicate ({name})", cmd, env={**os.environ}, cwd=t,
                            rows=len(texts))
        m["texts_per_cpu_s"] = round(len(texts) / m["cpu_s"])
        return m


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mirrors", type=Path, default=Path(os.environ.get("GATE_MIRRORS", "/work/.mirror")))
    ap.add_argument("--short", type=int, default=4000)
    ap.add_argument("--long", type=int, default=1000)
    args = ap.parse_args()
    pairs = read_pairs(args.mirrors / "magsail+MRPC" / "repo")
    short = list(dict.fromkeys(t for _, a, b in pairs for t in (a, b)))[:args.short]
    long = gsm8k_answers(args.mirrors, args.long)
    rows = []
    for label, texts in (("short (MRPC sentences)", short), ("long (GSM8K worked answers)", long)):
        runs = []
        for threads in (1, 2):
            r, emb = alone(texts, threads, "auto")
            runs.append(r)
        r32, emb32 = alone(texts, 2, "fp32")
        runs.append(r32)
        # the tolerance: cosines of consecutive texts in each precision
        a, b = emb[:-1], emb[1:]
        a32, b32 = emb32[:-1], emb32[1:]
        diff = float(np.abs((a * b).sum(1) - (a32 * b32).sum(1)).max())
        check = in_check(texts, "short" if label.startswith("short") else "long")
        rows.append((label, len(texts), runs, diff, check))
        print(label, runs, diff, check, flush=True)
    load = os.getloadavg()[0]
    lines = ["# Sentence-encoder speed (issue 32 item 2)", "",
             "`.venv/bin/python bench/encoder_speed.py` on this machine (2 cores; load average "
             f"{load:.2f} at the end). all-MiniLM-L6-v2 (gate.embed), batch 64 sorted by token length, truncated "
             "at the model's 256 tokens. Texts: MRPC sentences (magsail/MRPC) and GSM8K worked answers "
             "(openai/grade-school-math @ 3101c7d), read from git mirrors.", "",
             "| texts | n | encoder alone: threads, precision, texts/s wall, texts per CPU-s | `gate check --checks "
             "semantic_duplicate -j 2`: wall s, CPU s, texts/s wall | largest cosine change, bf16 vs fp32 |",
             "| --- | ---: | --- | --- | ---: |"]
    for label, n, runs, diff, check in rows:
        enc = "; ".join(f"{r['threads']} thread(s) {r['precision']}: {r['texts_per_s']} /s, {r['texts_per_cpu_s']} "
                        "per CPU-s" for r in runs)
        lines.append(f"| {label} | {n:,} | {enc} | {check['seconds']} s, {check['cpu_s']} CPU s, "
                     f"{round(n / check['seconds'])} texts/s | {diff:.4f} |")
    lines += ["", "The check's figure includes starting gate, reading the rows, loading the model in each of its two "
              "worker processes (one torch thread each) and the pair search; the encoder's own rate is the middle "
              "column. Target: >= 200 texts/s on 2 cores for short texts."]
    OUT.write_text("\n".join(lines) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
