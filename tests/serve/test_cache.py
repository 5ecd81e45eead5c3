"""The response cache: hits are identical and free, and the key moves with everything that can change an answer."""

from __future__ import annotations

import dataclasses

import pytest

from gate.engines.cache import CachedEngine, ResponseCache, cache_key
from gate.engines.engine import EngineIdentity
from gate.engines.types import Request
from gate.engines.url import URLEngine

BASE = Request(messages=({"role": "user", "content": "hi"},))
IDENT = EngineIdentity(engine="vllm", engine_version="0.32.0", model="tiny", model_hash="m1", adapter="a",
                       adapter_hash="a1", flags=("--seed", "0"), chat_template_hash="t1")


def url_engine(fake, **kw) -> URLEngine:
    e = URLEngine(fake.url, "tiny", model_hash="m1", **kw)
    e.start()
    return e


def test_hit_returns_identical_response_marked_cached_without_a_server_call(fake, tmp_path):
    cache = ResponseCache(tmp_path / "c.duckdb")
    eng = CachedEngine(url_engine(fake), cache)
    tools = ({"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}},)
    reqs = [BASE, dataclasses.replace(BASE, tools=tools, logprobs=True)]
    first = eng.generate(reqs)
    assert fake.calls == 2 and not any(r.cached for r in first)
    again = CachedEngine(url_engine(fake), ResponseCache(tmp_path / "c.duckdb")).generate(reqs)
    assert fake.calls == 2
    assert all(r.cached for r in again)
    assert [dataclasses.replace(r, cached=False) for r in again] == first


def test_duplicates_in_one_batch_are_asked_once(fake, tmp_path):
    out = CachedEngine(url_engine(fake), ResponseCache(tmp_path / "c.duckdb")).generate([BASE, BASE, BASE])
    assert fake.calls == 1 and len(out) == 3 and out[0] == out[2]


def test_errors_are_not_cached(fake, tmp_path):
    fake.fail_next = 100
    eng = CachedEngine(URLEngine(fake.url, "tiny", retries=0), ResponseCache(tmp_path / "c.duckdb"))
    assert eng.generate([BASE])[0].error
    fake.fail_next = 0
    assert eng.generate([BASE])[0].error is None and fake.calls == 2


def test_bypass_for_operations_always_asks_the_engine(fake, tmp_path):
    cache = ResponseCache(tmp_path / "c.duckdb")
    CachedEngine(url_engine(fake), cache).generate([BASE])
    out = CachedEngine(url_engine(fake), cache, bypass=True).generate([BASE])
    assert fake.calls == 2 and not out[0].cached


def test_epoch_separates_answers(fake, tmp_path):
    cache = ResponseCache(tmp_path / "c.duckdb")
    CachedEngine(url_engine(fake), cache, epoch=0).generate([BASE])
    CachedEngine(url_engine(fake), cache, epoch=1).generate([BASE])
    assert fake.calls == 2 and cache.count() == 2


REQUEST_CHANGES = {
    "messages": ({"role": "user", "content": "hi!"},),
    "tools": ({"type": "function", "function": {"name": "f"}},),
    "tool_choice": "required",
    "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {}}},
    "temperature": 0.7,
    "top_p": 0.9,
    "max_tokens": 17,
    "seed": 1,
    "logprobs": True,
    "stop": ("\n",),
    "chat_template_kwargs": {"enable_thinking": False},
}


def test_every_request_field_is_covered():
    assert set(REQUEST_CHANGES) == {f.name for f in dataclasses.fields(Request)}


@pytest.mark.parametrize("name", sorted(REQUEST_CHANGES))
def test_key_changes_with_each_request_field(name):
    assert cache_key(IDENT, BASE) != cache_key(IDENT, dataclasses.replace(BASE, **{name: REQUEST_CHANGES[name]}))


@pytest.mark.parametrize("name,value", [("engine", "sglang"), ("engine_version", "0.33.0"), ("model", "x"),
                                        ("model_hash", "m2"), ("adapter", "b"), ("adapter_hash", "a2"),
                                        ("flags", ("--seed", "1")), ("chat_template_hash", "t2"),
                                        ("extra", {"extra_body": "{}"})])
def test_key_changes_with_each_identity_field(name, value):
    assert cache_key(IDENT, BASE) != cache_key(dataclasses.replace(IDENT, **{name: value}), BASE)


def test_key_is_stable_and_moves_with_epoch():
    same = Request(messages=({"content": "hi", "role": "user"},))  # key order inside a message does not matter
    assert cache_key(IDENT, BASE) == cache_key(IDENT, same)
    assert cache_key(IDENT, BASE, 0) != cache_key(IDENT, BASE, 1)
