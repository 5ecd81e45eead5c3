"""Response cache in DuckDB: an interrupted run resumes, a rerun of a scorecard costs nothing.

The key is a digest of everything that can change an answer: the engine identity (model and adapter hashes, engine
and version, server flags, chat template hash), the canonical JSON of the full `Request` (messages, tools, tool
choice, response format, sampling, seed, logprobs, stop) and the epoch (bump it to ask the same question again, e.g.
for repeated sampling). Operations runs measure the engine, so they bypass the cache entirely (`bypass=True`).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from gate.engines.engine import (
    Engine,
    EngineIdentity,
    canonical_json,
    request_to_dict,
    response_from_dict,
    response_to_dict,
)
from gate.engines.types import Request, Response
from gate.store import responses as table

KEY_VERSION = 1  # bump when the key recipe changes so old rows can never match


def cache_key(identity: EngineIdentity, req: Request, epoch: int = 0) -> str:
    """sha256 over (key version, identity, full request, epoch) in canonical JSON."""
    material = canonical_json({"v": KEY_VERSION, "identity": identity.to_dict(), "request": request_to_dict(req),
                               "epoch": epoch})
    return hashlib.sha256(material.encode()).hexdigest()


class ResponseCache:
    """A DuckDB table of answers. Opens a short-lived connection per batch: DuckDB allows one writer per file."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = str(path)
        Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as con:
            table.ensure_table(con)

    def _connect(self) -> Any:
        return table.connect(self.path)

    def get_many(self, keys: Sequence[str]) -> dict[str, Response]:
        if not keys:
            return {}
        with self._connect() as con:
            rows = table.cached_responses(con, keys)
        return {k: replace(response_from_dict(json.loads(v)), cached=True) for k, v in rows}

    def put_many(self, items: Sequence[tuple[str, EngineIdentity, Request, int, Response]]) -> None:
        """Store successful answers only: an error is a fact about that moment, not about the model."""
        rows = [(k, ident.fingerprint(), canonical_json(ident.to_dict()), canonical_json(request_to_dict(req)), ep,
                 canonical_json(response_to_dict(replace(resp, cached=False))))
                for k, ident, req, ep, resp in items if resp.error is None]
        if not rows:
            return
        with self._connect() as con:
            table.store_responses(con, rows)

    def count(self) -> int:
        with self._connect() as con:
            return table.response_count(con)


class CachedEngine(Engine):
    """Wraps any engine: answers from the cache when it can, asks the engine only for the misses, stores them."""

    def __init__(self, engine: Engine, cache: ResponseCache, *, epoch: int = 0, bypass: bool = False) -> None:
        self.engine = engine
        self.cache = cache
        self.epoch = epoch
        self.bypass = bypass  # operations scorecards: measure the engine, never the cache
        self.name = engine.name

    @property
    def identity(self) -> EngineIdentity:
        return self.engine.identity

    def start(self) -> None:
        self.engine.start()

    def stop(self) -> None:
        self.engine.stop()

    @property
    def pid(self) -> int | None:
        return self.engine.pid

    def loglikelihood(self, pairs: Sequence[tuple[Request, str]]) -> list[float | None] | None:
        """Cached like answers. The key is the request with the continuation appended as an assistant turn and
        `max_tokens=0` (a shape no generation request can have), epoch 0: a log-likelihood does not vary by epoch."""
        if self.bypass:
            return self.engine.loglikelihood(pairs)
        ident = self.engine.identity
        probes = [replace(req, messages=(*req.messages, {"role": "assistant", "content": cont}), max_tokens=0)
                  for req, cont in pairs]
        keys = [cache_key(ident, p, 0) for p in probes]
        hits = self.cache.get_many(sorted(set(keys)))
        todo = [i for i, k in enumerate(keys) if k not in hits]
        got: dict[int, float | None] = {}
        if todo:
            fresh = self.engine.loglikelihood([pairs[i] for i in todo])
            if fresh is None:
                return None
            got = dict(zip(todo, fresh, strict=True))
            self.cache.put_many([(keys[i], ident, probes[i], 0, Response(text="", logprobs=(got[i],)))
                                 for i in todo if got[i] is not None])
        return [got[i] if i in got else (hits[keys[i]].logprobs or (None,))[0] for i in range(len(pairs))]

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        if self.bypass:
            return self._ask(requests)
        ident = self.engine.identity
        keys = [cache_key(ident, r, self.epoch) for r in requests]
        hits = self.cache.get_many(sorted(set(keys)))
        miss_idx = [i for i, k in enumerate(keys) if k not in hits]
        self._report(len(requests) - len(miss_idx))  # answered from the cache at once
        # Identical requests inside one batch are asked once.
        first: dict[str, int] = {}
        for i in miss_idx:
            first.setdefault(keys[i], i)
        todo = list(first.values())
        fresh = self._ask([requests[i] for i in todo]) if todo else []
        self._report(len(miss_idx) - len(todo))  # the duplicates share the answer just taken
        got = {keys[i]: resp for i, resp in zip(todo, fresh, strict=True)}
        self.cache.put_many([(keys[i], ident, requests[i], self.epoch, got[keys[i]]) for i in todo])
        return [hits[k] if k in hits else got[k] for k in keys]

    def _report(self, n: int) -> None:
        if self.on_answers is not None and n:
            self.on_answers(n)

    def _ask(self, requests: Sequence[Request]) -> list[Response]:
        """The wrapped engine's answers, its progress passed through as it reports it; whatever it did not report
        (an engine without the hook) is reported when it returns, so the count always reaches len(requests)."""
        if self.on_answers is None:
            return self.engine.generate(requests)
        from gate.engines.engine import watch_answers

        seen = [0]

        def hook(n: int) -> None:
            seen[0] += n
            self._report(n)

        watch_answers(self.engine, hook)
        try:
            out = self.engine.generate(requests)
        finally:
            watch_answers(self.engine, None)
        self._report(max(0, len(requests) - seen[0]))
        return out
