"""The outcome of one probe step: a table row for people and a JSON object for machines."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any


class Status(StrEnum):
    PASS = "pass"
    WARN = "warn"  # passed, but something a person must read (e.g. experts left untouched by the LoRA targets)
    FAIL = "fail"
    SKIP = "skip"  # not run because a step it needs failed, or not selected


@dataclass
class Step:
    number: int
    name: str
    status: Status
    evidence: str
    details: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status in (Status.PASS, Status.WARN)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["status"] = str(self.status)
        return out


def judged(number: int, name: str, ok: bool, evidence: str, details: dict[str, Any] | None = None,
           warnings: list[str] | None = None) -> Step:
    """A pass (or warn, when there are warnings) if `ok`, else a fail."""
    warnings = warnings or []
    status = (Status.WARN if warnings else Status.PASS) if ok else Status.FAIL
    return Step(number, name, status, evidence, details or {}, warnings)
