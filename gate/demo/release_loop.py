"""The release half of `gate demo`: split, train, score, decide, record, promote, report, as a user would.

Every step is the real `gate` command run as a subprocess, printed before it runs, so the demo doubles as a
transcript of the workflow (and proves the commands compose through their files, exit codes and the DuckDB
record, not through shared in-process state). Each step states the exit code it must give; any other outcome
stops the demo with exit 1.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from gate.demo.paths import ROOT, cache_dir  # the checkout, or the files the wheel ships (gate.demo.paths)
from gate.errors import ExitCode, GateError

TINY_MODEL = cache_dir() / "models" / "tiny-llama"
GOOD_STEPS = 250  # measured: enough for the random tiny model to learn the triage JSON (bench/train_local_triage.py)
WEAK_STEPS = 12   # too few to learn anything: the candidate that must be blocked


@dataclass
class Step:
    title: str
    argv: list[str]
    expect: int
    code: int = -1
    seconds: float = 0.0
    tail: str = ""


@dataclass
class Transcript:
    steps: list[Step] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(s.code == s.expect for s in self.steps)


def _run(t: Transcript, console: Any, title: str, argv: list[str], expect: int, env: dict[str, str]) -> Step:
    step = Step(title, argv, expect)
    t.steps.append(step)
    shown = " ".join(shlex.quote(a) for a in ["gate", *argv])
    console.print(f"\n[bold]{title}[/]\n[dim]$ {shown}[/]", soft_wrap=True, highlight=False)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "gate", *argv], cwd=ROOT, env=env, capture_output=True, text=True)
    step.seconds = time.perf_counter() - t0
    step.code = proc.returncode
    out = (proc.stdout + proc.stderr).rstrip()
    step.tail = "\n".join(out.splitlines()[-12:])
    if out:
        console.print(step.tail, markup=False, highlight=False, soft_wrap=True)
    verdict = "as expected" if step.code == expect else f"[bold red]expected exit {expect}[/]"
    console.print(f"[dim]exit {step.code} ({verdict}[dim], {step.seconds:.1f} s)[/]")
    if step.code != expect:
        raise GateError(f"demo step failed: {title}: `{shown}` exited {step.code}, expected {expect}")
    return step


def _json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise GateError(f"demo: expected output missing or unreadable ({exc})", file=str(path)) from None


def _write_spec(path: Path, *, name: str, data: Path, steps: int, out: Path, checks: list[str]) -> None:
    """A training spec derived from trainspecs/triage-local.yaml, pointing at this demo's data and folders."""
    spec = yaml.safe_load((ROOT / "trainspecs" / "triage-local.yaml").read_text())
    spec.update(name=name, steps=steps, output_dir=str(out), checks=checks)
    spec["base_model"]["path"] = str(TINY_MODEL)
    spec["data"] = {"train": str(data), "val": str(data)}
    path.write_text(yaml.safe_dump(spec, sort_keys=False))


