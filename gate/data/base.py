"""One small base class for every data check, and the records they produce.

A check is split into `map` (pure, runs in worker processes on a batch of parsed rows and returns a
small picklable partial) and `reduce`/`finish` (run in the parent, in input order). That keeps memory
flat, lets both cores work, and gives every check the same counting discipline: what was scanned,
what was flagged, and why.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

from gate.contract import Contract
from gate.io.rows import Row

SEVERITIES = ("error", "warning", "info")


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem at one place. `snippet` is always redacted; `row_id` is the row's own `id` value."""

    check: str
    split: str
    row: int | None  # 1-based line in the split file (row number for columnar files); None for dataset level
    field: str | None
    rule: str
    severity: str = "error"
    message: str = ""
    snippet: str | None = None
    row_id: str | None = None
    # in a pull-request run (`--changed-since REF`): "new", or "existing" when the check at REF had the same finding
    # (gate.data.novelty); None in any other run
    novelty: str | None = None
    # evidence of a pairwise finding (near_duplicate): the row it pairs with, that pair's score (exact Jaccard), and
    # the cluster it belongs to (id "split:row" of the cluster's kept row, member count); None for other findings
    partner_row: int | None = None
    partner_id: str | None = None
    score: float | None = None
    cluster_id: str | None = None
    cluster_size: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(slots=True)
class Batch:
    """Parsed rows of one split, in file order. `cache` lets checks share work derived from the same rows
    (e.g. MinHash signatures used by both `near_duplicate` and `leakage`) within one worker call."""

    split: str
    file: str
    rows: list[Row]
    cache: dict[str, Any] = field(default_factory=dict)


@dataclass
class CheckResult:
    name: str
    version: str
    status: str  # pass | fail | warn | skipped
    counts: dict[str, int]
    findings: list[Finding]
    seconds: float = 0.0
    summary: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def errors(self) -> int:
        return sum(1 for f in self.findings if f.severity == "error")


class Check(ABC):
    """Base class: subclasses set `name`, `version` and implement `map`, `reduce` and `result`."""

    name: ClassVar[str]
    version: ClassVar[str] = "1"
    #: the only top-level row keys `map` reads, or None for the whole row. When every check of a run names its
    #: keys, the runner decodes just those (a dedup-only run skips the tool schemas that make up most of a row)
    fields: ClassVar[tuple[str, ...] | None] = None
    #: the JSON Schema of the check's `checks.<name>` section (gate.contract.meta.check_options); every check
    #: declares one, next to the code that reads the options, and the contract loader validates against it
    options_schema: ClassVar[dict[str, Any]]
    #: the names of every check of this run, set by the runner; None when unknown (a check then assumes it runs
    #: alone: it never leaves a finding to another check that may not be running)
    peers: frozenset[str] | None = None

    def __init__(self, contract: Contract) -> None:
        self.contract = contract
        self.counts: Counter[str] = Counter()
        self.findings: list[Finding] = []
        self.seconds = 0.0

    @abstractmethod
    def map(self, batch: Batch) -> Any:
        """Inspects one batch; must not touch `self` state that `reduce` relies on (it may run in a worker)."""

    def reduce(self, partial: Any) -> None:
        """Folds a partial into the parent's state; the default expects `(findings, counts)`."""
        findings, counts = partial
        self.findings.extend(findings)
        self.counts.update(counts)

    def warm_up(self) -> None:
        """Slow set-up for `finish` (imports, engines), run in a parent thread while workers map."""
        return None

    def finish(self) -> None:
        """Dataset-level work once every batch was reduced (uniqueness, duplicates across the file...)."""
        return None

    def timed_finish(self) -> None:
        t0 = time.perf_counter()
        self.finish()
        self.seconds += time.perf_counter() - t0

    def result(self) -> CheckResult:
        errors = sum(1 for f in self.findings if f.severity == "error")
        limit = self.contract.threshold(self.name)
        status = "fail" if errors > limit else ("warn" if self.findings else "pass")
        counts = {"scanned": 0, **dict(self.counts), "flagged_rows": self.flagged_rows(),
                  "findings": len(self.findings), "errors": errors}
        return CheckResult(self.name, self.version, status, counts,
                           sorted(self.findings, key=_finding_order), self.seconds,
                           self.summary(status, errors, limit), self.details())

    def flagged_rows(self) -> int:
        return len({(f.split, f.row) for f in self.findings if f.row is not None})

    def summary(self, status: str, errors: int, limit: int) -> str:
        scanned = self.counts.get("scanned", 0)
        return f"{errors} error finding(s) in {self.flagged_rows()} of {scanned} rows (allowed: {limit})"

    def details(self) -> dict[str, Any]:
        return {}


def _finding_order(f: Finding) -> tuple[Any, ...]:
    return (f.split, f.row if f.row is not None else -1, f.field or "", f.rule)
