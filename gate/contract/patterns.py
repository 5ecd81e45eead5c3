"""Every regular expression a contract or scorecard brings, compiled and matched by RE2.

Why: these patterns (`fields.*.pattern`, `refusal.when_user_matches`, `refusal.expect_text_matches`, JSON
Schema `pattern`/`patternProperties` in output, tool and format-scorer schemas, a refusal scorer's `patterns`)
come from a pull request and run over every row. A backtracking engine (Python's `re`, `regress`) takes
exponential time on one crafted line for shapes nobody can list in advance (`^(a+)+$`, `^(a|aa)+$`,
`(\\d|\\d\\d)*x`, ...). RE2 matches in time linear in the text whatever the pattern, so the guarantee holds
by construction rather than by a screen. What RE2 cannot run in linear time it cannot compile (backreferences,
lookahead/lookbehind, possessive and atomic groups): such a pattern is refused at load with the reason.

Two dialects are accepted:
- `python`: contract fields and refusal rules, scorer patterns. RE2's syntax is Python's minus the constructs
  above; `\\Z` is read as end of text. Classes are RE2's (ASCII `\\d`, `\\w`, `\\s`; `\\p{L}` for Unicode) and
  `$` matches only at the very end (Python's also matched before a final newline).
- `ecma`: JSON Schema patterns (ECMA-262, unicode mode). The pattern must also be valid ECMA-262 (checked by
  gate.contract.schemas with `regress`), then it is translated to the RE2 spelling with ECMA's meaning:
  `\\uXXXX`/`\\u{X}` escapes, `.` (no line terminator) and `\\s`/`\\S` (ECMA's Unicode white space).
"""

from __future__ import annotations

import functools
from typing import Any

#: ECMA-262 WhiteSpace and LineTerminator, the set `\s` means in a JSON Schema pattern
_ECMA_SPACE = r"\t\n\x{0B}\f\r \x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}"
_ECMA_DOT = r"[^\n\r\x{2028}\x{2029}]"
#: ECMA-262 `\p{...}` General_Category long names and aliases (Unicode PropertyValueAliases) -> RE2's short ones
_GC = {
    "Other": "C", "Control": "Cc", "cntrl": "Cc", "Format": "Cf", "Private_Use": "Co", "Surrogate": "Cs",
    "Letter": "L", "Lowercase_Letter": "Ll", "Modifier_Letter": "Lm", "Other_Letter": "Lo",
    "Titlecase_Letter": "Lt", "Uppercase_Letter": "Lu", "Mark": "M", "Combining_Mark": "M", "Spacing_Mark": "Mc",
    "Enclosing_Mark": "Me", "Nonspacing_Mark": "Mn", "Number": "N", "Decimal_Number": "Nd", "digit": "Nd",
    "Letter_Number": "Nl", "Other_Number": "No", "Punctuation": "P", "punct": "P", "Connector_Punctuation": "Pc",
    "Dash_Punctuation": "Pd", "Close_Punctuation": "Pe", "Final_Punctuation": "Pf", "Initial_Punctuation": "Pi",
    "Other_Punctuation": "Po", "Open_Punctuation": "Ps", "Symbol": "S", "Currency_Symbol": "Sc",
    "Modifier_Symbol": "Sk", "Math_Symbol": "Sm", "Other_Symbol": "So", "Separator": "Z", "Line_Separator": "Zl",
    "Paragraph_Separator": "Zp", "Space_Separator": "Zs",
}
_PROPERTY_KEYS = ("General_Category=", "gc=", "Script=", "sc=", "Script_Extensions=", "scx=")
#: an RE2 program larger than this (bytes of compiled automaton) is refused at load: `(a{1000}){1000}` style
_MAX_MEM = 32 << 20


class PatternProblem(ValueError):
    """A pattern gate will not run; the message says why in one line."""


def _options() -> Any:
    import re2

    opts = re2.Options()
    opts.log_errors = False  # RE2 would print the parse error to stderr: the caller says it once, on one line
    opts.max_mem = _MAX_MEM
    return opts


@functools.lru_cache(maxsize=4096)
def compile_pattern(pattern: str, dialect: str = "python") -> Any:
    """The RE2 program for `pattern` (`.search`, `.match`, `.fullmatch` as in `re`); PatternProblem when RE2
    cannot run it in linear time or it is not a regular expression."""
    import re2

    source = _from_ecma(pattern) if dialect == "ecma" else _from_python(pattern)
    try:
        return re2.compile(source, _options())
    except re2.error as exc:
        reason = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise PatternProblem(_explain(reason)) from None


