"""Benchmark: render + tokenize + loss mask with the model's chat template, against the plain per-row way.

Side by side, on ~1k-token tool-use conversations from the fixture generator (system prompt, tool catalogue,
user, tool calls, tool results, answers), on 2 worker processes (forked, as `gate check` runs them):

  1. gate: `gate.template.audit.Auditor` on batches (normalise, render with the tokenizer's own template,
     prefix renders only at assistant boundaries, one fast-tokenizer call per batch that tokenizes each new
     piece of text once, mask with stop tokens, plus the checks: text placement, reasoning, control tokens,
     tool-call round trip);
  2. baseline: what a training script does per row: `tokenizer.apply_chat_template(..., tokenize=True)` for
     the conversation and, without `{% generation %}` blocks, for each prefix that bounds an assistant turn
     (NeMo AutoModel's `_build_multiturn_assistant_mask`, memoised), or with them one call with
     `return_assistant_tokens_mask=True`.
  3. end to end: `gate check --checks template,length --tokenizer ...` on the same file (reading, parsing,
     reports included).

Both paths must produce the same token ids; the ratio is gate rows/s over baseline rows/s. Writes
bench/results/template_throughput.{json,md}.

    .venv/bin/python bench/template_throughput.py [--rows 20000] [--baseline-rows 2000] [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")

from bench.measure import run_measured  # noqa: E402

PY = sys.executable
CONTRACT = ROOT / "contracts" / "tool-use.yaml"
TOKENIZERS = ROOT / "fixtures" / "tokenizers"
BATCH = 256

_STATE: dict = {}


def generate(rows: int, out: Path) -> Path:
    if not (out / "train.jsonl").exists():
        subprocess.run([PY, str(ROOT / "fixtures" / "generate.py"), "--scale", str(rows), "--kind", "tool-use",
                        "--near-dup-rate", "0", "--out", str(out)], check=True, stderr=subprocess.DEVNULL)
    return out


# ---------------------------------------------------------------------------------------------- the two paths

def _init(kind: str, tokenizer: str) -> None:
    """Runs in the parent before the pool forks, so workers inherit the loaded tokenizer (as in gate check)."""
    from gate.contract import load_contract
    from gate.contract.model import TokenizerRef
    from gate.template.audit import Auditor
    from gate.template.tokenizer import load_chat_tokenizer

    ct = load_chat_tokenizer(TokenizerRef(str(TOKENIZERS / tokenizer)))
    _STATE.update(kind=kind, ct=ct, auditor=Auditor(ct, None, load_contract(CONTRACT)))


def _gate_batch(lines: list[bytes]) -> tuple[int, int, int, list[list[int]], float]:
    import orjson

    t0 = time.process_time()
    rows = [(i, orjson.loads(line)) for i, line in enumerate(lines)]
    res = _STATE["auditor"].audit(rows)
    return (len(res), sum(r.n_tokens or 0 for r in res), sum(r.n_loss or 0 for r in res), [],
            time.process_time() - t0)


def _messages(row: dict) -> list[dict]:
    """Null keys dropped (as apply_chat_template does); tool-call arguments as dicts only where the template
    needs them (GLM iterates them; what vLLM does before rendering)."""
    messages = [{k: v for k, v in m.items() if v is not None} for m in row["messages"]]
    if not _STATE["ct"].needs_dict_arguments:
        return messages
    out = []
    for m in messages:
        if m.get("tool_calls"):
            m = {**m, "tool_calls": [{**tc, "function": {**tc["function"], "arguments": json.loads(
                tc["function"]["arguments"])}} for tc in m["tool_calls"]]}
        out.append(m)
    return out


def _baseline_row(tok, messages: list[dict], tools: list | None, generation: bool) -> tuple[list[int], list[int]]:
    """Per row, the plain way: apply_chat_template(tokenize=True) and, without generation blocks, a prefix loop."""
    if generation:
        enc = tok.apply_chat_template(messages, tools=tools, tokenize=True, return_dict=True,
                                      return_assistant_tokens_mask=True)
        return list(enc["input_ids"]), list(enc["assistant_masks"])
    full = tok.apply_chat_template(messages, tools=tools, tokenize=True, return_dict=True)["input_ids"]
    lengths = {len(messages): len(full)}

    def prefix(k: int) -> int:
        if k not in lengths:
            ids = tok.apply_chat_template(messages[:k], tools=tools, tokenize=True, return_dict=True)["input_ids"]
            if list(ids) != list(full[: len(ids)]):
                raise ValueError("the chat template rewrites earlier turns")
            lengths[k] = len(ids)
        return lengths[k]

    mask = [0] * len(full)
    for i, m in enumerate(messages):
        if m["role"] == "assistant":
            a, b = prefix(i), prefix(i + 1)
            mask[a:b] = [1] * (b - a)
    return list(full), mask


def _baseline_batch(lines: list[bytes]) -> tuple[int, int, int, list[list[int]], float]:
    t0 = time.process_time()
    tok = _STATE["ct"].hf
    generation = _STATE["ct"].has_generation
    n = toks = loss = 0
    first: list[list[int]] = []
    for line in lines:
        row = json.loads(line)
        ids, mask = _baseline_row(tok, _messages(row), row.get("tools"), generation)
        n += 1
        toks += len(ids)
        loss += sum(mask)
        if len(first) < 2:
            first.append(ids)
    return n, toks, loss, first, time.process_time() - t0


def run_pool(fn, lines: list[bytes], workers: int) -> dict:
    chunks = [lines[k:k + BATCH] for k in range(0, len(lines), BATCH)]
    ctx = mp.get_context("fork")
    with ctx.Pool(workers) as pool:
        pool.map(fn, chunks[:workers])  # warm: the first render compiles, the first batch fills caches
        t0 = time.perf_counter()
        parts = pool.map(fn, chunks)
        dt = time.perf_counter() - t0
    rows = sum(p[0] for p in parts)
    cpu = sum(p[4] for p in parts)
    # CPU seconds the workers used: on a shared box the wall clock includes time the workers waited for a core
    return {"rows": rows, "seconds": round(dt, 3), "rows_per_s": round(rows / dt), "cpu_seconds": round(cpu, 3),
            "rows_per_cpu_s": round(rows / cpu), "rows_per_s_dedicated": round(workers * rows / cpu),
            "tokens_per_row": round(sum(p[1] for p in parts) / rows, 1),
            "loss_tokens_per_row": round(sum(p[2] for p in parts) / rows, 1), "first_ids": parts[0][3]}


def same_ids(lines: list[bytes], n: int = 200) -> bool:
    """Both paths tokenize the first n rows to the same ids (the gate's appended stop token aside)."""
    import orjson

    a = _STATE["auditor"].audit([(i, orjson.loads(x)) for i, x in enumerate(lines[:n])], keep=True)
    tok, gen = _STATE["ct"].hf, _STATE["ct"].has_generation
    for res, line in zip(a, lines[:n], strict=True):
        row = json.loads(line)
        ids, _ = _baseline_row(tok, _messages(row), row.get("tools"), gen)
        appended = len(res.ids) - len(ids)
        if res.ids[: len(ids)] != ids or appended not in (0, 1):
            return False
    return True


# ---------------------------------------------------------------------------------------------- main

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=20000)
    ap.add_argument("--baseline-rows", type=int, default=2000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--data", type=Path, default=ROOT / "bench" / "data" / "template")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = ap.parse_args(argv)

    data = generate(args.rows, args.data / f"tool-use-{args.rows}")
    lines = (data / "train.jsonl").read_bytes().splitlines()
    results: dict = {"started_at": datetime.now(UTC).isoformat(timespec="seconds"), "cpus": os.cpu_count(),
                     "workers": args.workers, "python": platform.python_version(), "rows": len(lines),
                     "load_before": os.getloadavg()[0], "tokenizers": {}}
    import tokenizers
    import transformers

    results["versions"] = {"transformers": transformers.__version__, "tokenizers": tokenizers.__version__}
    for name in ("glm-tiny", "chatml-tiny"):
        _init("tool-use", name)
        gate = run_pool(_gate_batch, lines, args.workers)
        base = run_pool(_baseline_batch, lines[: args.baseline_rows], args.workers)
        equal = same_ids(lines)
        gate.pop("first_ids")
        base.pop("first_ids")
        rep = ROOT / "bench" / "data" / f"template-report-{name}"
        m = run_measured([PY, "-m", "gate", "check", str(data), "--contract", str(CONTRACT), "--tokenizer",
                          str(TOKENIZERS / name), "--checks", "template,length", "--no-db", "-q", "-o", str(rep),
                          "-j", str(args.workers)], env={**os.environ, "CI": "true"})
        results["tokenizers"][name] = {
            "mask": _STATE["auditor"].mode, "gate": gate, "baseline": base, "same_token_ids": equal,
            "ratio": round(gate["rows_per_s"] / base["rows_per_s"], 1),
            "cpu_ratio": round(gate["rows_per_cpu_s"] / base["rows_per_cpu_s"], 1),
            "end_to_end": {"rows": len(lines), "seconds": round(m.seconds, 2),
                           "rows_per_s": round(len(lines) / m.seconds), "peak_rss_mb": round(m.peak_rss_mb),
                           "exit_code": m.returncode}}
        _STATE.clear()
    results["load_after"] = os.getloadavg()[0]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "template_throughput.json").write_text(json.dumps(results, indent=2) + "\n")
    (args.out / "template_throughput.md").write_text(markdown(results))
    print(markdown(results))
    return 0


