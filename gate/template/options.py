"""The template check's options (`checks.template` in a contract): how the trainer renders and masks.

The defaults describe what a trainer does when nothing special is configured, because that is what training
will see: the template's own defaults (no keep-thinking switch), the mask from `{% generation %}` blocks where
the template has them and prefix by prefix otherwise, and for prefix masks the stop token taken from the next
role token (what ms-swift does for GLM).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from gate.errors import GateError

# Switches with which templates keep reasoning of earlier turns, and the value that keeps it.
KEEP_THINKING_SWITCHES: dict[str, bool] = {
    "clear_thinking": False,  # GLM-4.7 / GLM-5.x
    "preserve_thinking": True,  # Qwen3.6, Kimi K2.6
    "keep_thinking": True,
    "truncate_history_thinking": False,  # Granite
}


@dataclass(frozen=True)
class TemplateOptions:
    """`mask`: auto | prefix | generation. `stop_policy`: auto | next_role | as_rendered (auto: next_role for
    prefix masks, as_rendered for generation masks). `keep_thinking`: render with the template's keep-thinking
    switch (train with it too). `chat_template_kwargs`: extra template variables the trainer passes.
    `tool_parser`: auto | glm47 | glm45 | hermes | none. `stop_tokens`: extra stop tokens (besides the
    tokenizer's eos and generation_config.json's eos_token_id). `roundtrip` / `control_tokens`: those checks."""

    mask: str = "auto"
    stop_policy: str = "auto"
    keep_thinking: bool = False
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)
    tool_parser: str = "auto"
    stop_tokens: tuple[str, ...] = ()
    roundtrip: bool = True
    control_tokens: bool = True

    @classmethod
    def from_mapping(cls, raw: Any) -> TemplateOptions:
        raw = dict(raw or {})
        kwargs = raw.get("chat_template_kwargs") or {}
        if isinstance(kwargs, MappingProxyType):
            kwargs = _thaw(kwargs)
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(raw) - known)
        if unknown:
            raise GateError(f"checks.template: unknown option(s) {', '.join(unknown)}")
        return cls(mask=raw.get("mask", "auto"), stop_policy=raw.get("stop_policy", "auto"),
                   keep_thinking=bool(raw.get("keep_thinking", False)), chat_template_kwargs=dict(kwargs),
                   tool_parser=raw.get("tool_parser", "auto"), stop_tokens=tuple(raw.get("stop_tokens", ())),
                   roundtrip=bool(raw.get("roundtrip", True)), control_tokens=bool(raw.get("control_tokens", True)))

    def key(self) -> tuple[Any, ...]:
        """Hashable identity (for per-process caches)."""
        return (self.mask, self.stop_policy, self.keep_thinking, repr(sorted(self.chat_template_kwargs.items())),
                self.tool_parser, self.stop_tokens, self.roundtrip, self.control_tokens)


def _thaw(obj: Any) -> Any:
    if isinstance(obj, MappingProxyType | dict):
        return {k: _thaw(v) for k, v in obj.items()}
    if isinstance(obj, tuple | list):
        return [_thaw(v) for v in obj]
    return obj
