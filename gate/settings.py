"""Site settings read from environment variables (timeouts, sizes), each parsed in one place.

A variable is set once for a machine or a CI job and then read by commands that have no flag for it, so a typo in
it must end the command with one line naming the variable and its value (exit 1), not a Python traceback from a
bare float()/int() far from where the value was set. An unset or blank variable means the default.
"""

from __future__ import annotations

import math
import os

from gate.errors import GateError


def _raw(name: str) -> str:
    return os.environ.get(name, "").strip()


def positive_seconds(name: str, default: float) -> float:
    """A wait in seconds from `$name`: finite and above 0, since 0 or a negative wait would fail every call at once
    and an infinite one cannot be handed to a socket."""
    raw = _raw(name)
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (value > 0 and math.isfinite(value)):
        raise GateError(f"{name} must be a positive number of seconds, not '{raw}'")
    return value


def count(name: str, default: int, *, minimum: int = 0) -> int:
    """A whole number of things from `$name`, at least `minimum` (0 is meaningful for sizes: it turns a cache off)."""
    raw = _raw(name)
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = minimum - 1
    if value < minimum:
        raise GateError(f"{name} must be a whole number of at least {minimum}, not '{raw}'")
    return value
