"""Texts cut for spaCy: lone surrogates replaced one for one (offsets keep pointing into the caller's text), and
pieces of at most `chunk_chars` cut at a line break or a space."""

from __future__ import annotations

import re

_SURROGATE = re.compile("[\ud800-\udfff]")


def _sanitize(text: str) -> str:
    """Replace lone surrogates (JSON allows them; spaCy's UTF-8 encoding raises) by U+FFFD, one for one.

    Same length, so every offset still points into the caller's text.
    """
    if text.isascii() or not _SURROGATE.search(text):
        return text
    return _SURROGATE.sub("\ufffd", text)


def _chunks(text: str, limit: int) -> list[tuple[int, str]]:
    """Split `text` into pieces of at most `limit` characters, at a line break or space when there is one.

    Why: spaCy refuses texts over `nlp.max_length` and memory grows with document length. A cut in the middle
    of a value can only lose that one value; cutting at line breaks first makes that rare.
    """
    if len(text) <= limit:
        return [(0, text)]
    out = []
    start = 0
    while start < len(text):
        end = start + limit
        if end >= len(text):
            out.append((start, text[start:]))
            break
        cut = text.rfind("\n", start + limit // 2, end)
        if cut < 0:
            cut = text.rfind(" ", start + limit // 2, end)
        cut = end if cut < 0 else cut + 1
        out.append((start, text[start:cut]))
        start = cut
    return out
