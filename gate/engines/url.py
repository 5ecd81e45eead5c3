"""Attach to an OpenAI-compatible server someone else runs (a vLLM fleet, a hosted endpoint).

gate cannot read the weights behind a URL, so the identity is what the user pins (`model_hash`, `flags`,
`chat_template_hash`) plus what the server tells (`/version`, the `/v1/models` entry). Without a pinned hash the cache
key still separates URL and model name, but a redeployed model at the same name would be served stale answers: the
CLI should warn when `model_hash` is not given.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from gate.engines.client import OpenAIClient
from gate.engines.engine import Engine, EngineError, EngineIdentity, canonical_json, hash_text
from gate.engines.types import Request, Response


class URLEngine(Engine):
    """A running server at `base_url` serving `model`; `start()` checks it answers and learns its version."""

    name = "url"

    def __init__(self, base_url: str, model: str, *, api_key: str | None = None, model_hash: str | None = None,
                 adapter_hash: str | None = None, flags: Sequence[str] = (), chat_template_hash: str = "",
                 concurrency: int = 8, timeout_s: float | None = None, retries: int = 3,
                 extra_body: dict[str, Any] | None = None, stream: bool = False) -> None:
        self.client = OpenAIClient(base_url, model, concurrency=concurrency, timeout_s=timeout_s, retries=retries,
                                   api_key=api_key, extra_body=extra_body, stream=stream)
        self._identity = EngineIdentity(
            engine=self.name, model=model,
            model_hash=model_hash or "url:" + hash_text(f"{self.client.base_url}|{model}"),
            adapter_hash=adapter_hash, flags=tuple(flags), chat_template_hash=chat_template_hash,
            # extra_body (e.g. chat_template_kwargs) changes answers
            extra={"extra_body": canonical_json(extra_body)} if extra_body else {})
        self._started = False

    @property
    def identity(self) -> EngineIdentity:
        return self._identity

    def start(self) -> None:
        if self._started:
            return
        try:
            models = asyncio.run(self.client.get_json("/v1/models"))
        except Exception as exc:
            raise EngineError(f"no OpenAI-compatible server at {self.client.base_url} "
                              f"({type(exc).__name__}: {exc})".splitlines()[0]) from None
        entries = [m for m in (models or {}).get("data", []) if isinstance(m, dict)]
        ids = [m.get("id") for m in entries]
        if ids and self.client.model not in ids:
            raise EngineError(f"model {self.client.model!r} is not served at {self.client.base_url} "
                              f"(served: {', '.join(map(str, ids))})")
        entry = next((m for m in entries if m.get("id") == self.client.model), {})
        parent = entry.get("parent")
        if parent and parent != self.client.model and not self._identity.adapter_hash:
            # vLLM lists a LoRA module with `parent` = its base model: the name is an adapter, so a run of it alone
            # is a trained candidate (gate score decides it without a baseline), and its cache key says so
            served = hash_text(f"{self.client.base_url}|{self.client.model}|{parent}|{entry.get('root') or ''}")
            self._identity = replace(self._identity, adapter_hash="served-lora:" + served)
        version = ""
        try:
            version = str((asyncio.run(self.client.get_json("/version")) or {}).get("version") or "")
        except Exception:
            pass
        self._identity = replace(self._identity, engine_version=version)
        self._started = True

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        return self.client.generate(requests)

    def loglikelihood(self, pairs: Sequence[tuple[Request, str]]) -> list[float | None] | None:
        """Tried on any server: vLLM behind a URL answers; others give None and scorers fall back to generation."""
        return self.client.loglikelihood(pairs)
