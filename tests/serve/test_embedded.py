"""The embedded engine on the tiny locally built model: deterministic, batched, LoRA-aware."""

from __future__ import annotations

import dataclasses

import pytest

pytest.importorskip("torch")
pytest.importorskip("peft")

from fixtures.build_tiny_model import build
from gate.engines.embedded import EmbeddedEngine
from gate.engines.types import Request

TOOLS = ({"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}},)


@pytest.fixture(scope="module")
def tiny():
    return build()


@pytest.fixture(scope="module")
def engine(tiny):
    e = EmbeddedEngine(tiny[0], batch_size=4)
    e.start()
    return e


def reqs(n: int = 6, **kw) -> list[Request]:
    return [Request(messages=({"role": "user", "content": f"ticket {i}: my invoice is wrong"},), max_tokens=10, **kw)
            for i in range(n)]


def test_greedy_is_deterministic_across_calls_and_batch_layouts(engine, tiny):
    a = engine.generate(reqs())
    b = engine.generate(reqs())
    assert [r.text for r in a] == [r.text for r in b]
    assert all(r.error is None and r.finish_reason in ("stop", "length") and r.completion_tokens for r in a)
    single = EmbeddedEngine(tiny[0], batch_size=1).generate(reqs()[:2])
    assert [r.text for r in single] == [r.text for r in a[:2]]


def test_logprobs_and_tools_requests(engine):
    lp = engine.generate(reqs(1, logprobs=True))[0]
    assert lp.logprobs and all(x <= 0 for x in lp.logprobs)
    tool = engine.generate([dataclasses.replace(reqs(1)[0], tools=TOOLS)])[0]
    assert tool.error is None and tool.raw["raw_text"] is not None


def test_adapter_changes_answers_and_identity(engine, tiny):
    lora = EmbeddedEngine(tiny[0], adapter=tiny[1], batch_size=4)
    assert [r.text for r in lora.generate(reqs(3))] != [r.text for r in engine.generate(reqs(3))]
    assert lora.identity.adapter_hash and lora.identity.model_hash == engine.identity.model_hash
    assert lora.identity.fingerprint() != engine.identity.fingerprint()
    assert engine.identity.chat_template_hash and "tool_format=hermes" in engine.identity.flags


def test_bad_model_dir_is_one_line_engine_error(tmp_path):
    from gate.engines.engine import EngineError

    with pytest.raises(EngineError, match="cannot load model") as ei:
        EmbeddedEngine(tmp_path).start()
    assert "\n" not in str(ei.value)
