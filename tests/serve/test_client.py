"""The HTTP client against a real (small) OpenAI-compatible server: bounds, retries, timeouts, dying servers."""

from __future__ import annotations

import threading
import time

import pytest

from gate.engines.client import OpenAIClient, build_payload
from gate.engines.server import free_port
from gate.engines.types import Request

TOOLS = ({"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}}}},)


def req(text: str = "hi", **kw) -> Request:
    return Request(messages=({"role": "user", "content": text},), **kw)


def client(fake, **kw) -> OpenAIClient:
    kw.setdefault("backoff_s", 0.01)
    return OpenAIClient(fake.url + "/v1", "tiny", **kw)


def test_payload_uses_response_format_never_guided_json():
    schema = {"type": "json_schema", "json_schema": {"name": "t", "schema": {"type": "object"}, "strict": True}}
    body = build_payload(req(response_format=schema, tools=TOOLS, tool_choice="auto", stop=("\n",), logprobs=True),
                         "m", extra_body={"chat_template_kwargs": {"enable_thinking": False}})
    assert body["response_format"] == schema
    assert not any(k.startswith("guided_") for k in body)
    assert body["tools"][0]["function"]["name"] == "get_weather" and body["tool_choice"] == "auto"
    assert body["stop"] == ["\n"] and body["logprobs"] is True and body["seed"] == 0
    assert body["chat_template_kwargs"] == {"enable_thinking": False}
    with pytest.raises(ValueError, match="removed"):
        build_payload(req(), "m", extra_body={"guided_json": {}})


def test_guided_json_in_extra_body_is_an_error_response_not_a_request(fake):
    out = client(fake, extra_body={"guided_json": {"type": "object"}}).generate([req()])
    assert out[0].error and "removed" in out[0].error and fake.calls == 0


def test_answers_in_order_with_tool_calls_usage_and_logprobs(fake):
    out = client(fake).generate([req("a"), req("b", tools=TOOLS), req("c", logprobs=True)])
    assert [o.error for o in out] == [None, None, None]
    assert out[0].text == "echo: a" and out[0].finish_reason == "stop" and out[0].latency_s > 0
    assert out[1].tool_calls[0].name == "get_weather" and out[1].tool_calls[0].arguments == '{"city": "Paris"}'
    assert out[1].finish_reason == "tool_calls" and out[1].reasoning == "think"
    assert out[2].logprobs == (-0.5, -1.0) and out[2].prompt_tokens == 7 and out[2].completion_tokens == 3


def test_concurrency_bound_is_respected(fake):
    fake.delay_s = 0.1
    out = client(fake, concurrency=3).generate([req(str(i)) for i in range(12)])
    assert all(o.error is None for o in out)
    assert fake.max_inflight == 3
    assert [o.text for o in out] == [f"echo: {i}" for i in range(12)]


def test_5xx_is_retried_then_succeeds(fake):
    fake.fail_next = 2
    out = client(fake, retries=3).generate([req()])
    assert out[0].error is None and out[0].text == "echo: hi" and fake.calls == 3


def test_5xx_retries_exhausted_gives_error_response_not_exception(fake):
    fake.fail_next = 100
    out = client(fake, retries=2).generate([req(), req("x")])
    assert all(o.error and "failed after 3 attempts" in o.error and "503" in o.error for o in out)
    assert fake.calls == 6


def test_4xx_is_final_and_not_retried(fake):
    out = OpenAIClient(fake.url, "bad", backoff_s=0.01).generate([req()])
    assert out[0].error.startswith("HTTP 400") and fake.calls == 1


def test_timeout_is_an_error_response(fake):
    fake.delay_s = 2.0
    t0 = time.perf_counter()
    out = client(fake, timeout_s=0.3).generate([req()])
    assert "timeout" in out[0].error and time.perf_counter() - t0 < 1.5


def test_the_request_timeout_is_a_site_setting_for_slow_servers(fake, monkeypatch):
    # a CPU server answering a whole batch at once needs minutes per request: GATE_REQUEST_TIMEOUT_S reaches every
    # client gate builds (gate score / parity build theirs with no timeout argument)
    fake.delay_s = 1.0
    monkeypatch.setenv("GATE_REQUEST_TIMEOUT_S", "0.3")
    out = client(fake).generate([req()])
    assert "timeout after 0.3 s" in out[0].error
    monkeypatch.setenv("GATE_REQUEST_TIMEOUT_S", "5")
    assert client(fake).timeout_s == 5.0 and client(fake).generate([req()])[0].error is None
    monkeypatch.delenv("GATE_REQUEST_TIMEOUT_S")
    assert client(fake).timeout_s == 120.0


@pytest.mark.parametrize("bad", ["soon", "0", "-4"])
def test_a_bad_request_timeout_is_one_line(monkeypatch, bad):
    from gate.errors import GateError

    monkeypatch.setenv("GATE_REQUEST_TIMEOUT_S", bad)
    with pytest.raises(GateError, match="GATE_REQUEST_TIMEOUT_S must be a positive number"):
        OpenAIClient("http://127.0.0.1:9", "m")


def test_nothing_listening_gives_error_responses():
    c = OpenAIClient(f"http://127.0.0.1:{free_port()}", "tiny", retries=1, backoff_s=0.01)
    out = c.generate([req(), req()])
    assert all("ConnectError" in o.error for o in out)


def test_server_killed_mid_run_finishes_with_errors(fake):
    fake.delay_s = 0.15
    threading.Timer(0.4, fake.kill).start()
    out = client(fake, concurrency=2, retries=2).generate([req(str(i)) for i in range(16)])
    ok = [o for o in out if o.error is None]
    bad = [o for o in out if o.error]
    assert ok and bad and len(out) == 16
    assert all("attempts" in o.error for o in bad)


def test_stream_gives_ttft_text_and_tool_calls(fake):
    out = client(fake, stream=True).generate([req("hello world"), req("w", tools=TOOLS)])
    assert out[0].text == "echo: hello world" and out[0].ttft_s is not None and out[0].ttft_s <= out[0].latency_s
    assert out[0].completion_tokens == 3 and out[0].finish_reason == "stop"
    assert out[1].tool_calls[0].name == "get_weather" and out[1].tool_calls[0].arguments == '{"city": "Paris"}'
    assert out[1].tool_calls[0].id == "call_1"


def test_sync_generate_works_inside_a_running_loop(fake):
    import asyncio

    async def main():
        return client(fake).generate([req("z")])

    assert asyncio.run(main())[0].text == "echo: z"
