"""Tool implementations for the tool-call fixture model's scorecard (tests/serve/toolcall/scorecard.yaml).

Deterministic and standard-library only, like fixtures/tools/support_desk.py: the weather and ticket status are
derived from the argument, and every call is logged in the state, so a call with the right function but another
city or ticket gives a different result and a different final state than the gold call.
"""

from __future__ import annotations

from typing import Any

_SKIES = ("sunny", "cloudy", "rain", "snow", "fog")
_STATUS = ("open", "waiting_on_customer", "in_progress", "resolved")


class ToolError(Exception):
    """The tool refuses the call (a malformed ticket id): an execution error for the scorer."""


def initial_state() -> dict[str, Any]:
    return {"log": []}


def get_weather(state: dict[str, Any], city: str) -> dict[str, Any]:
    n = sum(map(ord, city.strip().lower()))
    state["log"].append(["get_weather", city])
    return {"city": city, "sky": _SKIES[n % len(_SKIES)], "temp_c": n % 35 - 5}


def get_ticket_status(state: dict[str, Any], ticket_id: str) -> dict[str, Any]:
    if not (isinstance(ticket_id, str) and ticket_id.startswith("TCK-") and ticket_id[4:].isdigit()):
        raise ToolError(f"no such ticket: {ticket_id!r}")
    state["log"].append(["get_ticket_status", ticket_id])
    return {"ticket_id": ticket_id, "status": _STATUS[int(ticket_id[4:]) % len(_STATUS)]}


TOOLS = {"get_weather": get_weather, "get_ticket_status": get_ticket_status}
