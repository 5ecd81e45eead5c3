"""`exact_duplicate`: rows whose normalised text is identical to an earlier row of the same split.

Rows are compared on the contract's text (default: user and assistant turns, tool calls included) after
NFKC, casefolding and whitespace collapsing. The first occurrence (lowest line) is kept; every later
copy is a finding that names the kept row. Only a 16-byte digest per row is kept in memory.
Copies across splits are not duplicates but leakage, reported by the `leakage` check.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from gate.contract import Contract
from gate.contract.file_schema import NO_OPTIONS
from gate.data.base import Batch, Check, CheckResult, Finding, IncrementalView
from gate.data.dedup_text import dedup_texts


class ExactDuplicateCheck(Check):
    name = "exact_duplicate"
    drop_action = "drop_row"  # a later copy goes, the first stays
    drop_switch = "drop_duplicates"
    rules = ("exact_duplicate",)
    order = 20
    incremental = "against_index"
    options_schema = NO_OPTIONS  # the text compared is the contract's `text:` section
    fields = ("id", "messages")
    version = "1"

    def __init__(self, contract: Contract) -> None:
        super().__init__(contract)
        self._digests: dict[str, list[np.ndarray]] = {}
        self._lines: dict[str, list[np.ndarray]] = {}
        self._ids: dict[str, list[Any]] = {}  # pyarrow string arrays: compact, read only for flagged rows

    def map(self, batch: Batch) -> Any:
        _, digests = dedup_texts(batch, self.contract)
        lines = []
        ids = []
        for line, row in batch.rows:
            lines.append(line)
            rid = row.get("id")
            ids.append(str(rid) if isinstance(rid, str | int) and not isinstance(rid, bool) else None)
        return batch.split, b"".join(digests), np.asarray(lines, dtype=np.int64), ids

    def reduce(self, partial: Any) -> None:
        split, digests, lines, ids = partial
        self._digests.setdefault(split, []).append(np.frombuffer(digests, dtype="S16"))
        self._lines.setdefault(split, []).append(lines)
        import pyarrow as pa

        self._ids.setdefault(split, []).append(pa.array(ids, type=pa.string()))
        self.counts["scanned"] += len(lines)

    def finish(self) -> None:
        reasons: Counter[str] = Counter()
        for split, chunks in self._digests.items():
            digests = np.concatenate(chunks)
            lines = np.concatenate(self._lines[split])
            import pyarrow as pa

            ids = pa.chunked_array(self._ids[split], type=pa.string())
            # stable sort by digest keeps file order inside each group: the first line is the one kept
            order = np.argsort(digests, kind="stable")
            sd = digests[order]
            same_as_prev = np.zeros(len(sd), dtype=bool)
            same_as_prev[1:] = sd[1:] == sd[:-1]
            group_start = np.maximum.accumulate(np.where(~same_as_prev, np.arange(len(sd)), 0))
            for pos in np.flatnonzero(same_as_prev):
                dup, kept = int(order[pos]), int(order[group_start[pos]])
                reasons["dropped_duplicate"] += 1
                kept_id, dup_id = ids[kept].as_py(), ids[dup].as_py()
                self.findings.append(Finding(
                    "exact_duplicate", split, int(lines[dup]), "messages", "exact_duplicate", "error",
                    f"same normalised text as row {int(lines[kept])}" + (f" (id {kept_id})" if kept_id else ""),
                    None, dup_id))
            self.counts["clusters"] += len(np.unique(group_start[same_as_prev]))
        self.counts.update(reasons)
        self._digests.clear()
        self._lines.clear()
        self._ids.clear()

    def result(self) -> CheckResult:
        """Fails above `max_duplicate_rate`, and above `max_findings.exact_duplicate` when the contract sets it."""
        res = super().result()
        rate = self.counts["dropped_duplicate"] / max(self.counts["scanned"], 1)
        over_rate = rate > self.contract.max_duplicate_rate
        if self.name in self.contract.max_findings:
            failed = over_rate or res.errors > self.contract.threshold(self.name)
        else:
            failed = over_rate
        res.status = "fail" if failed else ("warn" if res.findings else "pass")
        res.details["duplicate_rate"] = round(rate, 6)
        res.summary = (f"{self.counts['dropped_duplicate']} duplicate row(s) in {self.counts['clusters']} "
                       f"cluster(s); rate {rate:.2%} (allowed {self.contract.max_duplicate_rate:.2%})")
        return res

    def incremental_result(self, view: IncrementalView) -> CheckResult:
        """The copies of a changed row's text (its split's), counted over the whole dataset as a full check
        counts the clusters that hold a changed row: texts with a duplicate, not every changed row's text
        ("1 duplicate row(s) in 20 cluster(s)" where the full check said one)."""
        hot = {(s, view.text_of[(s, ln)]) for s, ln in view.changed if (s, ln) in view.text_of}
        self.findings = [f for f in self.findings if (f.split, view.text_of.get((f.split, f.row or 0))) in hot]
        dup_texts = {(f.split, view.text_of.get((f.split, f.row or 0))) for f in self.findings}
        self.counts.clear()
        self.counts.update(scanned=view.total_rows, dropped_duplicate=len(self.findings), clusters=len(dup_texts),
                           kept=view.total_rows - len(self.findings), changed_rows=len(view.changed))
        return self.result()