def markdown(r: dict) -> str:
    lines = ["# Chat template audit: render + tokenize + mask", "",
             f"{r['started_at']}, {r['cpus']} CPUs, {r['workers']} worker processes, Python {r['python']}, "
             f"transformers {r['versions']['transformers']}, tokenizers {r['versions']['tokenizers']}. "
             f"{r['rows']:,} generated tool-use conversations (system prompt, five-tool catalogue, tool calls and "
             f"results, answers). Load average before/after: {r['load_before']:.2f} / {r['load_after']:.2f} "
             f"(a shared box: expect ±20 %).", "",
             "`rows/s` is wall clock; `rows/CPU-s` divides by the CPU time the workers actually got, and "
             "`rows/s, 2 cores` = 2 x that: the rate on two dedicated cores, which a contended box hides.", "",
             "| tokenizer | mask | path | rows | tokens/row | loss tokens/row | seconds | rows/s | rows/CPU-s | "
             "rows/s, 2 cores |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, t in r["tokenizers"].items():
        for label, key in (("gate (batched, cached pieces)", "gate"), ("plain apply_chat_template + prefix loop"
                                                                        if t["mask"] == "prefix" else
                                                                        "plain apply_chat_template "
                                                                        "(assistant mask)", "baseline")):
            x = t[key]
            lines.append(f"| `{name}` | {t['mask']} | {label} | {x['rows']:,} | {x['tokens_per_row']:,} | "
                         f"{x['loss_tokens_per_row']:,} | {x['seconds']} | {x['rows_per_s']:,} | "
                         f"{x['rows_per_cpu_s']:,} | {x['rows_per_s_dedicated']:,} |")
        e = t["end_to_end"]
        lines.append(f"| `{name}` | {t['mask']} | `gate check --checks template,length` (end to end) | "
                     f"{e['rows']:,} | | | {e['seconds']} | {e['rows_per_s']:,} | | |")
    lines += [""]
    for name, t in r["tokenizers"].items():
        g = t["gate"]
        met = "met" if g["rows_per_s_dedicated"] >= 2000 else "NOT met"
        lines.append(f"- `{name}`: gate / plain = **{t['ratio']}x** (wall clock; {t['cpu_ratio']}x per CPU second); "
                     f"same token ids on the first 200 rows: {'yes' if t['same_token_ids'] else 'NO'}; target "
                     f">= 2,000 rows/s on 2 cores: {met} ({g['rows_per_s_dedicated']:,} on two dedicated cores, "
                     f"{g['rows_per_s']:,} wall clock here); end to end peak RSS {t['end_to_end']['peak_rss_mb']} MB.")
    lines += ["", "Loss tokens differ between the paths by design: the gate does not train the role header "
                  "(the generation prompt the model is given) and trains the stop token (GLM: the next role "
                  "token, appended after a final turn); the plain prefix loop trains the header and no stop.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