def run_release_loop(out_dir: str | Path, db: str, check_runs: dict[str, str], console: Any,
                     release_ids: tuple[str, str] = ("demo-a", "demo-b")) -> Transcript:
    """check_runs: dataset name -> `gate check` run id from the data door (triage-clean, triage-faulty).

    `release_ids`: the ids of release A and B; the demo picks ones its record does not hold yet, so a rerun into
    the same record (`--db`, GATE_DB) records new releases instead of failing on `release 'demo-a' exists`."""
    id_a, id_b = release_ids
    out = Path(out_dir).resolve()
    work = out / "loop"
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "GATE_DB": db, "CI": os.environ.get("CI", "1")}
    t = Transcript()
    if not (TINY_MODEL / "config.json").exists():
        console.print("\n[bold]Build the tiny base model (random init, local tokenizer)[/]")
        proc = subprocess.run([sys.executable, str(ROOT / "fixtures" / "build_tiny_model.py"),
                               str(TINY_MODEL.parent)], cwd=ROOT,
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise GateError(f"demo: building the tiny model failed: {proc.stderr.strip()[-300:]}")
    contract = str(ROOT / "contracts" / "triage.yaml")
    scorecard = str(ROOT / "scorecards" / "triage.yaml")
    split_dir = work / "triage-split"
    if split_dir.exists():
        import shutil

        shutil.rmtree(split_dir)
    # A team re-splits all triage rows by customer. The gate checks the new split before anyone trains on it:
    # customers differ, but some tickets share 13-word passages with tickets that land in the new test split, so
    # `contamination` blocks it (exit 100). Training then uses the fixture's own checked split (the data door).
    _run(t, console, "1. Re-split all triage data by customer (80/10/10; no customer in two splits)",
         ["split", str(ROOT / "fixtures" / "datasets" / "triage-clean"), "-c", contract, "-o", str(split_dir)],
         0, env)
    _run(t, console, "2. Check the re-split before training on it: contamination with its new test split blocks it",
         ["check", str(split_dir), "-c", contract, "-o", str(work / "check-split"), "-q"],
         int(ExitCode.GATE_FAILED), env)
    split_run = check_runs["triage-clean"]  # the data door's PASS on the fixture's own split
    clean = ROOT / "fixtures" / "datasets" / "triage-clean"

    good_spec, weak_spec = work / "train-good.yaml", work / "train-weak.yaml"
    _write_spec(good_spec, name="demo-good", data=clean / "train.jsonl", steps=GOOD_STEPS,
                out=work / "run-good", checks=[split_run])
    _write_spec(weak_spec, name="demo-weak", data=ROOT / "fixtures" / "datasets" / "triage-faulty" / "train.jsonl",
                steps=WEAK_STEPS, out=work / "run-weak", checks=[check_runs["triage-faulty"]])
    _run(t, console, f"3. Train candidate A on the checked triage-clean train split ({GOOD_STEPS} steps, local)",
         ["train", str(good_spec), "--runner", "local", "-q"], 0, env)
    _run(t, console, f"4. Train candidate B: too briefly ({WEAK_STEPS} steps) and on the FAULTY data",
         ["train", str(weak_spec), "--runner", "local", "-q"], 0, env)
    good_ckpt, weak_ckpt = work / "run-good" / "checkpoint-final", work / "run-weak" / "checkpoint-final"

    _run(t, console, "5. Score candidate A against the frozen baseline; the scorecard's gates decide",
         ["score", str(good_ckpt), "--baseline", str(TINY_MODEL), "-s", scorecard, "-o", str(work / "score-a")],
         0, env)
    dec_a = _json(work / "score-a" / "decision.json")
    train_a = _json(good_ckpt / "MANIFEST.json")["run_id"]
    _run(t, console, "6. Record release A with its provenance (decision, data checks, training run)",
         ["release", "create", "--decision", dec_a["decision_id"], "--id", id_a, "--base-model", str(TINY_MODEL),
          "--tokenizer", str(good_ckpt), "-s", scorecard, "--data-check", split_run, "--training-run", train_a,
          "--by", "gate-demo"], 0, env)
    _run(t, console, "7. Promote release A: PROMOTE decision and passing data checks, so `current` moves",
         ["promote", id_a, "--by", "gate-demo"], 0, env)

    _run(t, console, "8. Score candidate B the same way: expected BLOCK (exit 100)",
         ["score", str(weak_ckpt), "--baseline", str(TINY_MODEL), "-s", scorecard, "-o", str(work / "score-b")],
         int(ExitCode.GATE_FAILED), env)
    dec_b = _json(work / "score-b" / "decision.json")
    train_b = _json(weak_ckpt / "MANIFEST.json")["run_id"]
    _run(t, console, "9. Record release B (its training data failed `gate check`)",
         ["release", "create", "--decision", dec_b["decision_id"], "--id", id_b, "--base-model", str(TINY_MODEL),
          "--tokenizer", str(weak_ckpt), "-s", scorecard, "--data-check", check_runs["triage-faulty"],
          "--training-run", train_b, "--by", "gate-demo"], 0, env)
    _run(t, console, "10. Try to promote release B: refused (exit 100), `current` stays on A",
         ["promote", id_b, "--by", "gate-demo"], int(ExitCode.GATE_FAILED), env)
    _run(t, console, "11. Write the static HTML release report (plotly.js bundled, no CDN)",
         ["report-html", id_a, "-o", str(out / "release-report")], 0, env)
    return t
