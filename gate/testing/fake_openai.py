"""A small but real OpenAI-compatible HTTP server for client tests: canned answers, 5xx on demand, delays, kill.

Runs in-process (`FakeOpenAI().start()`) or as a process (`python -m gate.testing.fake_openai --port P`), the latter
standing in for a model server in launcher tests.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


class FakeOpenAI:
    """An OpenAI-compatible server on a free local port: `/v1/chat/completions`, `/v1/models`, `/health`,
    `/version`. It answers with `respond(body)` when set (e.g. `lambda body: chat_reply(body, "text")`), else
    `answer` (echoes the last user turn; calls the first tool offered). `fail_next`, `fail_when` and `delay_s`
    simulate a failing or slow server; `calls`, `bodies` and `headers` record what it was sent. Use as
    `srv = FakeOpenAI().start()` ... `srv.kill()`, pointing `gate score --engine url --base-url srv.url` at it."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, delay_s: float = 0.0) -> None:
        self.delay_s = delay_s
        self.fail_next = 0  # answer this many chat requests with 503
        self.fail_status = 503
        self.fail_when: Callable[[dict], bool] | None = None  # answer matching chat requests with fail_status
        self.respond: Callable[[dict], dict] | None = None  # replaces `answer` (canned answers per request)
        self.models: list[dict] = [{"id": "tiny"}, {"id": "tinylora", "parent": "tiny"}]  # what /v1/models lists
        self.version = "0.0-fake"  # what /version says
        self.calls = 0
        self.bodies: list[dict] = []
        self.headers: list[dict[str, str]] = []  # the HTTP headers of every POST, in order (e.g. Authorization)
        self.inflight = 0
        self.max_inflight = 0
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer((host, port), self._handler())
        self.httpd.daemon_threads = True
        self.thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeOpenAI:
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        return self

    def kill(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        srv = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _json(self, code: int, obj: object) -> None:
                data = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path in ("/health", "/health_generate"):
                    self._json(200, {})
                elif self.path == "/version":
                    self._json(200, {"version": srv.version})
                elif self.path == "/v1/models":
                    self._json(200, {"object": "list", "data": srv.models})
                else:
                    self._json(404, {"detail": "Not Found"})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                with srv.lock:
                    srv.calls += 1
                    srv.bodies.append(body)
                    srv.headers.append(dict(self.headers))
                    fail = srv.fail_next > 0
                    if fail:
                        srv.fail_next -= 1
                    fail = fail or bool(srv.fail_when and srv.fail_when(body))
                    srv.inflight += 1
                    srv.max_inflight = max(srv.max_inflight, srv.inflight)
                try:
                    if srv.delay_s:
                        time.sleep(srv.delay_s)
                    if fail:
                        self._json(srv.fail_status, {"error": "overloaded"})
                    elif body.get("model") == "bad":
                        self._json(400, {"error": "unknown model"})
                    elif body.get("stream"):
                        self._stream(body)
                    else:
                        self._json(200, (srv.respond or answer)(body))
                finally:
                    with srv.lock:
                        srv.inflight -= 1

            def _stream(self, body: dict) -> None:
                full = answer(body)
                msg = full["choices"][0]["message"]
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                chunks = []
                if msg.get("tool_calls"):
                    tc = msg["tool_calls"][0]
                    args = tc["function"]["arguments"]
                    fn = {"name": tc["function"]["name"], "arguments": args[:2]}
                    first = {"index": 0, "id": tc["id"], "function": fn}
                    chunks.append({"tool_calls": [first]})
                    chunks.append({"tool_calls": [{"index": 0, "function": {"arguments": args[2:]}}]})
                else:
                    text = msg["content"]
                    chunks += [{"content": text[i:i + 3]} for i in range(0, len(text), 3)]
                for k, delta in enumerate(chunks):
                    last = k == len(chunks) - 1
                    ev = {"choices": [{"index": 0, "delta": delta,
                                       "finish_reason": full["choices"][0]["finish_reason"] if last else None}]}
                    self.wfile.write(f"data: {json.dumps(ev)}\n\n".encode())
                self.wfile.write(f"data: {json.dumps({'choices': [], 'usage': full['usage']})}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")

        return H


def chat_reply(body: dict, text: str) -> dict:
    """A non-streamed chat completion whose assistant message is `text` (for `FakeOpenAI.respond`)."""
    return {"id": "x", "object": "chat.completion", "model": body.get("model"),
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}


def answer(body: dict) -> dict:
    """Echo the last user message; call the first tool when tools are offered."""
    last = next((m.get("content") for m in reversed(body.get("messages", [])) if m.get("role") == "user"), "")
    msg: dict = {"role": "assistant", "content": f"echo: {last}"}
    finish = "stop"
    if body.get("tools"):
        name = body["tools"][0]["function"]["name"]
        msg = {"role": "assistant", "content": None, "reasoning_content": "think",
               "tool_calls": [{"id": "call_1", "type": "function",
                               "function": {"name": name, "arguments": '{"city": "Paris"}'}}]}
        finish = "tool_calls"
    out = {"id": "x", "object": "chat.completion", "model": body.get("model"),
           "choices": [{"index": 0, "message": msg, "finish_reason": finish}],
           "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}}
    if body.get("logprobs"):
        out["choices"][0]["logprobs"] = {"content": [{"token": "a", "logprob": -0.5}, {"token": "b", "logprob": -1.0}]}
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--startup-delay", type=float, default=0.0)
    args, _ = ap.parse_known_args()
    print("fake server starting", flush=True)
    time.sleep(args.startup_delay)
    s = FakeOpenAI(args.host, args.port)
    print(f"listening on {s.url}", flush=True)
    s.httpd.serve_forever()


def triage_model(scorecard: str | Path) -> FakeOpenAI:
    """A started server that answers the triage scorecard's items: model "tiny" with the expected answers,
    "tinylora" with a wrong product (refusals kept), so a decision between them is BLOCK."""
    import json

    from gate.score.scorecard import load_scorecard

    card = load_scorecard(scorecard)
    expected = {it.messages[-1]["content"]: it.expected for it in card.suites[0].items}

    def respond(body: dict) -> dict:
        answer = dict(expected[body["messages"][-1]["content"]])
        if body.get("model") == "tinylora" and answer.get("next_action") != "refuse":
            answer["product"] = "shipping" if answer.get("product") != "shipping" else "billing"
        return {"id": "x", "object": "chat.completion", "model": body.get("model"),
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": json.dumps(answer)}}],
                "usage": {"prompt_tokens": 7, "completion_tokens": 9, "total_tokens": 16}}

    srv = FakeOpenAI().start()
    srv.respond = respond
    return srv
