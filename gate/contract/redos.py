"""Refusing the regular expressions that backtrack without bound, before any row is matched against them.

Why: a contract's patterns (`fields.*.pattern`, `refusal.when_user_matches`, an output schema's `pattern`) come
from the pull request, and they run on backtracking engines (Python's `re`, and `regress` for ECMA-262 schema
patterns) over every row. A quantified group that itself holds an unbounded quantifier (`^(a+)+$`,
`^(\\w+\\s?)*$`) can take exponential time on one crafted line: the check never ends. No RE2-class engine is a
dependency here, so such a pattern is refused at load with one line, naming the field; an atomic group or a
possessive quantifier (`(?>...)`, `a++`), which cannot backtrack into, is accepted.
"""

from __future__ import annotations

import re
from typing import Any

try:  # Python 3.11+: the parser moved under re; the old module name warns
    import re._constants as _c
    import re._parser as _parser
except ImportError:  # pragma: no cover - older Pythons
    import sre_constants as _c  # type: ignore[no-redef]
    import sre_parse as _parser  # type: ignore[no-redef]

#: an outer repeat this many times or more counts as unbounded (`(\d{1,3}\.){3}` is fine; `(a+){1,1000}` is not)
_OUTER_MIN = 16
_REPEATS = (_c.MAX_REPEAT, _c.MIN_REPEAT)
#: a group, holding a quantifier, that is itself quantified: the shape the parser-based check finds, for the
#: ECMA-262 patterns Python cannot parse (`\p{L}`)
_TEXTUAL = re.compile(r"\((?:[^()\\]|\\.)*(?:[*+]|\{\d+,\})(?:[^()\\]|\\.)*\)(?:[*+]|\{\d+,\d*\})")


def problem(pattern: str) -> str | None:
    """Why `pattern` can backtrack without bound, or None when it cannot in the way this checks."""
    try:
        tree = _parser.parse(pattern)
    except (re.error, OverflowError, RecursionError, ValueError):
        return _NESTED if _TEXTUAL.search(pattern) else None
    return _walk(list(tree), inside=False)


_NESTED = ("a quantified group holds another unbounded quantifier (like `(a+)+` or `(\\w+\\s?)*`), which can "
           "backtrack exponentially on one line; rewrite it without the nesting (or use an atomic group `(?>...)`)")


def _can_repeat(sub: Any) -> bool:
    """Whether a repeated part can match more than nothing (an empty body cannot blow up by itself)."""
    lo, hi = sub.getwidth()
    return hi > 0


def _first_literal(items: list[Any]) -> int | None:
    """The character every match of `items` starts with, when it is one fixed character (`-[a-z]+` -> '-')."""
    while items:
        op, av = items[0]
        if op == _c.LITERAL:
            return int(av)
        if op == _c.SUBPATTERN:
            items = list(av[-1])
            continue
        if op in _REPEATS and av[0] >= 1:
            items = list(av[2])
            continue
        return None
    return None


def _separated(body: list[Any]) -> bool:
    """`(-[a-z0-9]+)*`: each repetition starts with a character none of its inner repeats can match, so the
    iterations cannot trade text between them and the match is linear: not a blow-up."""
    sep = _first_literal(body)
    if sep is None:
        return False
    from re import _compiler  # type: ignore[attr-defined]

    def inner(items: list[Any]) -> bool:  # True when no unbounded repeat inside can eat the separator
        for op, av in items:
            if op in _REPEATS:
                if av[1] == _c.MAXREPEAT:
                    sp = _parser.SubPattern(_parser.State(), list(av[2]))
                    try:
                        if _compiler.compile(sp, 0).fullmatch(chr(sep)):
                            return False
                    except Exception:  # undecidable here: treat as not separated
                        return False
                if not inner(list(av[2])):
                    return False
            elif op == _c.SUBPATTERN and not inner(list(av[-1])):
                return False
            elif op == _c.BRANCH and not all(inner(list(b)) for b in av[1]):
                return False
        return True

    return inner(body[1:] if body and body[0][0] == _c.LITERAL else body)


def _walk(items: list[Any], inside: bool) -> str | None:
    for op, av in items:
        if op in _REPEATS:
            lo, hi, sub = av
            unbounded = hi == _c.MAXREPEAT
            if inside and unbounded and _can_repeat(sub):
                return _NESTED
            outer = (unbounded or hi >= _OUTER_MIN) and _can_repeat(sub) and not _separated(list(sub))
            found = _walk(list(sub), inside or outer)
        elif op == _c.SUBPATTERN:
            found = _walk(list(av[-1]), inside)
        elif op == _c.BRANCH:
            found = next((f for b in av[1] if (f := _walk(list(b), inside))), None)
        elif op in (_c.ASSERT, _c.ASSERT_NOT):
            found = _walk(list(av[1]), inside)
        else:  # literals, classes, anchors; atomic groups and possessive repeats cannot be backtracked into
            found = None
        if found:
            return found
    return None
