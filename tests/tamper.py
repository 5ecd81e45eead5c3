"""A forged credential that is certain to differ from the real one.

Overwriting the last characters with "AA" leaves the value unchanged whenever it already ends so (about one
session in a thousand, measured), so the auth tests failed by chance. A session's MAC is compared as text and a
token's secret is hashed as text, so one character changed is always a different, wrong credential."""

_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def tampered(value: str) -> str:
    """`value` with the first character of its last `_`- or `.`-separated part replaced by another one."""
    cut = max(value.rfind("_"), value.rfind(".")) + 1
    first = value[cut]
    other = _ALPHABET[(_ALPHABET.index(first) + 1) % len(_ALPHABET)] if first in _ALPHABET else "A"
    return value[:cut] + other + value[cut + 1:]
