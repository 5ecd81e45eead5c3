"""The text of a row as the dedup and leakage checks see it, and its normal form.

Exact and near duplicates must agree on what "the same text" means, so both use these two functions.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from typing import Any

# Zero-width and other invisible format characters that make equal texts look different.
_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad"), None)


def normalize(text: str) -> str:
    """NFKC, invisible characters removed, casefolded, whitespace collapsed."""
    if not text.isascii():  # ASCII is already in NFKC and has no invisible characters
        text = unicodedata.normalize("NFKC", text).translate(_INVISIBLE)
    return " ".join(text.casefold().split())


def message_text(msg: dict[str, Any], include_tool_calls: bool = True) -> str:
    parts: list[str] = []
    content = msg.get("content")
    if isinstance(content, str):
        parts.append(content)
    elif isinstance(content, list):  # OpenAI content parts
        parts.extend(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    if include_tool_calls and isinstance(msg.get("tool_calls"), list):
        for call in msg["tool_calls"]:
            fn = call.get("function") if isinstance(call, dict) else None
            if isinstance(fn, dict):
                args = fn.get("arguments")
                parts.append(f"{fn.get('name', '')} {args if isinstance(args, str) else repr(args)}")
    return "\n".join(parts)


def row_text(row: dict[str, Any], roles: Iterable[str] = ("user", "assistant"),
             include_tool_calls: bool = True) -> str:
    """The concatenated text of the messages whose role is in `roles`."""
    wanted = set(roles)
    msgs = row.get("messages")
    if not isinstance(msgs, list):
        return ""
    return "\n".join(message_text(m, include_tool_calls) for m in msgs
                     if isinstance(m, dict) and m.get("role") in wanted)


def row_chars(row: dict[str, Any]) -> tuple[int, int]:
    """(total characters over all messages, characters of the longest message)."""
    total = longest = 0
    msgs = row.get("messages")
    if isinstance(msgs, list):
        for m in msgs:
            if isinstance(m, dict):
                n = len(message_text(m, True))
                total += n
                longest = max(longest, n)
    return total, longest