def problem(pattern: str, dialect: str = "python") -> str | None:
    """Why `pattern` is refused, or None when RE2 runs it."""
    try:
        compile_pattern(pattern, dialect)
    except PatternProblem as exc:
        return str(exc)
    return None


def _explain(reason: str) -> str:
    """RE2's parse error, with what to do when it is a construct that cannot run in linear time."""
    reason = reason.replace("\n", " ")[:160]
    if any(k in reason for k in ("invalid perl operator", "invalid escape sequence: \\", "bad repetition operator")):
        return (f"uses a construct RE2 cannot run ({reason}): gate matches every pattern with RE2, in linear time, "
                "so lookarounds, backreferences, atomic groups and possessive quantifiers are refused; rewrite it "
                "without them")
    if "pattern too large" in reason:
        return f"pattern too large for RE2 ({reason}); use smaller repeat counts"
    return f"invalid regular expression for RE2 ({reason})"


def _from_python(pattern: str) -> str:
    """Python spellings RE2 reads differently: `\\Z` (end of text) is RE2's `\\z`."""
    if "\\Z" not in pattern:
        return pattern
    out, i = [], 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            out.append("\\z" if nxt == "Z" else ch + nxt)
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _from_ecma(pattern: str) -> str:
    """An ECMA-262 (unicode mode) pattern in RE2's spelling, with ECMA's meaning for `.`, `\\s`, `\\S` and
    `\\u` escapes. Everything else is passed through for RE2 to accept or refuse."""
    out: list[str] = []
    i, n, in_class = 0, len(pattern), False
    while i < n:
        ch = pattern[i]
        if ch == "\\" and i + 1 < n:
            nxt = pattern[i + 1]
            if nxt == "u":
                code, end = _ecma_unicode_escape(pattern, i)
                if code is not None:
                    out.append(f"\\x{{{code:X}}}")
                    i = end
                    continue
            if nxt in "pP" and pattern.startswith("{", i + 2) and "}" in pattern[i + 3:]:
                close = pattern.index("}", i + 3)
                out.append(f"\\{nxt}{{{_property(pattern[i + 3:close])}}}")
                i = close + 1
                continue
            if nxt == "s":
                out.append(_ECMA_SPACE if in_class else f"[{_ECMA_SPACE}]")
            elif nxt == "S" and not in_class:
                out.append(f"[^{_ECMA_SPACE}]")
            else:
                out.append(ch + nxt)
            i += 2
            continue
        if in_class:
            if ch == "]":
                in_class = False
            out.append(ch)
        elif ch == "[":
            in_class = True
            out.append(ch)
            if pattern.startswith("^", i + 1):  # `[^` and `[]` are the class's own start
                out.append("^")
                i += 1
        elif ch == ".":
            out.append(_ECMA_DOT)
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def _property(name: str) -> str:
    """An ECMA-262 property name in RE2's spelling (`Letter` -> `L`, `Script=Greek` -> `Greek`); Script_Extensions
    is read as Script. Anything else is passed on for RE2 to accept or refuse."""
    for key in _PROPERTY_KEYS:
        if name.startswith(key):
            name = name[len(key):]
            break
    return _GC.get(name, name)


def _ecma_unicode_escape(pattern: str, i: int) -> tuple[int | None, int]:
    """(code point, index after it) for `\\uXXXX`, a surrogate pair of them, or `\\u{X...}` at `i`."""
    rest = pattern[i + 2:]
    if rest.startswith("{"):
        close = rest.find("}")
        digits = rest[1:close] if close > 1 else ""
        if digits and all(c in "0123456789abcdefABCDEF" for c in digits):
            return int(digits, 16), i + 3 + close
        return None, i
    digits = rest[:4]
    if len(digits) < 4 or not all(c in "0123456789abcdefABCDEF" for c in digits):
        return None, i
    code = int(digits, 16)
    low = pattern[i + 6:i + 12]
    if 0xD800 <= code < 0xDC00 and low.startswith("\\u") and len(low) == 6 and all(
            c in "0123456789abcdefABCDEF" for c in low[2:]) and 0xDC00 <= int(low[2:], 16) < 0xE000:
        return 0x10000 + ((code - 0xD800) << 10) + (int(low[2:], 16) - 0xDC00), i + 12
    return code, i + 6


def combine(patterns: Any) -> Any:
    """One RE2 program matching where any of `patterns` (python dialect) matches: each keeps its own inline
    flags, since RE2 scopes `(?i)` to the group it is written in. None for no patterns."""
    patterns = list(patterns)
    if not patterns:
        return None
    for p in patterns:
        compile_pattern(p)  # each alone first: a refusal names the pattern, not the alternation
    return compile_pattern("|".join(f"(?:{_from_python(p)})" for p in patterns))
