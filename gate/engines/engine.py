"""The one interface every engine implements, and the identity that makes cached answers trustworthy.

A scorecard compares a candidate with a baseline; both must be asked the same way and the answer must be tied to
exactly what produced it. `EngineIdentity` carries every property of the serving side that can change an answer
(model and adapter bytes, engine and version, server flags, chat template); the cache key is built from it, so a
changed flag or a retrained adapter can never be served a stale answer.
"""

from __future__ import annotations

import hashlib
import json
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from gate.engines.types import Request, Response, ToolCall
from gate.errors import GateError

# Files at or below this size are hashed in full. Above it (multi-GB safetensors shards of a 750B model) we hash the
# name, size and the first and last MiB: a changed shard changes its header (tensor offsets) or its tail, and reading
# 1.5 TB for a cache key would cost more than the evaluation.
FULL_HASH_LIMIT = 64 * 1024 * 1024
_EDGE = 1024 * 1024


class EngineError(GateError):
    """The engine could not start or answer at all (exit code 1); per-request failures are `Response.error`."""


@dataclass(frozen=True)
class EngineIdentity:
    """Everything on the serving side that can change an answer; `fingerprint()` is part of every cache key."""

    engine: str  # "embedded" | "vllm" | "sglang" | "url"
    engine_version: str = ""
    model: str = ""  # what the request names (served model name, path, `base:adapter`)
    model_hash: str = ""
    adapter: str | None = None
    adapter_hash: str | None = None
    flags: tuple[str, ...] = ()  # server command-line flags that change outputs (parsers, dtype, seed, ...)
    chat_template_hash: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def fingerprint(self) -> str:
        """Stable digest of the identity: canonical JSON, sorted keys, so field order never matters."""
        return hashlib.sha256(canonical_json(self.to_dict()).encode()).hexdigest()


def canonical_json(obj: Any) -> str:
    """One spelling per value (sorted keys, no spaces, tuples as lists, UTF-8 kept) so equal inputs hash equal."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_default)


def _default(obj: Any) -> Any:
    if isinstance(obj, (set, frozenset)):
        return sorted(obj)
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"not JSON-serialisable: {type(obj).__name__}")


def request_to_dict(req: Request) -> dict[str, Any]:
    """The full request as plain JSON data (tuples become lists), the form stored and hashed.

    `chat_template_kwargs` is left out when unset, so requests without it keep the cache keys and prompt hashes
    they had before the field existed; when set it is part of both."""
    data = asdict(req)
    if not data.get("chat_template_kwargs"):
        data.pop("chat_template_kwargs", None)
    return json.loads(canonical_json(data))


def response_to_dict(resp: Response) -> dict[str, Any]:
    return asdict(resp)


def response_from_dict(data: dict[str, Any]) -> Response:
    """Inverse of `response_to_dict`: rebuilds the frozen records (tuples, ToolCall) a scorer expects."""
    d = dict(data)
    d["tool_calls"] = tuple(ToolCall(**tc) for tc in d.get("tool_calls") or ())
    if d.get("logprobs") is not None:
        d["logprobs"] = tuple(d["logprobs"])
    d["raw"] = d.get("raw") or {}
    known = Response.__dataclass_fields__
    return Response(**{k: v for k, v in d.items() if k in known})


def hash_path(path: str | os.PathLike[str] | None) -> str:
    """Digest of a model or adapter directory (or file); '' when there is none.

    Content-based, not path-based: the same checkpoint copied elsewhere keeps its cache, a retrained one at the same
    path does not. Caches/logs inside the directory are skipped.
    """
    if path is None:
        return ""
    p = Path(path)
    if not p.exists():
        # A hub id or a served name we cannot read: the name is all we know, and it is still better than nothing.
        return "name:" + hashlib.sha256(str(path).encode()).hexdigest()
    files = [p] if p.is_file() else sorted(f for f in p.rglob("*") if f.is_file() and not _skipped(f.relative_to(p)))
    h = hashlib.sha256()
    for f in files:
        rel = f.name if f == p else f.relative_to(p).as_posix()
        size = f.stat().st_size
        h.update(f"{rel}\0{size}\0".encode())
        with open(f, "rb") as fh:
            if size <= FULL_HASH_LIMIT:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    h.update(chunk)
            else:
                h.update(fh.read(_EDGE))
                fh.seek(size - _EDGE)
                h.update(fh.read(_EDGE))
    return h.hexdigest()


def _skipped(rel: Path) -> bool:
    return any(part.startswith(".") or part == "__pycache__" for part in rel.parts) or rel.suffix in {".log", ".lock"}


def hash_text(text: str | None) -> str:
    return hashlib.sha256(text.encode()).hexdigest() if text else ""


def read_chat_template(model_dir: str | os.PathLike[str] | None, override: str | None = None) -> str | None:
    """The template the engine will actually render with: an explicit file wins, else the model's own."""
    if override:
        p = Path(override)
        return p.read_text(encoding="utf-8") if p.exists() else override
    if model_dir is None or not Path(model_dir).is_dir():
        return None
    d = Path(model_dir)
    if (d / "chat_template.jinja").exists():
        return (d / "chat_template.jinja").read_text(encoding="utf-8")
    cfg = d / "tokenizer_config.json"
    if cfg.exists():
        tpl = json.loads(cfg.read_text(encoding="utf-8")).get("chat_template")
        if isinstance(tpl, str):
            return tpl
        if isinstance(tpl, list):  # named templates: hash them all
            return canonical_json(tpl)
    return None


class Engine(ABC):
    """Answers a batch of requests. Never raises for one bad request: that request gets `Response.error`.

    `start()`/`stop()` bracket a server's life (no-ops for engines that need none); use it as a context manager so a
    server is stopped on every exit path.
    """

    name: str = "engine"
    # Called with a count as answers come back (a batch in-process, each request on a server), so `gate score` can
    # show progress inside one suite; None: nobody is watching. Engines without the hook still work: the cache
    # layer tops the count up when `generate` returns.
    on_answers: Callable[[int], None] | None = None

    @property
    @abstractmethod
    def identity(self) -> EngineIdentity:
        """Valid after `start()`: versions are often only known once the server answers."""

    def start(self) -> None:  # noqa: B027 - optional hook
        """Bring the engine up (load weights, launch a server). Raises `EngineError` with a one-line reason."""

    def stop(self) -> None:  # noqa: B027 - optional hook
        """Release it; safe to call twice."""

    @abstractmethod
    def generate(self, requests: Sequence[Request]) -> list[Response]:
        """One `Response` per request, in order."""

    def loglikelihood(self, pairs: Sequence[tuple[Request, str]]) -> list[float | None] | None:
        """Summed log-probability of each continuation as the assistant's answer to its request (multiple-choice
        regression suites). None when the engine cannot tell (then scorers fall back to generation); a None entry
        when one pair failed."""
        return None

    @property
    def pid(self) -> int | None:
        """The process whose memory is the engine's (its server, or this process when in-process); None if remote."""
        return None

    def __enter__(self) -> Engine:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


def watch_answers(engine: Engine, hook: Callable[[int], None] | None) -> None:
    """Sets the progress hook on an engine and on the HTTP client it answers through (vLLM, SGLang and url engines
    hold one as `client`), so a new server engine reports per request without code of its own."""
    engine.on_answers = hook
    client = getattr(engine, "client", None)
    if client is not None and hasattr(client, "on_answers"):
        client.on_answers = hook
