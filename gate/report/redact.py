"""Snippets that show where a problem is without showing the data itself.

Reports, logs and the database may carry ids and redacted snippets only. Any value a check quotes goes
through here: the PII library's loose masker (e-mails, digit runs, opaque tokens), and with `words`
every word reduced to its initial, for values that are free text rather than identifiers.
"""

from __future__ import annotations

import re

from gate.pii.redact import mask_loose

_WORD = re.compile(r"\b([A-Za-z])([A-Za-z'\-]{2,})\b")


def mask(text: str) -> str:
    return mask_loose(text)


def snippet(value: object, width: int = 80, *, words: bool = False) -> str:
    """A short, masked, single-line rendering of a value. With `words`, every word is reduced to its initial too."""
    text = value if isinstance(value, str) else repr(value)
    text = " ".join(text.split())
    if len(text) > 4 * width:
        text = text[: 4 * width]
    text = mask(text)
    if words:
        text = _WORD.sub(lambda m: m.group(1) + "*" * min(len(m.group(2)), 3), text)
    if len(text) > width:
        text = text[: width - 1] + "…"
    return text
