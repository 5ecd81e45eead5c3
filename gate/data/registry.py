"""Which checks exist, in the order they run and appear in reports."""

from __future__ import annotations

from gate.data.base import Check
from gate.data.checks.contract import ContractCheck
from gate.data.checks.exact_duplicate import ExactDuplicateCheck
from gate.data.checks.length import LengthCheck

CHECKS: dict[str, type[Check]] = {
    "contract": ContractCheck,
    "exact_duplicate": ExactDuplicateCheck,
    "length": LengthCheck,
}


def available() -> list[str]:
    return list(CHECKS)
