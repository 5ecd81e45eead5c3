"""What an engine returns and what a scorer reads: the contract between the serving side and the scoring side.

Kept free of any engine or scorer import so both sides (and the DuckDB cache) depend only on these records.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ToolCall:
    """A tool call as the server parsed it (OpenAI `tool_calls`), arguments kept as the raw JSON string."""

    name: str
    arguments: str
    id: str | None = None


@dataclass(frozen=True)
class Request:
    """Everything that can change an answer; its canonical JSON (with model/engine identity) is the cache key."""

    messages: tuple[dict[str, Any], ...]
    tools: tuple[dict[str, Any], ...] | None = None
    tool_choice: str | dict[str, Any] | None = None
    response_format: dict[str, Any] | None = None  # {"type": "json_schema", "json_schema": {...}}
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 256
    seed: int | None = 0
    logprobs: bool = False
    stop: tuple[str, ...] | None = None
    # variables the chat template reads (`enable_thinking: false`): they change the rendered prompt, so they travel
    # with the request to every engine and into its cache key; None when the scorecard sets none
    chat_template_kwargs: dict[str, Any] | None = None


@dataclass(frozen=True)
class Response:
    """One answer. `text` is the raw assistant content; `tool_calls` what the server's parser made of it."""

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str | None = None  # "stop" | "length" | "tool_calls" | ...
    reasoning: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_s: float | None = None
    ttft_s: float | None = None
    logprobs: tuple[float, ...] | None = None
    cached: bool = False
    error: str | None = None  # the request failed after retries; scorers treat it as an error, never a pass
    raw: dict[str, Any] = field(default_factory=dict)
