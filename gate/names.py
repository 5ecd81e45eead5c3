"""Stable check names: reports, FAULTS.json, thresholds and dashboards all key on these strings.

They come from the check registry (gate.plugins: each check declares its name and `order` in its own file, a
third-party one through the `gate.checks` entry points), read from the declarations without importing a check.
"""

from gate.plugins import declarations

CHECK_NAMES: tuple[str, ...] = tuple(d.name for d in declarations("check"))
