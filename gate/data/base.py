"""One small base class for every data check, and the records they produce.

A check is split into `map` (pure, runs in worker processes on a batch of parsed rows and returns a
small picklable partial) and `reduce`/`finish` (run in the parent, in input order). That keeps memory
flat, lets both cores work, and gives every check the same counting discipline: what was scanned,
what was flagged, and why.
"""

from __future__ import annotations

import resource
import time
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Hashable
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

from gate.contract import Contract
from gate.data.memo import TextMemo
from gate.io.rows import Row
from gate.severity import SEVERITIES  # noqa: F401  (re-exported: a check's severities, as before)


def cpu_seconds() -> float:
    """CPU seconds (user + system) of this process and of its children it has waited for.

    Why: `timings.map_cpu` and `checks[].seconds` are labelled CPU; they were wall time summed over workers (a
    pii check reported 234 s in a run whose process tree used 55 CPU s). The children count because the
    PII scan may fan out to its own process pool (`gate.pii.scan_texts`), which it joins before returning.
    """
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


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
    #: the JSON Schema of the check's `checks.<name>` section (gate.contract.file_schema.check_options); every check
    #: declares one, next to the code that reads the options, and the contract loader validates against it
    options_schema: ClassVar[dict[str, Any]]
    #: where the check runs and appears in reports, lowest first (third-party checks: after the built-in ones)
    order: ClassVar[int] = 10_000
    #: what `gate check --base` (gate.index.incremental) does with it: "per_row" (runs on the changed rows;
    #: findings on them kept), "against_index" (runs on the changed rows and the index rows that can share a
    #: finding with them; it defines `incremental_result`) or "full" (skipped: a dataset-level check)
    incremental: ClassVar[str] = "full"
    #: the rules whose findings a per-row check keeps in an incremental run even off the changed rows (they
    #: report a changed row's clash with an unchanged one, e.g. the contract's `field.unique`)
    incremental_keeps: ClassVar[tuple[str, ...]] = ()
    #: the optional Finding fields (EVIDENCE_FIELDS) the check fills; reports and the record may rely on no others
    finding_fields: ClassVar[tuple[str, ...]] = ()
    #: the names of every check of this run, set by the runner; None when unknown
    peers: frozenset[str] | None = None
    #: the checks this one may leave a row or pair to (e.g. `semantic_duplicate` -> `near_duplicate`). Why declared:
    #: a finding left to another check is lost when that check does not in fact report it (its LSH missed the pair,
    #: it judges another partner), so the runner finishes these first (`finish_all`) and hands over what they
    #: reported (`handed`); a check leaves a row only when `reported_by` says so, never on the other's running alone
    defers_to: ClassVar[tuple[str, ...]] = ()
    #: what `gate scrub` does by default with a row this check flags: "drop_row" (the row goes) or None (left as it
    #: is, unless the contract's `scrub.operators` name the check or the rule). Why declared: scrub applies any check,
    #: a plugin's too, from this and the operators alone (gate.data.scrub_rules.ScrubRules.finding_action)
    drop_action: ClassVar[str | None] = None
    #: the rules `drop_action` applies to (empty: every rule of the check), e.g. the contract's `messages.empty`
    drop_rules: ClassVar[tuple[str, ...]] = ()
    #: the contract's `scrub:` flag that turns `drop_action` off (`drop_duplicates`, `drop_leakage`), or None
    drop_switch: ClassVar[str | None] = None
    #: the finding rules the check reports (`family.*` stands for every rule of a family), so that a key of the
    #: contract's `scrub.operators` naming none of them is refused as a typo; empty: any `<name>.<rule>` is accepted
    rules: ClassVar[tuple[str, ...]] = ()
    #: what the checks of one run share (e.g. the MinHash clustering of near_duplicate and leakage); set by
    #: `gate.data.registry.instantiate`. A fresh one per run: nothing is shared between runs through modules
    context: RunContext

    def __init__(self, contract: Contract) -> None:
        self.contract = contract
        self.context = RunContext()
        self.counts: Counter[str] = Counter()
        self.findings: list[Finding] = []
        self.seconds = 0.0
        #: per check of `defers_to` that finished before this one in the same run: the (split, row) it reported
        self.handed: dict[str, frozenset[tuple[str, int]]] = {}

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

    @classmethod
    def skip_reason(cls, contract: Contract) -> str | None:
        """Why the check does not run under `contract`, decided from the contract alone (no data), or None when it
        runs. The one place that decides it: the runner's result, `gate contract lint` and the reference page
        (`gate.data.registry.plan`) all ask here, so lint never says "runs" where the run says "skipped"."""
        return None

    def reported_by(self, check: str, split: str, row: int) -> bool:
        """Whether `check` (one of `defers_to`) reported this row in this run: the only case this check may leave
        the row, or a pair holding it, to `check`."""
        return (split, row) in self.handed.get(check, frozenset())

    def timed_finish(self) -> None:
        """`finish`, its CPU seconds added to the check's `seconds` (CPU, like its map seconds)."""
        t0 = cpu_seconds()
        self.finish()
        self.seconds += cpu_seconds() - t0

    def result(self) -> CheckResult:
        self.findings = _kept_by_scrub(self.contract, self.findings)
        errors = sum(1 for f in self.findings if f.severity == "error")
        limit = self.contract.threshold(self.name)
        status = "fail" if errors > limit else ("warn" if self.findings else "pass")
        counts = {"scanned": 0, **dict(self.counts), "flagged_rows": self.flagged_rows(),
                  "findings": len(self.findings), "errors": errors}
        # the same four counts for every check: rows read, rows `gate scrub` drops for this check's findings under
        # this contract, the rest, and rows with any finding (`flagged_rows`)
        counts["dropped"] = _dropped_rows(self.contract, self.findings)
        counts["kept"] = max(counts["scanned"] - counts["dropped"], 0)
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

    def incremental_result(self, view: IncrementalView) -> CheckResult:
        """The result of an incremental run (`incremental = "per_row"`): the findings on changed rows (and
        `incremental_keeps` rules), counted over the changed rows. An "against_index" check overrides this."""
        if self.incremental != "per_row":
            raise NotImplementedError(f"{self.name}: an '{self.incremental}' check defines incremental_result")
        keeps = set(self.incremental_keeps)
        self.findings = [f for f in self.findings if (f.split, f.row) in view.changed or f.rule in keeps]
        self.counts["changed_rows"] = self.counts["scanned"] = len(view.changed)  # this run, not the dataset
        return self.result()


