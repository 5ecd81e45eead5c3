"""The text of a row as the dedup and leakage checks see it, and its normal form.

Exact and near duplicates must agree on what "the same text" means, so both use these two functions.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

# The version of `normalize`'s output. Stored digests of normal forms (dataset indexes) are only comparable with
# digests made by the same version: bump it whenever normalize() maps any text differently (2: one normaliser with
# the near-duplicate shingler, invisible format characters removed).
NORMAL_FORM_VERSION = 2

# ASCII control characters that str.split() does not treat as whitespace; the shingle normaliser maps them to spaces
_ASCII_CTRL = re.compile("[\x00-\x08\x0e-\x1b\x7f]")


def normalize(text: str) -> str:
    """The normal form exact duplicates are compared in: the near-duplicate normaliser (gate.dedup.shingles) with
    punctuation kept. NFKC, every invisible format character (Unicode Cf: zero-width spaces and joiners, bidi marks,
    BOM, soft hyphen...) removed, control characters and exotic spaces as spaces, casefolded, whitespace collapsed.

    One normaliser, so a pair the near-duplicate check scores Jaccard 1.00 for invisible-character reasons is also
    an exact duplicate ("Hello world" and "Hello\u200e world"); the ASCII fast path gives the same result."""
    if text.isascii() and not _ASCII_CTRL.search(text):  # most text: NFKC, Cf and casefold are no-ops here
        return " ".join(text.lower().split())
    from gate.dedup.shingles import normalize as shingle_normalize

    return shingle_normalize(text, _exact_config())


@functools.cache
def _exact_config() -> Any:
    from gate.dedup.shingles import ShingleConfig

    return ShingleConfig(strip_punct=False)


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


@functools.lru_cache(maxsize=1)
def english_stop_words() -> frozenset[str]:
    """spaCy's English stop words, read from its `stop_words.py` without importing spaCy (1.5 s of imports for a
    list of words): the module's one string literal, split, as the module itself does (its contractions are tokens
    `tokens` never yields). Parsed, never executed."""
    import ast
    import importlib.util

    spec = importlib.util.find_spec("spacy")
    if spec is None or spec.origin is None:
        from gate.errors import GateError

        raise GateError("spaCy's English stop words are needed (conflicting_answers, the pii name filter): "
                        "pip install spacy")
    path = Path(spec.origin).parent / "lang" / "en" / "stop_words.py"
    literals = [n.value for n in ast.walk(ast.parse(path.read_text("utf-8")))
                if isinstance(n, ast.Constant) and isinstance(n.value, str) and len(n.value) > 1000]
    return frozenset(literals[0].split()) if literals else frozenset()
