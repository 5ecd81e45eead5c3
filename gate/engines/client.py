"""Async client for any OpenAI-compatible chat server (vLLM, SGLang, llama.cpp, a hosted URL).

Why its own client rather than the `openai` package: we need exact control of what is sent (the request's canonical
fields and nothing else, so cache keys mean what they say), bounded concurrency, and a failure model where one bad
request becomes an error `Response` instead of an exception that kills a 1,000-item run.

Structured output goes out as `response_format: {"type": "json_schema", ...}`. The old `guided_json` family was removed
in vLLM 0.12 and is silently ignored (HTTP 200, unconstrained output), so this client refuses to send it.
"""

from __future__ import annotations

import asyncio
import json
import random
import threading
import time
from collections.abc import Sequence
from typing import Any

from gate.engines.types import Request, Response, ToolCall
from gate.settings import positive_seconds

REMOVED_FIELDS = frozenset({"guided_json", "guided_regex", "guided_choice", "guided_grammar",
                            "guided_decoding_backend", "guided_whitespace_pattern"})


def build_payload(req: Request, model: str, *, extra_body: dict[str, Any] | None = None,
                  stream: bool = False) -> dict[str, Any]:
    """The chat/completions body for one request: every field of `Request` that is set, plus `extra_body`."""
    body: dict[str, Any] = {
        "model": model,
        "messages": [dict(m) for m in req.messages],
        "temperature": req.temperature,
        "top_p": req.top_p,
        "max_tokens": req.max_tokens,
    }
    if req.seed is not None:
        body["seed"] = req.seed
    if req.tools:
        body["tools"] = [dict(t) for t in req.tools]
    if req.tool_choice is not None:
        body["tool_choice"] = req.tool_choice
    if req.response_format is not None:
        body["response_format"] = req.response_format
    if req.logprobs:
        body["logprobs"] = True
    if req.stop:
        body["stop"] = list(req.stop)
    if req.chat_template_kwargs:
        # vLLM and SGLang both read `chat_template_kwargs` from the chat/completions body and pass it to the template
        body["chat_template_kwargs"] = dict(req.chat_template_kwargs)
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    for key, value in (extra_body or {}).items():
        if key == "chat_template_kwargs" and isinstance(value, dict) and "chat_template_kwargs" in body:
            value = {**body["chat_template_kwargs"], **value}  # a site's extra body adds to the scorecard's
        body[key] = value
    bad = REMOVED_FIELDS & body.keys()
    if bad:
        raise ValueError(f"{sorted(bad)} were removed from vLLM (silently ignored); use response_format json_schema")
    return body


def parse_completion(data: dict[str, Any]) -> Response:
    """A non-streamed chat completion → `Response` (text, parsed tool calls, reasoning, usage, logprobs)."""
    choices = data.get("choices") or []
    if not choices:
        return Response(text="", error=f"no choices in response: {json.dumps(data)[:200]}", raw=data)
    ch = choices[0]
    msg = ch.get("message") or {}
    usage = data.get("usage") or {}
    return Response(
        text=msg.get("content") or "",
        tool_calls=tuple(_tool_call(tc) for tc in msg.get("tool_calls") or ()),
        finish_reason=ch.get("finish_reason"),
        reasoning=msg.get("reasoning_content") or msg.get("reasoning"),
        prompt_tokens=usage.get("prompt_tokens"),
        completion_tokens=usage.get("completion_tokens"),
        logprobs=_logprobs(ch.get("logprobs")),
        raw=data,
    )


def _tool_call(tc: dict[str, Any]) -> ToolCall:
    fn = tc.get("function") or {}
    args = fn.get("arguments")
    if not isinstance(args, str):  # some servers send an object; keep the raw-JSON-string contract
        args = json.dumps(args if args is not None else {}, ensure_ascii=False)
    return ToolCall(name=fn.get("name") or "", arguments=args, id=tc.get("id"))


def _logprobs(lp: dict[str, Any] | None) -> tuple[float, ...] | None:
    if not lp or not lp.get("content"):
        return None
    return tuple(float(t["logprob"]) for t in lp["content"])


DEFAULT_TIMEOUT_S = 120.0


def request_timeout_s() -> float:
    """Seconds to wait for one answer: $GATE_REQUEST_TIMEOUT_S, else 120. A site setting like GATE_VLLM_ARGS, for
    slow servers (a CPU server answering a whole batch at once can need minutes per request), so every command that
    talks to a server (`gate score`, `gate parity`, the demos) reaches it without a flag of its own."""
    return positive_seconds("GATE_REQUEST_TIMEOUT_S", DEFAULT_TIMEOUT_S)


