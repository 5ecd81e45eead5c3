"""Where a chat message holds code rather than prose: fenced and inline code, SQL, JSON, identifier lists.

Why: a NER model reads identifiers as names and places. On a SQL-assistant dataset the default PII check gave
285 findings (PERSON 179, LOCATION 105), nearly all table and column names (`Schema: <PERSON>, <PERSON>, kind,
ts`), and failed clean data while the one real e-mail address was buried among them. Code spans are scanned by
the pattern recognisers only (an e-mail address or a key inside code is still found); prose around them keeps
the NER model. The heuristics are deliberately line-based and cheap (they run on every message): a line counts
as code when it has the shape of a statement, markup or a list of identifiers, not when it merely mentions a
keyword ("select a plan from the list" stays prose).
"""

from __future__ import annotations

import json
import re

#: ```lang ... ``` and ~~~ ... ~~~ blocks (an unclosed fence runs to the end of the text, as Markdown renders it)
_FENCE = re.compile(r"(?ms)^[ \t]*(```|~~~)[^\n]*\n.*?(?:^[ \t]*\1[ \t]*$|\Z)")
_INLINE = re.compile(r"`[^`\n]{1,400}`")
_SQL = re.compile(
    r"(?i)^\s*(?:select\b.+\bfrom\b|select\s+[\w*.,\s()]+$|insert\s+into\b|update\s+\w+\s+set\b|delete\s+from\b"
    r"|create\s+(?:or\s+replace\s+)?(?:table|view|index|unique\s+index)\b|alter\s+table\b|drop\s+(?:table|view)\b"
    r"|with\s+\w+\s+as\s*\(|from\s+[\w.]+(?:\s+\w+)?\s*$|(?:left\s+|right\s+|inner\s+|outer\s+|full\s+)?join\s+"
    r"[\w.]+|where\s+.*[=<>]|group\s+by\b|order\s+by\b|having\b|limit\s+\d+|union(?:\s+all)?\s*$|values\s*\()")
_CODE_LINE = re.compile(
    r"^\s*(?:def |class |import |from [\w.]+ import |return\b|function\b|const |let |var |public |private |"
    r"#include|package |func |fn |if\s*\(.*\)\s*\{|for\s*\(|while\s*\(|\}|\{|\]|</?[a-zA-Z][\w-]*[ >/])"
    r"|[;{]\s*$|=>|==|!=|:=|^\s*[\w.\[\]\"']+\s*[+\-*/]?=\s*\S|\w\(.*\)\s*$|^\s*[\"'][\w-]+[\"']\s*:")
#: "Schema: users(id, name, email)", "Columns: customer_id, amount, kind, ts": a label, then identifiers only
_IDENT_LIST = re.compile(r"^\s*(?:[\w ]{1,30}:\s*)?[\w.]+\s*(?:\([\w.,\s]*\))?(?:\s*,\s*[\w.]+(?:\([\w.,\s]*\))?){2,}"
                         r"\s*[.;]?\s*$")
_IDENT = re.compile(r"^[A-Za-z_][\w]*(?:\.[\w]+)*$")
_SNAKE_OR_CAMEL = re.compile(r"_|[a-z][A-Z]|\.\w|\w\(")


def _looks_like_json(text: str) -> bool:
    s = text.strip()
    if not s or s[0] not in "[{" or s[-1] not in "]}":
        return False
    try:
        json.loads(s)
    except ValueError:
        return False
    return True


def _code_line(line: str) -> bool:
    """One line of a message: statement-, markup- or identifier-shaped, not prose that names a keyword."""
    s = line.strip()
    if not s:
        return False
    if _SQL.search(s) or _CODE_LINE.search(s) or _looks_like_json(s):
        return True
    if _IDENT_LIST.match(s):
        items = [i.strip(" .;()") for i in re.split(r"[,()]", s.split(":", 1)[-1]) if i.strip(" .;()")]
        # "Call me: Jane, Bob, Alice." is a list of names: identifiers are lower-case, snake_case, dotted...
        return all(_IDENT.match(i) for i in items) and ("(" in s or any(
            i.islower() or _SNAKE_OR_CAMEL.search(i) or any(c.isdigit() for c in i) for i in items))
    words = s.split()
    idents = sum(1 for w in words if _SNAKE_OR_CAMEL.search(w))
    return len(words) >= 2 and idents / len(words) >= 0.5


def code_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of `text` that are code (merged, sorted); [] for plain prose.

    A whole message that is JSON is one span; otherwise fenced blocks, inline code and every code-shaped line.
    """
    if _looks_like_json(text):
        return [(0, len(text))]
    spans = [m.span() for m in _FENCE.finditer(text)]
    spans += [m.span() for m in _INLINE.finditer(text) if not any(s <= m.start() < e for s, e in spans)]
    pos = 0
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        if body and not any(s <= pos < e for s, e in spans) and _code_line(body):
            spans.append((pos, pos + len(body)))
        pos += len(line)
    spans.sort()
    merged: list[tuple[int, int]] = []
    for s, e in spans:
        if merged and s <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], e))
        else:
            merged.append((s, e))
    return merged


def blank(text: str, spans: list[tuple[int, int]], *, keep: bool) -> str:
    """`text` with the characters inside `spans` (`keep=False`) or outside them (`keep=True`) turned into spaces.

    Same length and same line breaks, so every offset a scan of the result reports points into `text`.
    """
    out = list(text)
    inside = [False] * len(text)
    for s, e in spans:
        for i in range(s, min(e, len(text))):
            inside[i] = True
    for i, c in enumerate(out):
        if inside[i] != keep and c not in "\r\n":
            out[i] = " "
    return "".join(out)
