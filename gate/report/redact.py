"""Snippets that show where a problem is without showing the data itself.

Reports, logs and the database may carry ids and redacted snippets only. This masker is the last line of
defence for any value a check quotes: it keeps the shape (so a reviewer can see "an email", "a long
number", "a JSON object") and drops the content of anything that could be personal data or a secret.
"""

from __future__ import annotations

import re

_EMAIL = re.compile(r"([^\s@<>()\[\]{}\"',;:]{1,64})@([^\s@<>()\[\]{}\"',;:]{1,255})")
_KEYLIKE = re.compile(r"\b(?=[A-Za-z0-9_\-+/=]{16,})(?=\S*\d)(?=\S*[A-Za-z])[A-Za-z0-9_\-+/=.]{16,}\b")
_PEM = re.compile(r"-----BEGIN [A-Z ]+-----.*?(-----END [A-Z ]+-----|$)", re.S)
_DIGITS = re.compile(r"\d[\d \-().]{5,}\d")
_WORD = re.compile(r"\b([A-Za-z])([A-Za-z'\-]{2,})\b")


def _mask_email(m: re.Match[str]) -> str:
    local, domain = m.group(1), m.group(2)
    tld = domain.rsplit(".", 1)[-1] if "." in domain else ""
    return f"{local[:1]}***@{domain[:1]}***" + (f".{tld}" if tld else "")


def mask(text: str) -> str:
    """Masks emails, key-like tokens, PEM blocks and digit runs; leaves short words so the shape stays readable."""
    text = _PEM.sub("-----BEGIN ***-----", text)
    text = _EMAIL.sub(_mask_email, text)
    text = _KEYLIKE.sub(lambda m: m.group(0)[:4] + "***", text)
    text = _DIGITS.sub(lambda m: m.group(0)[0] + "***", text)
    return text


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