def replica_urls(base_url: str | Sequence[str]) -> list[str]:
    """The servers a client spreads requests over: one URL, several comma-separated, or a list; each without a
    trailing `/` or `/v1`, duplicates dropped, order kept."""
    parts = [base_url] if isinstance(base_url, str) else list(base_url)
    out: list[str] = []
    for part in parts:
        for url in str(part).split(","):
            url = url.strip().rstrip("/")
            if url.endswith("/v1"):
                url = url[:-3]
            if url and url not in out:
                out.append(url)
    if not out:
        raise ValueError("no server URL given")
    return out


class _Replicas:
    """The replicas' HTTP clients for one batch: requests go round-robin over the replicas still in service, and a
    replica whose connection fails is taken out (for the rest of the client's life: `OpenAIClient.lost`), so its
    requests go to the others instead of waiting out a dead server again and again."""

    def __init__(self, owner: OpenAIClient, clients: dict[str, Any]) -> None:
        self.owner, self.clients, self.turn = owner, clients, 0

    def pick(self) -> tuple[str, Any] | None:
        live = [u for u in self.clients if u not in self.owner.lost]
        if not live:
            return None
        self.turn += 1
        url = live[self.turn % len(live)]
        return url, self.clients[url]

    def lose(self, url: str, why: str) -> bool:
        """Takes `url` out when another replica is left to answer; a lone server keeps its own retries."""
        if len(self.owner.replicas) < 2:
            return False
        self.owner.lost.setdefault(url, why)
        return True


