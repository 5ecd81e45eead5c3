"""Redacted forms and report snippets that never contain the value they point at, nor what might be personal.

Why: reports, logs, JUnit files, the DuckDB record and the dashboard need to show *where* a finding is and roughly
*what* it is, so a reviewer can judge it, but they are often public (CI logs) and must not become the leak. Each
form keeps at most a non-identifying hint: the first letter of an e-mail's local part and domain plus its
top-level domain, a phone number's country code, a card's first digit (the network), an IBAN's country, a key's
vendor prefix. Names, places, addresses, SSNs and IPs become a typed placeholder.

A snippet also masks its *context*, because a detector that missed a value must not cause the report to print
it. The context goes through `mask_context`, which masks by ALLOWLIST, not denylist: it shows only the words of a
fixed list of common English words (`common_words.txt` beside this module: wordfreq's most frequent words less
every given name, surname and place name of offline gazetteers; its header names the sources and licences) and
punctuation. Every other token is shape-masked, spaCy-style: "Naomi" becomes "Xxxxx", "naomi" "xxxx", "Höfn"
"Xxxx", "19" "dd" (runs of one shape capped at four, so a shape does not even tell a long value's length). A
name, place or number the recognisers missed (lower case, non-English, unusual) is never shown, whatever its
case or spelling; only the shape of a word tells that something was there. E-mail, URL and
domain shapes and long opaque tokens keep the one-character hints of `redact_value`. With NER on, the `pii` and
`secret` checks add the spans the NER model tags (`gate.pii.presidio_engine.recall_spans_texts`), each a typed
placeholder (<PERSON>) rather than a shape: what the allowlist shows is a name made only of common words ("Will
White"); with NER off no model is loaded and the allowlist alone masks. This is the one module that makes
snippets: `snippet` for a text with hits, `value_snippet` for a value a check quotes; `mask_ident` masks
identifiers (row ids, file, split and field names) that look like personal data or secrets.
"""

from __future__ import annotations

import bisect
import functools
import re
import unicodedata
from collections.abc import Sequence
from importlib import resources
from typing import NamedTuple, Protocol


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

