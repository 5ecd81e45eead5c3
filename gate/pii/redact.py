"""Redacted forms and report snippets that never contain the value they point at.

Why: reports, logs, JUnit files and GitHub annotations need to show *where* a finding is and roughly *what* it
is, so a reviewer can judge it, but they are often public (CI logs) and must not become the leak. Each form
keeps at most a non-identifying hint: the first letter of an e-mail's local part and domain plus its top-level
domain, a phone number's country code, a card's first digit (the network), an IBAN's country, a key's vendor
prefix. Names, places, addresses, SSNs and IPs become a typed placeholder. A snippet also masks anything that
*looks* like PII but was not reported (a missed phone number, an e-mail, a long opaque token), because a
detector that missed it must not cause the report to print it.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import Protocol


class Span(Protocol):
    """What redaction needs from a hit: offsets and a label (entity type or secret kind)."""

    @property
    def start(self) -> int:
        """Start offset in the text."""

    @property
    def end(self) -> int:
        """End offset (exclusive)."""

    @property
    def label(self) -> str:
        """`EMAIL_ADDRESS`, `PHONE_NUMBER`, ... or a secret kind such as `openai_api_key`."""


_EMAIL = re.compile(r"[\w.+\-]+@[\w\-]+(?:\.[\w\-]+)+")
#: ≥ 7 digits with short separators (phones, cards, SSNs, account numbers); ISO dates and times are left alone.
_DIGIT_RUN = re.compile(r"(?<!\w)\+?\d(?:[ \-().]{0,2}\d){6,}")
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2})?)?")
#: Opaque tokens (possible keys the secret scan missed): 24+ key characters with both letters and digits.
_TOKEN = re.compile(r"[A-Za-z0-9_\-+/=]{24,}")
_SECRET_WORDS = ("password", "passwd", "passphrase", "passcode", "pin")


def _stars_after(value: str, keep: int) -> str:
    """`value[:keep]` + "***", where `keep` never exceeds a quarter of the value (short values show nothing)."""
    keep = min(keep, len(value) // 4)
    return value[:keep] + "***"


def redact_value(value: str, label: str) -> str:
    """A short form of `value` that identifies its kind but not the value (see the module docstring)."""
    if not value:
        return ""
    if label == "EMAIL_ADDRESS" and "@" in value:
        local, _, domain = value.rpartition("@")
        parts = domain.rsplit(".", 1)
        tld = "." + parts[1] if len(parts) == 2 and parts[1].isalpha() and len(parts[1]) <= 6 else ""
        out = f"{local[:1]}***@{domain[:1]}***{tld}"
    elif label == "PHONE_NUMBER":
        m = re.match(r"\s*(\+|00)(\d{1,3})(?=[\s\-.(/])", value)
        out = f"+{m.group(2)} ***" if m else "***"
    elif label == "CREDIT_CARD":
        out = value[:1] + "***" if value[:1].isdigit() else "***"
    elif label == "IBAN_CODE":
        out = value[:2] + "***" if value[:2].isalpha() else "***"
    elif label == "URL":
        m = re.match(r"(https?://)(.)", value, re.IGNORECASE)
        out = f"{m.group(1)}{m.group(2)}***" if m else value[:1] + "***"
    elif label.isupper():  # other PII entity types: names, places, addresses, SSNs, IPs, dates...
        out = f"<{label}>"
    elif label == "private_key":
        out = "<PRIVATE KEY>"
    elif any(w in label for w in _SECRET_WORDS):
        out = "***"
    else:  # an API key or token: its vendor prefix ("sk-p", "ghp_", "AKIA") identifies the leak to rotate
        out = _stars_after(value, 4)
    if len(value) >= 4 and value in out:  # belt and braces: the form must never contain the value
        return f"<{label}>"
    return out


def mask_loose(text: str) -> str:
    """Mask what looks like PII in free text without a detector: e-mails, long digit runs, opaque tokens.

    Digits after the first become "*", so the shape stays readable ("4*** **** **** ****").
    """
    def digits(m: re.Match[str]) -> str:
        s = m.group(0)
        if _ISO_DATE.fullmatch(s.strip()):
            return s
        first = next(i for i, c in enumerate(s) if c.isdigit())
        return s[:first + 1] + re.sub(r"\d", "*", s[first + 1:])

    def token(m: re.Match[str]) -> str:
        s = m.group(0)
        if any(c.isdigit() for c in s) and any(c.isalpha() for c in s):
            return _stars_after(s, 4)
        return s

    text = _EMAIL.sub(lambda m: redact_value(m.group(0), "EMAIL_ADDRESS"), text)
    text = _TOKEN.sub(token, text)
    return _DIGIT_RUN.sub(digits, text)


def _clean(text: str) -> str:
    """One line, no control or invisible format characters (bidi overrides could reorder a report visually)."""
    text = "".join(" " if c in "\r\n\t\v\f" else c for c in text
                   if unicodedata.category(c) not in ("Cc", "Cf", "Cs") or c in "\r\n\t\v\f")
    return re.sub(r" {2,}", " ", text)


def _merged(hits: Sequence[Span]) -> list[tuple[int, int, str]]:
    """Overlapping hits merged into one span labelled by the longest of them."""
    out: list[tuple[int, int, str]] = []
    longest: list[int] = []
    for h in sorted(hits, key=lambda h: (h.start, -(h.end - h.start))):
        if out and h.start < out[-1][1]:
            s, e, lab = out[-1]
            if h.end - h.start > longest[-1]:
                lab, longest[-1] = h.label, h.end - h.start
            out[-1] = (s, max(e, h.end), lab)
            continue
        out.append((h.start, h.end, h.label))
        longest.append(h.end - h.start)
    return out


def snippet(text: str, hits: Sequence[Span], width: int = 60) -> str:
    """About `width` characters of context on each side of the first hit, every hit in the window redacted.

    The window is widened so no hit (and no word) is cut at its edge (a cut value would show its tail
    unredacted), the text between hits goes through `mask_loose`, and the result is one clean line with "…"
    where text was left out. With no hits, the first `2 * width` characters, masked.
    """
    spans = [(max(0, s), min(len(text), e), lab) for s, e, lab in _merged(hits) if e > s]
    if not spans:
        end = min(len(text), 2 * width)
        end = _word_end(text, end)
        return _clean(mask_loose(text[:end])) + ("…" if end < len(text) else "")
    lo = max(0, spans[0][0] - width)
    hi = min(len(text), spans[0][1] + width)
    lo, hi = _word_start(text, lo), _word_end(text, hi)
    changed = True
    while changed:  # include whole hits that straddle an edge
        changed = False
        for s, e, _ in spans:
            if s < hi and e > lo and (s < lo or e > hi):
                lo, hi, changed = min(lo, s), max(hi, e), True
    parts: list[str] = []
    pos = lo
    for s, e, lab in spans:
        if e <= lo or s >= hi:
            continue
        parts.append(mask_loose(text[pos:s]))
        parts.append(redact_value(text[s:e], lab))
        pos = e
    parts.append(mask_loose(text[pos:hi]))
    return ("…" if lo > 0 else "") + _clean("".join(parts)).strip() + ("…" if hi < len(text) else "")


def _word_start(text: str, i: int) -> int:
    """Move `i` left to the start of the word it is in (at most 40 characters)."""
    j = i
    while j > 0 and i - j < 40 and not text[j - 1].isspace():
        j -= 1
    return j if j == 0 or text[j - 1].isspace() else i


def _word_end(text: str, i: int) -> int:
    """Move `i` right to the end of the word it is in (at most 40 characters)."""
    j = i
    while j < len(text) and j - i < 40 and not text[j].isspace():
        j += 1
    return j if j == len(text) or text[j].isspace() else i
