"""Crash safety: `gate scrub`, `gate split` and `gate export` killed with SIGKILL at random moments, 50 times
each (GATE_CRASH_RUNS, shared by GATE_CRASH_LANES sequences side by side, default 2 on a multi-core machine):
the input is byte-for-byte unchanged, the output directory is either absent or complete (MANIFEST.json lists
exactly the files there, with matching hashes and row counts, and equals an uninterrupted run), and the next
run cleans up what the killed ones left behind.

None of the three commands writes DuckDB (only `gate check` and `gate score` record runs), so there is no
database to verify here.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures" / "datasets"
RUNS = int(os.environ.get("GATE_CRASH_RUNS", "50"))
LANES = max(1, min(2, int(os.environ.get("GATE_CRASH_LANES", os.cpu_count() or 1))))
GATE = Path(sys.executable).parent / "gate"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _tree(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): _sha(p) for p in sorted(root.rglob("*")) if p.is_file()}


def _env() -> dict[str, str]:
    env = {**os.environ, "CI": "true"}
    for key in ("GATE_DEBUG", "GITHUB_ACTIONS"):
        env.pop(key, None)
    return env


def _complete(out: Path) -> dict[str, str]:
    """Asserts `out` is a finished output: MANIFEST.json lists exactly the files present, hashes and rows agree."""
    manifest = json.loads((out / "MANIFEST.json").read_text())
    listed = {f["file"]: f for f in manifest["files"]}
    present = _tree(out)
    present.pop("MANIFEST.json")
    assert set(present) == set(listed), f"files {sorted(present)} but manifest lists {sorted(listed)}"
    for name, entry in listed.items():
        assert present[name] == entry["sha256"], f"{name}: hash differs from the manifest"
        if "rows" in entry:
            assert (out / name).read_bytes().count(b"\n") == entry["rows"], f"{name}: row count differs"
    return present


def _scrub_case(work: Path) -> tuple[list[str], list[Path]]:
    """Scrub reads a small slice with planted PII and a secret (presidio's start-up is the slow part);
    pattern-only PII, no NER model to load, so a run takes about two seconds."""
    data = work / "scrub-in"
    data.mkdir()
    for split, n in (("train", 60), ("val", 15), ("test", 15)):
        lines = (FIXTURES / "triage-faulty" / f"{split}.jsonl").read_bytes().splitlines(keepends=True)
        (data / f"{split}.jsonl").write_bytes(b"".join(lines[:n]))
    doc = yaml.safe_load((ROOT / "contracts" / "triage.yaml").read_text())
    doc["evaluation_sets"] = [str((ROOT / "contracts" / p).resolve()) for p in doc.get("evaluation_sets", [])]
    doc.setdefault("checks", {})["pii"] = {"use_ner": False}
    contract = work / "scrub-contract.yaml"
    contract.write_text(yaml.safe_dump(doc))
    return ["scrub", str(data), "-c", str(contract)], [data, contract]


def _split_case(work: Path) -> tuple[list[str], list[Path]]:
    data = work / "split-in"
    shutil.copytree(FIXTURES / "triage-faulty", data)
    return ["split", str(data), "-c", str(ROOT / "contracts" / "triage.yaml"), "--drop-ungrouped"], \
        [data, ROOT / "contracts" / "triage.yaml"]


def _export_case(work: Path) -> tuple[list[str], list[Path]]:
    data = work / "export-in"
    shutil.copytree(FIXTURES / "tool-use-clean", data)
    return ["export", str(data), "-f", "ms-swift"], [data]


def _inputs_digest(paths: list[Path]) -> dict[str, str]:
    out: dict[str, str] = {}
    for p in paths:
        out.update({f"{p}/{k}": v for k, v in _tree(p).items()} if p.is_dir() else {str(p): _sha(p)})
    return out


def _run_lane(args: list[str], inputs: list[Path], before: dict[str, str], expected: dict[str, str],
              out_root: Path, runs: int, full: float, seed: int) -> dict[str, int]:
    """One sequence of runs into `out_root/out`, each killed at its point or left to finish.

    Kill points are stratified over the measured run time (one in each of `runs` equal slices of 0.05-1.02 x
    the run time, in random order), so every phase (start-up, spooling, writing, the final renames) is hit
    whatever the seed; the runs that finish are those that beat their kill point. The run time is re-measured
    on every run that finishes (a shared machine speeds up and slows down).
    """
    out_root.mkdir()
    out = out_root / "out"
    rng = random.Random(seed)
    fractions = [0.05 + 0.97 * (i + rng.random()) / runs for i in range(runs)]
    rng.shuffle(fractions)
    outcomes = {"killed": 0, "finished": 0, "absent": 0, "complete": 0, "leftovers": 0}
    for i, fraction in enumerate(fractions):
        if i % 2 == 0 and out.exists():  # half the runs write a fresh output, half replace a finished one
            shutil.rmtree(out)
        t0 = time.monotonic()
        proc = subprocess.Popen([str(GATE), *args, "-o", str(out)], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, env=_env(), start_new_session=True)
        try:
            proc.wait(timeout=fraction * full)
            outcomes["finished"] += 1
            full = (full + time.monotonic() - t0) / 2
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the whole run, workers included, as a crash would
            proc.wait()
            outcomes["killed"] += 1
        assert _inputs_digest(inputs) == before, f"run {i}: an input changed"
        if out.exists():
            assert _complete(out) == expected, f"run {i}: a complete output with different content"
            outcomes["complete"] += 1
        else:
            outcomes["absent"] += 1
        outcomes["leftovers"] += sum(1 for p in out_root.iterdir() if p.name != "out")
    # a normal run afterwards succeeds and sweeps the temporary directories the killed runs left behind
    res = subprocess.run([str(GATE), *args, "-o", str(out)], capture_output=True, text=True, env=_env(), timeout=600)
    assert res.returncode == 0, res.stderr
    assert _complete(out) == expected
    assert [p.name for p in out_root.iterdir()] == ["out"]
    return outcomes


@pytest.mark.parametrize("make_case", [_scrub_case, _split_case, _export_case], ids=["scrub", "split", "export"])
def test_kill_9_leaves_input_intact_and_output_whole_or_absent(tmp_path, make_case):
    """RUNS kills in all, shared by LANES independent sequences that run side by side (each its own output
    target; the input is shared and read by both), so a 2-core CI machine does them in half the time.
    Takes ~35 s for scrub (presidio start-up ~2 s per run) and ~10 s each for split and export on 2 idle cores."""
    args, inputs = make_case(tmp_path)
    before = _inputs_digest(inputs)
    # the reference runs, one per lane side by side, so the measured run time is the one the lanes will see
    refs = [tmp_path / f"reference-{k}" for k in range(LANES)]
    t0 = time.monotonic()
    procs = [subprocess.Popen([str(GATE), *args, "-o", str(ref)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True, env=_env()) for ref in refs]
    fulls = []
    for proc in procs:
        _, err = proc.communicate(timeout=600)
        fulls.append(time.monotonic() - t0)
        assert proc.returncode == 0, err
    expected = _complete(refs[0])
    if args[0] == "scrub":  # the crash test must cover a scrub that rewrites, not a copy
        assert json.loads((refs[0] / "MANIFEST.json").read_text())["entities_rewritten"], "nothing was scrubbed"
    assert all(_complete(ref) == expected for ref in refs[1:]), "two uninterrupted runs wrote different outputs"

    share = [RUNS // LANES + (k < RUNS % LANES) for k in range(LANES)]
    with ThreadPoolExecutor(LANES) as pool:
        jobs = [pool.submit(_run_lane, args, inputs, before, expected, tmp_path / f"outs-{k}", share[k], fulls[k],
                            20261129 + k) for k in range(LANES)]
        lanes = [job.result() for job in jobs]
    outcomes = {key: sum(lane[key] for lane in lanes) for key in lanes[0]}
    print(f"{args[0]}: full run {min(fulls):.2f} s, {RUNS} runs in {LANES} lanes: {outcomes}")
    assert outcomes["killed"] + outcomes["finished"] == RUNS
    assert outcomes["killed"] >= RUNS // 2, outcomes