@dataclass(frozen=True, slots=True)
class RowFinding:
    """What a `RowCheck` found in one row; the runner adds the check, split, line and row id to make a `Finding`.
    `snippet` must already be redacted (gate.pii.redact.value_snippet): reports show it as it is."""

    rule: str
    message: str
    field: str | None = None
    severity: str = "error"
    snippet: str | None = None


def row_id(row: Any) -> str | None:
    """A row's own `id` as findings carry it: a string or an integer (as text), else None."""
    rid = row.get("id") if isinstance(row, dict) else None
    return str(rid) if isinstance(rid, str | int) and not isinstance(rid, bool) else None


class RowCheck(Check):
    """A check that judges each row on its own (as datatrove's filters do): it implements `check_row`, which returns
    what it found in one row; the loop, the counts (`scanned`; `kept`, `dropped`, `flagged_rows` in `result`) and the
    split, line and id of every finding are the base class's. Per row, so `gate check --base` runs it on the changed
    rows only. A check that needs the whole dataset (duplicates, splits) subclasses `Check` instead."""

    incremental: ClassVar[str] = "per_row"

    @abstractmethod
    def check_row(self, row: dict[str, Any]) -> list[RowFinding]:
        """What is wrong with one parsed row (the keys of `fields`, or all); [] when nothing. Runs in workers."""

    def map(self, batch: Batch) -> Any:
        findings: list[Finding] = []
        for line, row in batch.rows:
            found = self.check_row(row)
            if found:
                rid = row_id(row)
                findings.extend(Finding(self.name, batch.split, line, f.field, f.rule, f.severity, f.message,
                                        f.snippet, rid) for f in found)
        return findings, Counter({"scanned": len(batch.rows)})


def _dropped_rows(contract: Contract, findings: list[Finding]) -> int:
    """Rows whose findings `gate scrub` drops under the contract (gate.data.scrub_rules, the rule scrub follows)."""
    from gate.data.scrub_rules import ScrubRules

    rules = ScrubRules.of(contract)
    drops = {key: rules.drops(*key) for key in {(f.check, f.rule) for f in findings if f.row is not None}}
    return len({(f.split, f.row) for f in findings if f.row is not None and drops[(f.check, f.rule)]})


