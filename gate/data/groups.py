"""The group a row belongs to (customer, repo, document, or a time window), shared by `group_split` and `gate split`.

Whole groups must stay in one split, or a model is tested on the customers it was trained on.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from gate.contract import Contract


def _window(value: Any, window: str | None) -> str | None:
    if window is None:
        return None if value is None else str(value)
    if not isinstance(value, str):
        return None
    try:
        ts = datetime.fromisoformat(value)
    except ValueError:
        return None
    if window == "day":
        return ts.strftime("%Y-%m-%d")
    if window == "week":
        year, week, _ = ts.isocalendar()
        return f"{year}-W{week:02d}"
    if window == "month":
        return ts.strftime("%Y-%m")
    return ts.strftime("%Y")


def group_of(row: dict[str, Any], contract: Contract) -> tuple[str | None, str | None]:
    """(group value, key it came from); (None, None) when neither the group key nor the fallback is present."""
    for key in (contract.group_key, contract.group_fallback_key):
        if not key:
            continue
        value = row.get(key)
        if value is None or value == "" or isinstance(value, dict | list | bool):
            continue
        group = _window(value, contract.group_window)
        if group is not None:
            return group, key
    return None, None
