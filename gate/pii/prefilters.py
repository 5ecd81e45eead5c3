"""Prefilters: for each presidio recogniser a cheap search that must match before it can report anything, derived
from the recogniser's own regexes, so a text a prefilter rejects cannot hold a hit (what keeps the fast scan equal
to presidio's plain loop); and the phone windows, the only spans phonenumbers needs to see."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

from gate.pii.config import PiiConfig


def _url_prefilter() -> str | None:
    """`[.](?:com|edu|...)`: every presidio URL pattern embeds this dot + top-level-domain group.

    Extracted from presidio's own regex (not copied) so a new TLD list is picked up; `None` (= always run the
    recogniser) when the regex no longer has the expected shape.
    """
    from presidio_analyzer.predefined_recognizers import UrlRecognizer

    base = UrlRecognizer.BASE_URL_REGEX
    start, end = base.find("[.](?:"), base.find("(?:/[^")
    if start < 0 or end <= start:
        return None
    group = base[start:end]
    if group.count("(") != group.count(")"):
        return None
    return group


def _prefilters(config: PiiConfig) -> dict[str, Callable[[str], Any]]:
    """Per presidio recogniser class: a cheap search that must succeed for the recogniser to report anything.

    Each is derived from the recogniser's own regexes, compiled with the same regex engine and flags, so a text
    it rejects cannot produce a hit (soundness is what keeps `scan_texts` identical to the plain loop):
    e-mail needs "@"; URL needs "." + a TLD; every IPv4 form (alone or inside IPv6) holds four dotted octets,
    so "digit.1-3 digits.1-3 digits.digit" (a version number "v8.28.8" has three), and every IPv6 form holds two
    colons with at most four hex digits between them (a compressed form holds "::"; the full form is eight groups
    joined by colons); a card opens with four digits, then an optional separator, three or four digits, an optional
    separator and three more; every SSN pattern holds 3 digits, 2 and 4, with at most a separator between each;
    an IBAN starts with two letters (either case: the recogniser matches case-insensitively) and two digits. For
    phones the prefilter is the post-filter itself (a hit must contain `phone_min_digits` digits in close
    succession), so texts without such a run skip phonenumbers entirely.
    """
    import regex

    flags = regex.DOTALL | regex.MULTILINE | regex.IGNORECASE
    out: dict[str, Callable[[str], Any]] = {
        "EmailRecognizer": regex.compile(r"[@]", flags).search,
        "IpRecognizer": regex.compile(r"[0-9]\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]|:[0-9a-f]{0,4}:", flags).search,
        "CreditCardRecognizer": regex.compile(r"\d{4}[- ]?\d{3}\d?[- ]?\d{3}", flags).search,
        "UsSsnRecognizer": regex.compile(r"[0-9]{3}[- .]?[0-9]{2}[- .]?[0-9]{4}", flags).search,
        "IbanRecognizer": regex.compile(r"[A-Z]{2}[0-9]{2}", flags).search,
        "PhoneRecognizer": _phone_run(config.phone_min_digits).search,
    }
    url = _url_tld()
    if url is not None:
        out["UrlRecognizer"] = url.search
    return out


@functools.lru_cache(maxsize=8)
def _phone_run(min_digits: int) -> re.Pattern[str]:
    """A phone-like run: `min_digits` digits, consecutive ones at most 4 non-letter characters apart (phonenumbers
    allows ≤ 4 punctuation characters; "x" is its only letter), not starting with a calendar date (2024-06-11,
    11/06/2024), not starting inside a longer number.

    Used twice with the same meaning, which is what keeps the fast path exact: as a post-filter (a phone hit
    without such a run inside it is dropped) and as the prefilter (text without one never reaches phonenumbers).
    """
    if min_digits <= 1:
        return re.compile(r"\d")
    date = r"(?!\d{4}[-/.]\d{1,2}[-/.]\d{1,2}(?!\d)|\d{1,2}[-/.]\d{1,2}[-/.]\d{4}(?!\d))"
    return re.compile(r"(?<!\d)" + date + r"\d(?:[\W_xX]{0,4}\d){" + str(min_digits - 1) + "}")


@functools.lru_cache(maxsize=1)
def _phone_safe_cut() -> re.Pattern[str] | None:
    """Whitespace runs that no phonenumbers candidate can contain: a letter on both sides, neither of which is a
    letter phonenumbers accepts inside a number ("x" as a separator, "ー").

    Why this is exact: a phonenumbers match (`PhoneNumberMatcher._PATTERN`) holds whitespace only inside its
    punctuation blocks (neighbours: digits, punctuation, brackets, "+" or "x"), before an extension label
    (left neighbour: a digit or ",") or after one (right neighbour: a digit, "," or "-"); newlines never. So
    the text can be cut there, and the matcher, run on the pieces, examines the same candidates with the same
    neighbouring characters as on the whole text. `None` when phonenumbers' internals are not as expected.
    """
    try:
        from phonenumbers import phonenumbermatcher as matcher
        from phonenumbers import phonenumberutil as util

        alphabet = re.compile(
            "[" + util._VALID_PUNCTUATION + util._PLUS_CHARS + matcher._OPENING_PARENS + matcher._CLOSING_PARENS
            + "]", re.IGNORECASE | re.UNICODE)
    except (ImportError, AttributeError, re.error):
        return None
    phone_letters = sorted({c for c in map(chr, range(0x30000)) if c.isalpha() and alphabet.fullmatch(c)})
    excluded = "".join(re.escape(c) for c in phone_letters)
    letter = rf"[^\W\d_{excluded}]"
    return re.compile(rf"(?<={letter})\s+(?={letter})")


def _phone_windows(text: str, min_digits: int) -> list[tuple[int, int]]:
    """Spans of `text` (unions of pieces between safe cuts) that hold a run of `min_digits` close digits.

    Only these can hold a phone hit that survives the post-filter; everything else is never shown to
    phonenumbers in the first pass of `scan_texts`.
    """
    cut = _phone_safe_cut()
    run = _phone_run(min_digits)
    if cut is None:
        return [(0, len(text))] if run.search(text) else []
    bounds = [0, *(m.end() for m in cut.finditer(text)), len(text)]
    windows: list[tuple[int, int]] = []
    for a, b in zip(bounds, bounds[1:], strict=False):
        if a < b and run.search(text, a, b):
            if windows and windows[-1][1] == a:
                windows[-1] = (windows[-1][0], b)
            else:
                windows.append((a, b))
    return windows


@functools.lru_cache(maxsize=1)
def _url_tld() -> Any:
    """The URL prefilter's dot + top-level-domain group as a compiled `regex` pattern (None: no such group): the
    prefilter itself and what `_url_windows` finds the runs by."""
    import regex

    group = _url_prefilter()
    return None if group is None else regex.compile(group, regex.DOTALL | regex.MULTILINE | regex.IGNORECASE)


@functools.lru_cache(maxsize=1)
def _whitespace() -> tuple[Any, Any]:
    """`\\s` of the `regex` engine presidio's URL patterns are matched with, searched forwards and backwards."""
    import regex

    return regex.compile(r"\s"), regex.compile(r"(?r)\s")


def _url_windows(text: str) -> list[tuple[int, int]]:
    """The whitespace-free runs of `text` that hold a dot + top-level domain: the only places presidio's URL
    patterns can match.

    Why this is exact: every URL pattern is made of character classes and literals that exclude whitespace (host
    characters, the TLD group, a path of `[^\\s()<>"']`, quotes), with no anchor, lookaround or word boundary,
    and every match holds the TLD group. So a match lies inside one run, depends on that run's characters only,
    and `finditer` over the whole text meets each run fresh (the previous match ended in an earlier run): on the
    run alone the same matches come out, shifted by its offset.
    """
    tld = _url_tld()
    if tld is None:
        return [(0, len(text))]
    forward, backward = _whitespace()
    windows: list[tuple[int, int]] = []
    for m in tld.finditer(text):
        if windows and m.start() < windows[-1][1]:
            continue
        before = backward.search(text, 0, m.start())
        after = forward.search(text, m.end())
        windows.append((before.end() if before else 0, after.start() if after else len(text)))
    return windows

