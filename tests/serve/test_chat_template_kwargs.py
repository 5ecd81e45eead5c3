"""`prompt.chat_template_kwargs` reaches every engine (issue 16, item 18).

It used to be parsed and dropped: on a GLM-style template the prompt ended in `<think>` instead of `</think>`, so a
scorecard saying `enable_thinking: false` was scored with thinking on. Checked on the rendered prompt (embedded
engine, the real GLM-style template from fixtures/tokenizers/glm-tiny through transformers), on the body a real
local HTTP server receives (the url engine; vLLM and SGLang share the client), and in the cache key.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

from gate.engines.types import Request
from tests.conftest import ROOT, gate_inprocess, write_jsonl

GLM = ROOT / "fixtures" / "tokenizers" / "glm-tiny"
TOOL_USE = ROOT / "scorecards" / "tool-use.yaml"


def _card(tmp: Path, kwargs: dict | None) -> Path:
    write_jsonl(tmp / "suite.jsonl", [{"id": f"q{i}", "messages": [{"role": "user", "content": f"question {i}"}],
                                       "category": "c", "expected": "x"} for i in range(3)])
    prompt = {"chat_template_kwargs": kwargs} if kwargs is not None else {}
    card = {"name": "kw", "version": "1", "suites": [{"name": "s", "path": "suite.jsonl"}], "prompt": prompt,
            "decoding": {"temperature": 0.0, "max_tokens": 8}, "scorers": [{"name": "em", "type": "exact_match"}]}
    path = tmp / "card.yaml"
    path.write_text(yaml.safe_dump(card), encoding="utf-8")
    return path


def _glm_engine():
    pytest.importorskip("transformers")
    from transformers import AutoTokenizer

    from gate.engines.embedded import EmbeddedEngine

    eng = EmbeddedEngine(GLM)
    eng._tok = AutoTokenizer.from_pretrained(GLM)  # rendering needs the tokenizer only; glm-tiny has no weights
    return eng


def test_the_embedded_render_closes_the_think_block_on_a_glm_template() -> None:
    from gate.score.scorecard import load_scorecard

    card = load_scorecard(TOOL_USE)
    assert card.chat_template_kwargs == {"enable_thinking": False}
    req = card.request_for(card.suites[0].items[0])
    assert req.chat_template_kwargs == {"enable_thinking": False}
    eng = _glm_engine()
    assert eng._render(req).endswith("<|assistant|></think>")
    # the same request without the switch opens a think block: the difference the scorecard asks for
    assert eng._render(dataclasses.replace(req, chat_template_kwargs=None)).endswith("<|assistant|><think>")
    # the template's own variables never override how gate renders (generation prompt, text)
    odd = dataclasses.replace(req, chat_template_kwargs={"enable_thinking": False, "add_generation_prompt": False})
    assert eng._render(odd).endswith("<|assistant|></think>")


def test_every_request_body_carries_the_kwargs_through_gate_score(fake, tmp_path: Path) -> None:
    """`gate score --engine url` against a real local HTTP server: each chat/completions body has them."""
    card = _card(tmp_path, {"enable_thinking": False, "clear_thinking": True})
    code, out = gate_inprocess("score", "tiny", "--scorecard", str(card), "--engine", "url", "--base-url", fake.url,
                               "--model-hash", "h", "--db", str(tmp_path / "g.duckdb"), "--out", str(tmp_path / "o"))
    assert code == 0, out
    chats = [b for b in fake.bodies if "messages" in b]
    assert len(chats) == 3
    assert all(b["chat_template_kwargs"] == {"enable_thinking": False, "clear_thinking": True} for b in chats)
    # a scorecard without them sends none (the field is absent, not an empty object)
    fake.bodies.clear()
    plain = tmp_path / "plain"
    plain.mkdir()
    code, out = gate_inprocess("score", "tiny", "--scorecard", str(_card(plain, None)), "--engine", "url",
                               "--base-url", fake.url, "--model-hash", "h", "--db", str(plain / "g.duckdb"),
                               "--out", str(plain / "o"))
    assert code == 0, out
    assert fake.bodies and all("chat_template_kwargs" not in b for b in fake.bodies)


def test_the_kwargs_are_part_of_the_cache_key_and_the_prompt_hash(fake, tmp_path: Path) -> None:
    from gate.engines.cache import CachedEngine, ResponseCache, cache_key
    from gate.engines.engine import request_to_dict
    from gate.engines.url import URLEngine
    from gate.score.run import prompt_hash

    off = Request(messages=({"role": "user", "content": "hi"},), chat_template_kwargs={"enable_thinking": False})
    on = dataclasses.replace(off, chat_template_kwargs={"enable_thinking": True})
    none = dataclasses.replace(off, chat_template_kwargs=None)
    ident = URLEngine(fake.url, "tiny", model_hash="h").identity
    keys = {cache_key(ident, r) for r in (off, on, none)}
    assert len(keys) == 3 and len({prompt_hash(r) for r in (off, on, none)}) == 3
    # a request without them keeps the key it had before the field existed (old caches stay valid)
    assert "chat_template_kwargs" not in request_to_dict(none)
    assert request_to_dict(dataclasses.replace(none, chat_template_kwargs={})) == request_to_dict(none)
    # an answer taken with thinking on is never served to the same question asked with thinking off
    eng = CachedEngine(URLEngine(fake.url, "tiny", model_hash="h"), ResponseCache(tmp_path / "c.duckdb"))
    with eng:
        eng.generate([on])
        calls = fake.calls
        assert eng.generate([on])[0].cached and fake.calls == calls
        assert not eng.generate([off])[0].cached and fake.calls == calls + 1
    assert fake.bodies[-1]["chat_template_kwargs"] == {"enable_thinking": False}


def test_a_site_extra_body_adds_to_the_scorecard_kwargs() -> None:
    from gate.engines.client import build_payload

    req = Request(messages=({"role": "user", "content": "hi"},), chat_template_kwargs={"enable_thinking": False})
    body = build_payload(req, "m", extra_body={"chat_template_kwargs": {"clear_thinking": False}})
    assert body["chat_template_kwargs"] == {"enable_thinking": False, "clear_thinking": False}
