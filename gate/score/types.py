"""Per-sample records of the scoring side: an evaluation item and a scorer's evidence about one answer.

Modelled on inspect_ai: a scorer looks at one answer and returns a `Score` (never an aggregate); metrics
and the release gates aggregate later from `Score.value`, and never look at raw outputs. Kept import-light
so the store, the report and the engines can depend on it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from gate.engines.types import Response

# Error taxonomy of the tool-execution scorer (machine-readable; BFCL-like). An unparseable answer is a
# parse_failure, never an abstention.
TOOL_ERRORS: tuple[str, ...] = (
    "parse_failure", "wrong_function", "wrong_count", "missing_argument", "extra_argument", "wrong_type",
    "bad_value", "execution_error", "wrong_result", "abstention", "timeout", "sandbox_violation",
    "unwanted_call", "engine_error",
)


@dataclass(frozen=True)
class Item:
    """One held-out item: its messages and what a right answer looks like. `line` points back into the suite."""

    id: str
    category: str
    messages: tuple[dict[str, Any], ...]
    expected: Any
    suite: str = ""
    line: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Score:
    """A scorer's evidence about one answer.

    `value` maps metric keys to numbers (1.0/0.0 for pass/fail); a key is absent when it does not apply to
    the item (e.g. over_refusal on an unsafe prompt), so metrics count only items it applies to. `answer`
    is what the scorer extracted, `explanation` one human line, `metadata` the details (error category...).
    """

    value: dict[str, float]
    answer: str | None = None
    explanation: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def error(self) -> str | None:
        return self.metadata.get("error")


class Scorer(Protocol):
    """What every scorer offers: its type name, the metric keys it can emit, the key gates use by default."""

    type: str
    keys: tuple[str, ...]
    primary: str

    def score(self, item: Item, response: Response) -> Score: ...
