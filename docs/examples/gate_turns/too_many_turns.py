"""`too_many_turns`: a conversation with more user turns than the contract allows.

A row check: gate's runner reads the dataset, calls `check_row` on every row (in worker processes), counts what was
scanned, kept, dropped and flagged, and puts the split, line and id on every finding.
"""

from __future__ import annotations

from typing import Any

from gate.contract.file_schema import check_options
from gate.data.base import RowCheck, RowFinding


class TooManyTurns(RowCheck):
    name = "too_many_turns"             # the key in reports, thresholds, `--checks`, `checks.too_many_turns:`
    order = 200                         # where it runs and is listed (built-in checks: 10..120)
    fields = ("id", "messages")         # the row keys it reads (the runner decodes only those)
    rules = ("too_many_turns",)         # every finding rule it reports (`scrub.operators` keys are checked)
    drop_action = None                  # `gate scrub` leaves its rows unless `scrub.operators` says drop_row
    options_schema = check_options({    # the contract's `checks.too_many_turns:`; a bad value is one file:line error
        "max_user_turns": {"type": "integer", "minimum": 1, "default": 8,
                           "description": "Most user turns a conversation may have."},
    })

    def __init__(self, contract: Any) -> None:
        super().__init__(contract)
        self.limit = int(contract.options(self.name).get("max_user_turns", 8))

    def check_row(self, row: dict[str, Any]) -> list[RowFinding]:
        messages = row.get("messages") if isinstance(row.get("messages"), list) else []
        turns = sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "user")
        if turns <= self.limit:
            return []
        return [RowFinding("too_many_turns", f"{turns} user turns, at most {self.limit} allowed", "messages")]
