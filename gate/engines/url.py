"""Attach to an OpenAI-compatible server someone else runs (a vLLM fleet, a hosted endpoint).

gate cannot read the weights behind a URL, so the identity is what the user pins (`model_hash`, `flags`,
`chat_template_hash`) plus what the server tells (`/version`, the `/v1/models` entry). Without a pinned hash the cache
key still separates URL and model name, but a redeployed model at the same name would be served stale answers: the
CLI should warn when `model_hash` is not given.

Several replicas of one model (`--base-url http://a:8000,http://b:8000`): each must answer and serve the same model
(the same `/v1/models` entry) at start; requests are spread over them and a replica that stops answering mid-run is
taken out (gate.engines.client). The identity is the model's, not a replica's: the cache key comes from the served
model's name and root (vLLM's `/v1/models` entry), so which replica answered, or how many there are, does not
change it.
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

    def __init__(self, base_url: str | Sequence[str], model: str, *, api_key: str | None = None,
                 model_hash: str | None = None,
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
        self._pinned_hash = bool(model_hash)
        self._started = False

    @property
    def identity(self) -> EngineIdentity:
        return self._identity

    def _served_entry(self, url: str) -> dict[str, Any]:
        """The `/v1/models` entry of this model at one replica; one line naming the replica when it is not there."""
        try:
            models = asyncio.run(self.client.get_json_at(url, "/v1/models"))
        except Exception as exc:
            raise EngineError(f"no OpenAI-compatible server at {url} "
                              f"({type(exc).__name__}: {exc})".splitlines()[0]) from None
        entries = [m for m in (models or {}).get("data", []) if isinstance(m, dict)]
        ids = [m.get("id") for m in entries]
        if ids and self.client.model not in ids:
            raise EngineError(f"model {self.client.model!r} is not served at {url} "
                              f"(served: {', '.join(map(str, ids))})")
        return next((m for m in entries if m.get("id") == self.client.model), {})

    def start(self) -> None:
        if self._started:
            return
        replicas = self.client.replicas
        entries = [self._served_entry(url) for url in replicas]
        entry = entries[0]
        if len(replicas) > 1:  # a fleet: the same model everywhere, or the scores would depend on the replica
            served = {(e.get("root") or "", e.get("parent") or "") for e in entries}
            if len(served) > 1:
                roots = "; ".join(f"{u}: root {e.get('root')!r}" for u, e in zip(replicas, entries, strict=True))
                raise EngineError(f"the replicas serve different models under {self.client.model!r} ({roots}): "
                                  "give replicas of one model")
            if not self._pinned_hash:
                where = entry.get("root") or "|".join(sorted(replicas))
                self._identity = replace(self._identity, model_hash="url:" + hash_text(
                    f"replicas|{self.client.model}|{where}"))
        parent = entry.get("parent")
        if parent and parent != self.client.model and not self._identity.adapter_hash:
            # vLLM lists a LoRA module with `parent` = its base model: the name is an adapter, so a run of it alone
            # is a trained candidate (gate score decides it without a baseline), and its cache key says so
            at = self.client.base_url if len(replicas) == 1 else "replicas"
            served_lora = hash_text(f"{at}|{self.client.model}|{parent}|{entry.get('root') or ''}")
            self._identity = replace(self._identity, adapter_hash="served-lora:" + served_lora)
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