def _kept_by_scrub(contract: Contract, findings: list[Finding]) -> list[Finding]:
    """A finding whose rule the contract's scrub section keeps (`scrub.operators: {messages.empty: keep}`) is
    reported as info, not as an error: what `gate scrub` keeps, `gate check` does not fail on (one rule,
    gate.data.scrub_rules). PII and secret hits scrub keeps are not findings at all (gate.data.checks.pii)."""
    if not contract.raw.get("scrub"):
        return findings
    from dataclasses import replace

    from gate.data.scrub_rules import ScrubRules

    rules = ScrubRules.of(contract)
    return [replace(f, severity="info", message=f"{f.message} (kept: scrub.operators)")
            if f.severity == "error" and rules.finding_action(f.check, f.rule) == "keep" else f for f in findings]


@dataclass
class RunContext:
    """Per-run state the checks of one run share, passed in rather than kept in module globals; `cache` is keyed
    by what the value is derived from (e.g. the clustering's inputs), so two checks asking the same get one."""

    cache: dict[str, Any] = field(default_factory=dict)
    #: the run's text-keyed memos (PII hits per detector configuration, embeddings per model); see `memo`
    memos: dict[Hashable, TextMemo[Any]] = field(default_factory=dict)
    #: False for `gate check --snippets none`: a check builds no snippet at all (the `pii` and `secret` checks then
    #: skip their snippet windows, recall scan and context masking: the work would only be thrown away)
    snippets: bool = True

    def memo(self, key: Hashable, max_entries: int = 200_000) -> TextMemo[Any]:
        """The run's memo for `key` (what its values are derived from: a detector's configuration, a model),
        made on first use with `max_entries`; every later ask, from any check of the run, gets the same one."""
        found = self.memos.get(key)
        if found is None:
            found = self.memos[key] = TextMemo(max_entries)
        return found


@dataclass(frozen=True)
class IncrementalView:
    """What an incremental run (gate.index.incremental) tells each check to filter its findings by."""

    changed: frozenset[tuple[str, int]]  # (split, line) of the changed rows
    total_rows: int  # lines of the whole dataset now
    splits: tuple[str, ...]  # every split of the dataset (the checked subset may lack some)
    members: frozenset[tuple[str, int]] = frozenset()  # rows of near-duplicate clusters holding a changed row
    text_of: dict[tuple[str, int], bytes] = field(default_factory=dict)  # normalised text digest per parsed row


#: Finding fields beyond check/split/row/field/rule/severity/message/snippet/row_id that a check may fill
#: (declared per check in `finding_fields`); `novelty` is set by gate.data.novelty, never by a check
EVIDENCE_FIELDS = ("partner_row", "partner_id", "score", "cluster_id", "cluster_size")


def _finding_order(f: Finding) -> tuple[Any, ...]:
    return (f.split, f.row if f.row is not None else -1, f.field or "", f.rule)


def finish_order(checks: list[Check]) -> list[Check]:
    """The checks in the order they finish: each after the checks of its `defers_to` that run too (otherwise in the
    given order). A cycle is broken at the first check that closes it: it finishes without the other's findings
    and therefore leaves it nothing."""
    pending = list(checks)
    done: set[str] = set()
    out: list[Check] = []
    names = {c.name for c in checks}
    while pending:
        ready = next((c for c in pending if all(d in done or d not in names for d in c.defers_to)), pending[0])
        pending.remove(ready)
        done.add(ready.name)
        out.append(ready)
    return out


def finish_all(checks: list[Check], timings: dict[str, float] | None = None) -> None:
    """Finishes every check of one run in `finish_order`, handing each the rows reported by the checks it defers to
    (`Check.handed`); `timings` gets `finish.<name>` wall seconds."""
    finished: dict[str, Check] = {}
    for check in finish_order(checks):
        check.handed = {n: frozenset((f.split, f.row) for f in finished[n].findings if f.row is not None)
                        for n in check.defers_to if n in finished}
        t1 = time.perf_counter()
        check.timed_finish()
        if timings is not None:
            timings[f"finish.{check.name}"] = round(time.perf_counter() - t1, 4)
        finished[check.name] = check