class OpenAIClient:
    """Sends many requests to one server, or spreads them over several replicas serving the same model, with at most
    `concurrency` in flight per server.

    Retries connection errors and 5xx/429 with exponential backoff and jitter, up to `retries` extra attempts; a read
    timeout is not retried (the request was accepted; resending doubles the load on a server that is already slow)
    and becomes an error Response like every other final failure. With several replicas, a connection that fails
    (refused, reset, the server died mid-answer) takes that replica out and the request goes to another at once,
    without spending a retry; the answers do not depend on which replica gave them (greedy decoding, same model).
    """

    def __init__(self, base_url: str | Sequence[str], model: str, *, concurrency: int = 8,
                 timeout_s: float | None = None,
                 connect_timeout_s: float = 10.0, retries: int = 3, backoff_s: float = 0.5,
                 max_backoff_s: float = 8.0, api_key: str | None = None, extra_body: dict[str, Any] | None = None,
                 stream: bool = False) -> None:
        self.replicas = replica_urls(base_url)
        self.base_url = self.replicas[0]
        self.lost: dict[str, str] = {}  # replica -> why it was taken out
        self.model = model
        self.concurrency = max(1, concurrency)
        self.timeout_s = request_timeout_s() if timeout_s is None else timeout_s
        self.connect_timeout_s = connect_timeout_s
        self.retries = max(0, retries)
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.api_key = api_key
        self.extra_body = extra_body or {}
        self.stream = stream
        self.on_answers: Any = None  # progress hook (Engine.on_answers): called with 1 as each request finishes

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        """Blocking form for sync callers; runs its own event loop (in a thread if one is already running)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.agenerate(requests))
        out: list[list[Response]] = []
        errors: list[BaseException] = []

        def _run() -> None:
            try:
                out.append(asyncio.run(self.agenerate(requests)))
            except BaseException as exc:
                errors.append(exc)

        t = threading.Thread(target=_run, name="gate-openai-client")
        t.start()
        t.join()
        if errors:
            raise errors[0]
        return out[0]

    async def agenerate(self, requests: Sequence[Request]) -> list[Response]:
        import httpx

        sem = asyncio.Semaphore(self.concurrency * len(self.replicas))
        timeout = httpx.Timeout(self.timeout_s, connect=self.connect_timeout_s)
        limits = httpx.Limits(max_connections=self.concurrency, max_keepalive_connections=self.concurrency)
        async with self._pool(timeout, limits) as pool:

            async def one(req: Request) -> Response:
                async with sem:
                    resp = await self._one(pool, req)
                if self.on_answers is not None:
                    self.on_answers(1)
                return resp

            return list(await asyncio.gather(*(one(r) for r in requests)))

    def loglikelihood(self, pairs: Sequence[tuple[Request, str]]) -> list[float | None]:
        """Blocking form of `aloglikelihood` (same event-loop handling as `generate`)."""
        box: list[list[float | None]] = []

        def _run() -> None:
            try:
                box.append(asyncio.run(self.aloglikelihood(pairs)))
            except Exception:  # a server that cannot score leaves the scorer its generation fallback
                pass

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            _run()
        else:
            t = threading.Thread(target=_run, name="gate-openai-loglik")
            t.start()
            t.join()
        return box[0] if box else [None] * len(pairs)

    async def aloglikelihood(self, pairs: Sequence[tuple[Request, str]]) -> list[float | None]:
        """Continuation log-likelihoods through vLLM's chat extensions, with the server's own chat template.

        The context is counted by asking for the prompt alone (`usage.prompt_tokens` with the generation prompt);
        the continuation is sent as a final assistant message continued in place (`continue_final_message`) with
        `prompt_logprobs`, and the log-probabilities of the tokens after the context are summed. Servers without
        these extensions answer 400 or omit `prompt_logprobs`: that pair is None and scorers fall back to
        generation.
        """
        import httpx

        sem = asyncio.Semaphore(self.concurrency * len(self.replicas))
        timeout = httpx.Timeout(self.timeout_s, connect=self.connect_timeout_s)
        ctx_len: dict[str, asyncio.Task[int | None]] = {}
        async with self._pool(timeout, httpx.Limits(max_connections=self.concurrency)) as pool:

            async def post(body: dict[str, Any]) -> dict[str, Any] | None:
                async with sem:
                    attempt = 0
                    while attempt <= self.retries:
                        if attempt:
                            await asyncio.sleep(min(self.max_backoff_s, self.backoff_s * 2 ** (attempt - 1)))
                        slot = pool.pick()
                        if slot is None:
                            return None
                        url, http = slot
                        try:
                            r = await http.post("/v1/chat/completions", json=body)
                        except httpx.TimeoutException:
                            attempt += 1
                            continue
                        except httpx.TransportError as exc:
                            if not pool.lose(url, f"{type(exc).__name__}: {exc}"):
                                attempt += 1
                            continue
                        if r.status_code >= 500 or r.status_code == 429:
                            attempt += 1
                            continue
                        try:
                            return r.json() if r.status_code == 200 else None
                        except ValueError:
                            return None
                    return None

            async def context_len(req: Request) -> int | None:
                body = build_payload(_scoring_request(req, req.messages), self.model, extra_body=self.extra_body)
                data = await post(body)
                n = ((data or {}).get("usage") or {}).get("prompt_tokens")
                return int(n) if isinstance(n, int) else None

            async def one(req: Request, cont: str) -> float | None:
                key = json.dumps([req.messages, req.tools], sort_keys=True, default=str)
                if key not in ctx_len:
                    ctx_len[key] = asyncio.ensure_future(context_len(req))
                msgs = (*req.messages, {"role": "assistant", "content": cont})
                body = build_payload(_scoring_request(req, msgs), self.model, extra_body=self.extra_body)
                body.update(add_generation_prompt=False, continue_final_message=True, prompt_logprobs=0)
                data, n_ctx = await post(body), await ctx_len[key]
                plp = (data or {}).get("prompt_logprobs")
                if n_ctx is None or not isinstance(plp, list) or len(plp) <= n_ctx:
                    return None
                ids = data.get("prompt_token_ids") if isinstance(data.get("prompt_token_ids"), list) else None
                total = 0.0
                for pos in range(n_ctx, len(plp)):
                    entry = plp[pos] or {}
                    tid = str(ids[pos]) if ids and pos < len(ids) else None
                    hit = entry.get(tid) if tid is not None else None
                    if hit is None and len(entry) == 1:
                        hit = next(iter(entry.values()))
                    if not isinstance(hit, dict) or "logprob" not in hit:
                        return None
                    total += float(hit["logprob"])
                return total

            return list(await asyncio.gather(*(one(r, c) for r, c in pairs)))

    async def get_json(self, path: str) -> Any:
        """GET a small JSON endpoint (`/v1/models`, `/version`) of the first replica in service; used for identity,
        not for generation."""
        return await self.get_json_at(next((u for u in self.replicas if u not in self.lost), self.base_url), path)

    async def get_json_at(self, url: str, path: str) -> Any:
        """GET a small JSON endpoint of one replica (URLEngine.start asks each one what it serves)."""
        import httpx

        async with httpx.AsyncClient(base_url=url, timeout=self.connect_timeout_s, trust_env=False) as http:
            r = await http.get(path)
            r.raise_for_status()
            return r.json()

    def _pool(self, timeout: Any, limits: Any) -> Any:
        """An async context giving a _Replicas over one HTTP client per replica."""
        import contextlib

        import httpx

        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

        @contextlib.asynccontextmanager
        async def pool() -> Any:
            async with contextlib.AsyncExitStack() as stack:
                clients = {u: await stack.enter_async_context(httpx.AsyncClient(
                    base_url=u, timeout=timeout, limits=limits, headers=headers, trust_env=False))
                    for u in self.replicas}
                yield _Replicas(self, clients)

        return pool()

    async def _one(self, pool: _Replicas, req: Request) -> Response:
        import httpx

        try:
            body = build_payload(req, self.model, extra_body=self.extra_body, stream=self.stream)
        except ValueError as exc:
            return Response(text="", error=str(exc))
        last = ""
        attempt = 0
        while attempt <= self.retries:
            if attempt:
                delay = min(self.max_backoff_s, self.backoff_s * 2 ** (attempt - 1))
                await asyncio.sleep(delay * (0.5 + random.random() / 2))
            slot = pool.pick()
            if slot is None:
                return Response(text="", error=f"every replica stopped answering ({len(self.lost)} taken out); "
                                               f"last: {last}")
            url, http = slot
            attempt += 1
            t0 = time.perf_counter()
            try:
                if self.stream:
                    resp = await self._stream(http, body, t0)
                else:
                    r = await http.post("/v1/chat/completions", json=body)
                    if r.status_code >= 500 or r.status_code == 429:
                        last = f"HTTP {r.status_code}: {r.text[:200]}"
                        continue
                    if r.status_code >= 400:
                        return Response(text="", error=f"HTTP {r.status_code}: {r.text[:300]}",
                                        latency_s=time.perf_counter() - t0)
                    resp = parse_completion(r.json())
                if resp is None:  # streamed 5xx
                    last = "HTTP 5xx on stream"
                    continue
                return _with_latency(resp, time.perf_counter() - t0)
            except (httpx.ReadTimeout, httpx.WriteTimeout, httpx.PoolTimeout) as exc:
                return Response(text="", error=f"timeout after {self.timeout_s:g} s ({type(exc).__name__})",
                                latency_s=time.perf_counter() - t0)
            except (httpx.TransportError, json.JSONDecodeError) as exc:  # connect refused/reset, server died mid-body
                last = f"{type(exc).__name__}: {exc}"
                if isinstance(exc, httpx.TransportError) and pool.lose(url, last):
                    attempt -= 1  # another replica takes it now: a lost replica spends no retry
                continue
            except _HTTPStatus as exc:
                return Response(text="", error=str(exc), latency_s=time.perf_counter() - t0)
        return Response(text="", error=f"failed after {self.retries + 1} attempts: {last}")

    async def _stream(self, http: Any, body: dict[str, Any], t0: float) -> Response | None:
        """Server-sent events: gives time to first token, which operations scorecards need."""
        text: list[str] = []
        reasoning: list[str] = []
        calls: dict[int, dict[str, Any]] = {}
        finish = None
        usage: dict[str, Any] = {}
        lps: list[float] = []
        ttft = None
        async with http.stream("POST", "/v1/chat/completions", json=body) as r:
            if r.status_code >= 500 or r.status_code == 429:
                await r.aread()
                return None
            if r.status_code >= 400:
                await r.aread()
                raise _HTTPStatus(f"HTTP {r.status_code}: {r.text[:300]}")
            async for line in r.aiter_lines():
                if not line.startswith("data:"):
                    continue
                payload = line[5:].strip()
                if payload == "[DONE]":
                    break
                chunk = json.loads(payload)
                usage = chunk.get("usage") or usage
                for ch in chunk.get("choices") or ():
                    delta = ch.get("delta") or {}
                    piece = delta.get("content")
                    rpiece = delta.get("reasoning_content") or delta.get("reasoning")
                    if (piece or rpiece or delta.get("tool_calls")) and ttft is None:
                        ttft = time.perf_counter() - t0
                    if piece:
                        text.append(piece)
                    if rpiece:
                        reasoning.append(rpiece)
                    for tc in delta.get("tool_calls") or ():
                        slot = calls.setdefault(tc.get("index", 0), {"id": None, "name": "", "arguments": ""})
                        slot["id"] = tc.get("id") or slot["id"]
                        fn = tc.get("function") or {}
                        slot["name"] += fn.get("name") or ""
                        slot["arguments"] += fn.get("arguments") or ""
                    finish = ch.get("finish_reason") or finish
                    lps.extend(float(t["logprob"]) for t in ((ch.get("logprobs") or {}).get("content") or ()))
        return Response(
            text="".join(text),
            tool_calls=tuple(ToolCall(name=c["name"], arguments=c["arguments"], id=c["id"])
                             for _, c in sorted(calls.items())),
            finish_reason=finish, reasoning="".join(reasoning) or None,
            prompt_tokens=usage.get("prompt_tokens"), completion_tokens=usage.get("completion_tokens"),
            ttft_s=ttft, logprobs=tuple(lps) or None, raw={"streamed": True, "usage": usage},
        )


def _scoring_request(req: Request, messages: Sequence[dict[str, Any]]) -> Request:
    """A request that only reads the prompt: one token, greedy, no format constraint (it does not change prompt
    log-probabilities, only costs grammar compilation)."""
    from dataclasses import replace

    return replace(req, messages=tuple(messages), max_tokens=1, temperature=0.0, top_p=1.0, logprobs=False,
                   response_format=None, stop=None)


class _HTTPStatus(Exception):
    """A 4xx on a stream: final, not retried."""


def _with_latency(resp: Response, latency: float) -> Response:
    from dataclasses import replace

    return replace(resp, latency_s=latency)