#: One alternation, scanned once left to right, so a replacement is never masked again, and the placeholders and
#: redacted e-mails and URLs it meets are left as they are (a stored snippet may be masked a second time).
#: Order matters where two alternatives start at one place.
_CONTEXT = re.compile(
    r"(?P<keep><[A-Z][A-Z0-9_ ]{0,40}>|[^\s@*]?\*{3}@[^\s@*]?\*{3}(?:\.[A-Za-z]{1,6})?"
    r"|(?<![^\W_*])[^\W_]\*{3}"  # a redacted form's one-character hint: "4***", "j***"
    r"|https?://[^\s*]?\*{3})"  # written here: a placeholder (<PERSON>), a redacted e-mail or URL
    r"|(?P<email>[\w.+\-]+@[\w\-]+(?:\.[\w\-]+)+)"
    r"|(?P<at>[^\s@]*@\S*)"  # a cut or odd address: whatever is glued to an "@"
    r"|(?P<url>(?:[a-z][a-z0-9+.\-]{1,9}://|www\.)[^\s<>\"'`]+)"
    r"|(?P<domain>(?<![\w.@-])[\w\-]+(?:\.[\w\-]+)*\.(?:com|org|net|io|info|biz|edu|gov|co|uk|de|fr|es|it|nl|eu"
    r"|us|ca|au|ch|at|be|se|no|dk|pl|ru|cn|jp|in|br|me|app|dev)\b(?:/[^\s<>\"'`]*)?)"
    r"|(?P<token>[A-Za-z0-9_\-+/=]{24,})"
    r"|(?P<digits>\+?\d(?:[ \-().,/]{0,2}\d)*(?![^\W_]))"  # any number: phones, cards, ids, dates, postcodes
    r"|(?P<word>(?<![^\W_])[^\W_]+(?:['’][^\W_]+)*(?:['’](?![^\W_]))?(?![^\W_]))"  # a word (letters, digits,
    # inner apostrophe) and an apostrophe glued to its end, read by `_mask_word_at`
)


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
        out = value[:2].upper() + "***" if value[:2].isalpha() else "***"
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
    """Mask what looks like a contact or a credential in free text: e-mails, long digit runs, opaque tokens.

    For log lines and messages, which must stay readable (capitalised words and dates are kept); digits after
    the first become "*", so the shape stays readable ("4*** **** **** ****"). Snippets of data use the stricter
    `mask_context`.
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


def _context_sub(m: re.Match[str]) -> str:
    kind, s = m.lastgroup, m.group(0)
    if kind == "keep":
        return s
    if kind == "email":
        return redact_value(s, "EMAIL_ADDRESS")
    if kind in ("at", "domain"):
        return s[:1] + "***" if s[:1] != "@" else "@***"
    if kind == "url":
        return redact_value(s, "URL")
    if kind == "token":
        if any(c.isdigit() for c in s) and any(c.isalpha() for c in s):
            return s[0] + "***"  # maybe a key: unlike a reported secret, no vendor prefix is known to be safe
        return _WORD_IN.sub(lambda w: _mask_word(w.group(0)), s)  # not a key: mask its words
    if kind == "digits":
        return shape(s)
    return _mask_word_at(m)


#: An opening single quote: an apostrophe at a word's start, after the line's start, a space or an opening bracket.
_OPENING_QUOTE = re.compile(r"(?:^|(?<=[\s(\[{=:,]))['’](?=[^\W_])")


def _mask_word_at(m: re.Match[str]) -> str:
    """`_mask_word` for a word that may end with an apostrophe.

    Why: an apostrophe glued to a word's end makes another word unless it closes a quote or makes a plural's
    possessive ("the users'"): in Italian typed without accents it is the accent ("perche'", the town Onè written
    "One'"), so "One'" is not the common word "one" and showing it shows the name.
    """
    s = m.group(0)
    if s[-1:] not in ("'", "’"):
        return _mask_word(s)
    stem, mark = s[:-1], s[-1]
    line = m.string[m.string.rfind("\n", 0, m.start()) + 1:m.start() + 1]  # with the word's first character
    opened = [q.start() for q in _OPENING_QUOTE.finditer(line)]
    if opened and not re.search(r"[^\W_]['’](?![^\W_])", line[opened[-1]:]):  # closes the quote opened before it
        return _mask_word(stem) + mark
    if stem.lower().endswith("s") and stem.lower() in common_words():
        return stem + mark
    return shape(s)


def _mask_word(s: str) -> str:
    """A word of the allowlist as it is (any case: "Please", "THE"); any other word as its shape."""
    if s.lower().replace("’", "'") in common_words() or _SHAPE_ONLY.fullmatch(s):
        return s  # a shape already ("Xxxxx", "dddd"): masking a stored snippet again changes nothing
    return shape(s)


#: A token made only of shape letters (X, x, d) in runs of at most four: it shows nothing, so it stays.
_SHAPE_ONLY = re.compile(r"(?:X{1,4}|x{1,4}|d{1,4})+")


def shape(token: str) -> str:
    """The token's shape: upper-case letters "X", other letters "x", digits "d", anything else as it is; a run of
    one shape character is capped at four ("Ziegelgasse" -> "Xxxxx", "+44 20 7946" -> "+dd dd dddd")."""
    out: list[str] = []
    run = 0
    for c in token:
        k = "d" if c.isdigit() else ("X" if c.isupper() else "x") if c.isalpha() else c
        run = run + 1 if out and out[-1] == k and k in "Xxd" else 1
        if run <= 4:
            out.append(k)
    return "".join(out)


@functools.cache
def common_words() -> frozenset[str]:
    """The allowlist (`common_words.txt`, shipped with gate): lower-case words a snippet may show."""
    text = resources.files("gate.pii").joinpath("common_words.txt").read_text(encoding="utf-8")
    return frozenset(w for w in text.split("\n") if w and not w.startswith("#"))


_WORD_IN = re.compile(r"[^\W_]+")


def mask_context(text: str) -> str:
    """High-recall masking of everything in `text` that could be personal, without a model (module docstring).

    "Jane Doe, 221 Baker Street, jane@x.org, +44 20 7946 0958, born 1985-03-12" becomes
    "Xxxx Xxx, ddd Xxxxx Street, j***@x***.org, +dd dd dddd dddd, born dddd-dd-dd"; masking that again changes
    nothing.
    """
    return _CONTEXT.sub(_context_sub, text)


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


def _window_spans(reported: Sequence[tuple[int, int, str]], extra: Sequence[tuple[int, int, str]]
                  ) -> list[tuple[int, int, str]]:
    """Reported hits and recall spans as disjoint spans: overlapping ones merge; a merged span keeps a reported
    hit's label (its redacted form may keep a hint, e.g. an e-mail's initial), else the longest recall label."""
    items = sorted([(s, e, lab, True) for s, e, lab in reported] + [(s, e, lab, False) for s, e, lab in extra],
                   key=lambda t: (t[0], -t[1]))
    out: list[tuple[int, int, str, bool, int]] = []  # start, end, label, reported, length of the label's span
    for s, e, lab, rep in items:
        if out and s < out[-1][1]:
            cs, ce, clab, crep, clen = out[-1]
            if (rep and not crep) or (rep == crep and e - s > clen):
                clab, crep, clen = lab, rep, e - s
            out[-1] = (cs, max(ce, e), clab, crep, clen)
            continue
        out.append((s, e, lab, rep, e - s))
    return [(s, e, lab) for s, e, lab, _, _ in out]


class Merged(NamedTuple):
    """The hits of a text as `snippet` masks them (`merged_spans`): sorted, disjoint spans and their ends."""

    spans: list[tuple[int, int, str]]
    ends: list[int]


def merged_spans(text: str, hits: Sequence[Span]) -> Merged:
    """The hits of `text` as `snippet` masks them: overlapping ones merged, clipped to the text; sorted, disjoint.

    A caller building one snippet per hit of a field computes this once and passes it as `merged`: merging every
    hit again for each of them was quadratic in the field's hits (a 100 KB row of 3,000 addresses took 31 CPU s).
    """
    spans = [(max(0, s), min(len(text), e), lab) for s, e, lab in _merged(hits) if e > s]
    return Merged(spans, [e for _, e, _ in spans])


def _overlapping(merged: Merged, lo: int, hi: int) -> list[tuple[int, int, str]]:
    """The merged spans that overlap [lo, hi): a binary search, then only those."""
    out = []
    for k in range(bisect.bisect_right(merged.ends, lo), len(merged.spans)):
        if merged.spans[k][0] >= hi:
            break
        out.append(merged.spans[k])
    return out


def snippet_window(text: str, hits: Sequence[Span], width: int = 60, *, focus: Span | None = None,
                   merged: Merged | None = None) -> tuple[int, int]:
    """The part of `text` that `snippet` shows: `width` characters around `focus` (default: the first hit), moved
    to word boundaries and widened so no hit straddles an edge (a cut value would show its tail unredacted).

    Exposed so a caller can run its recall scan on many windows in one batch before building the snippets.
    `merged`: `merged_spans(text, hits)`, for a caller that asks for many windows over the same hits.
    """
    m = merged_spans(text, hits) if merged is None else merged
    if not m.spans:
        return 0, _word_end(text, min(len(text), 2 * width))
    f_start, f_end = (focus.start, focus.end) if focus is not None else m.spans[0][:2]
    lo, hi = _word_start(text, max(0, f_start - width)), _word_end(text, min(len(text), f_end + width))
    while True:  # include whole hits that straddle an edge
        inside = _overlapping(m, lo, hi)
        wider = (min([lo, *(s for s, _, _ in inside)]), max([hi, *(e for _, e, _ in inside)]))
        if wider == (lo, hi):
            return lo, hi
        lo, hi = wider


def snippet(text: str, hits: Sequence[Span], width: int = 60, *, focus: Span | None = None,
            extra: Sequence[tuple[int, int, str]] = (), merged: Merged | None = None) -> str:
    """About `width` characters of context on each side of `focus` (default: the first hit), every hit in the
    window redacted and the rest of the window through `mask_context` (see `snippet_window`).

    `extra`: more (start, end, label) spans of `text` to mask with a typed placeholder, typically a recall scan
    (`gate.pii.recall_spans_texts`) of what the reported hits left out. The result is one clean line with "…"
    where text was left out. With no hits, the first `2 * width` characters, masked. `merged`: as for
    `snippet_window`.
    """
    m = merged_spans(text, hits) if merged is None else merged
    lo, hi = snippet_window(text, hits, width, focus=focus, merged=m)
    inside = _overlapping(m, lo, hi)
    if extra:
        around = [(max(s, lo), min(e, hi), lab) for s, e, lab in extra if s < hi and e > lo]
        inside = _window_spans(inside, around)
    parts: list[str] = []
    pos = lo
    for s, e, lab in inside:
        parts.append(mask_context(_clean(text[pos:s])))
        parts.append(redact_value(text[s:e], lab))
        pos = e
    parts.append(mask_context(_clean(text[pos:hi])))
    return ("…" if lo > 0 else "") + _clean("".join(parts)).strip() + ("…" if hi < len(text) else "")


def value_snippet(value: object, width: int = 80, *, words: bool = False) -> str:
    """A short, masked, single-line rendering of a value a check quotes (a field value, a repeated segment).

    `mask_context` first; with `words`, every remaining word of two or more letters is reduced to its initial
    too, for values that are free text rather than identifiers. Cut at a space before masking, so no value is
    split where its shape (an e-mail) would no longer be recognised.
    """
    text = value if isinstance(value, str) else repr(value)
    text = " ".join(text.split())
    if len(text) > 4 * width:
        cut = text.rfind(" ", 0, 4 * width)
        text = text[: cut if cut > 0 else 4 * width]
    text = mask_context(text)
    if words:
        text = _WORD.sub(lambda m: m.group(1) + "*" * min(len(m.group(2)), 3), text)
    if len(text) > width:
        text = text[: width - 1] + "…"
    return text


_WORD = re.compile(r"(?<![^\W\d_])([^\W\d_])([^\W\d_'’\-]+)(?![^\W\d_])")


def _word_start(text: str, i: int) -> int:
    """Move `i` left to the start of the word it is in (at most 80 characters)."""
    j = i
    while j > 0 and i - j < 80 and not text[j - 1].isspace():
        j -= 1
    return j if j == 0 or text[j - 1].isspace() else i


def _word_end(text: str, i: int) -> int:
    """Move `i` right to the end of the word it is in (at most 80 characters)."""
    j = i
    while j < len(text) and j - i < 80 and not text[j].isspace():
        j += 1
    return j if j == len(text) or text[j].isspace() else i


# --------------------------------------------------------------------------------- identifiers

#: Shapes an identifier must not show: an e-mail, a phone or card number (9+ digits, or 7+ with separators), an
#: IBAN, an IPv4 address, an opaque token (20+ key characters without a separator, with letters and digits, not
#: a hex digest: a path or "test_a_long_name_2" is no token); secrets by gate.pii.secrets' own patterns.
_IDENT = re.compile(
    r"(?P<email>[\w.+\-]+@[\w\-]+(?:\.[\w\-]+)+)"
    r"|(?P<iban>(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]{4}){3,7}(?:[ ]?[A-Z0-9]{1,4})?(?![A-Za-z0-9]))"
    r"|(?P<ip>(?<![\d.])\d{1,3}(?:\.\d{1,3}){3}(?![\d.]))"
    r"|(?P<token>(?<![A-Za-z0-9+=])[A-Za-z0-9+=]{20,}(?![A-Za-z0-9+=]))"
    r"|(?P<digits>(?<!\w)\+?\d(?:[ \-().]{0,2}\d){6,})"
)


_HEX = re.compile(r"[0-9a-f]+|[0-9A-F]+")


def one_line(text: str) -> str:
    """`text` on one line with every control or invisible format character written as a visible escape ("\\n",
    "\\x1b", "\\u202e"): a file, split or field name can then neither start a new line in a log (where a line
    that starts with "::" is a GitHub workflow command, e.g. `::add-mask::`) nor reorder a report visually."""
    if text.isprintable():  # the common case, in C: no control, format or line-separator character at all
        return text
    out = []
    for c in text:
        cat = unicodedata.category(c)
        if cat in ("Cc", "Cf", "Cs", "Zl", "Zp"):
            out.append({"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(c) or
                       (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"))
        else:
            out.append(c)
    return "".join(out)


def mask_ident(text: str, *, numbers: bool = True) -> str:
    """An identifier (a row id, a file, split or field name) or a message quoting one, safe for every output:
    one line (`one_line`), and what looks like personal data or a secret replaced by its redacted form, as in a
    snippet ("jane.roe@example.org" -> "j***@e***.org", "AKIAIOSFODNN7EXAMPLE" -> "AKIA***"). Ordinary ids
    ("tri-000123", "train", "messages[0].content") stay as they are, so a reviewer can still find the row.
    Masking again changes nothing. `numbers=False` for a message gate wrote ("at characters 10234-10251"): it
    quotes values only through the snippet maskers, so only identifiers' e-mails and secrets are masked in it."""
    text = one_line(text)
    if not (_MAYBE if numbers else _MAYBE_NO_NUMBERS).search(text):
        return text  # the common case (a split, a field path, a short id or message): one scan, nothing to mask
    return _mask_ident_spans(text, numbers)


