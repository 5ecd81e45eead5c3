"""Which checks exist, in the order they run and appear in reports: the ones that declare themselves in
gate/data/checks/*.py and those of installed packages (entry-point group `gate.checks`), by their `order`.

Nothing here lists a check (gate.plugins finds them); `instantiate` builds the checks of one run, sharing one
fresh RunContext and telling each its peers.
"""

from __future__ import annotations

from gate.contract import Contract
from gate.data.base import Check, RunContext
from gate.data.checks_index import CHECKS
from gate.errors import GateError

__all__ = ["CHECKS", "available", "instantiate", "plan", "resolve"]


def available() -> list[str]:
    return list(CHECKS)


def resolve(names: list[str] | None) -> list[str]:
    """The checks to run: `names` as given (default: every registered check that can be loaded: a broken plugin is
    named in one warning and left out); an unknown name is a GateError, a broken one named here its load error."""
    names = names or CHECKS.usable()
    unknown = [n for n in names if n not in CHECKS]
    if unknown:
        raise GateError(f"unknown check(s): {', '.join(unknown)} (available: {', '.join(CHECKS)})")
    return names


def plan(contract: Contract, names: list[str] | None = None) -> dict[str, str | None]:
    """What runs: check name -> None when it runs under `contract`, else why it is skipped (`Check.skip_reason`),
    for `names` (default: every usable check). The runner, `gate contract lint` and the contract reference all take
    their "runs" / "skipped" from here."""
    return {n: CHECKS[n].skip_reason(contract) for n in resolve(names)}


def instantiate(names: list[str], contract: Contract) -> list[Check]:
    """One run's checks: each knows the run's check names (`peers`) and shares the run's context."""
    context = RunContext()
    out = []
    for n in names:
        check = CHECKS[n](contract)
        check.peers = frozenset(names)
        check.context = context
        out.append(check)
    return out