#: What any shape `mask_ident` masks needs somewhere: an "@", a run of 16+ key characters, 7+ digits with short
#: separators, an IPv4-like dotted number, or a word that introduces a secret.
_MAYBE = re.compile(r"@|[A-Za-z0-9_\-+/=]{16,}|\d(?:[ \-().]{0,2}\d){6,}|\d\.\d{1,3}\.\d"
                    r"|(?i:pass|pwd|secret|token|key|pin\b|bearer|auth|private|aws)")


_MAYBE_NO_NUMBERS = re.compile(r"@|[A-Za-z0-9_\-+/=]{16,}"
                               r"|(?i:pass|pwd|secret|token|key|pin\b|bearer|auth|private|aws)")


@functools.lru_cache(maxsize=65_536)
def _mask_ident_spans(text: str, numbers: bool = True) -> str:
    from gate.pii.secrets import OWN_PATTERNS, _is_placeholder

    spans: list[tuple[int, int, str]] = []
    for kind, pattern, group in OWN_PATTERNS:
        for m in pattern.finditer(text):
            s, e = m.span(group)
            if e > s and not (group and _is_placeholder(text[s:e], kind)):
                spans.append((s, e, kind))
    for m in _IDENT.finditer(text):
        kind = m.lastgroup or ""
        if kind == "token" and (_HEX.fullmatch(m.group(0)) or sum(c.isdigit() for c in m.group(0)) < 2
                                or sum(c.isalpha() for c in m.group(0)) < 2):
            continue
        if kind in ("digits", "ip") and not numbers:
            continue
        if kind == "digits" and (_ISO_DATE.match(m.group(0)) or (m.group(0).isdigit() and len(m.group(0)) < 9)):
            continue  # a date or a timestamp in a run id or a file name; a plain number id of up to 8 digits
        label = {"email": "EMAIL_ADDRESS", "iban": "IBAN_CODE", "ip": "IP_ADDRESS", "digits": "PHONE_NUMBER"}.get(kind)
        spans.append((m.start(), m.end(), label or "token"))
    if not spans:
        return text
    out, pos = [], 0
    for s, e, label in sorted(_merged([_S(s, e, lab) for s, e, lab in spans])):
        out.append(text[pos:s])
        value = text[s:e]
        out.append(shape(value) if label == "PHONE_NUMBER" else redact_value(value, label))
        pos = e
    out.append(text[pos:])
    return "".join(out)


class _S:
    """A (start, end, label) span for `_merged`."""

    __slots__ = ("end", "label", "start")

    def __init__(self, start: int, end: int, label: str) -> None:
        self.start, self.end, self.label = start, end, label
