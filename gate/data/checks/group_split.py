"""`group_split`: a group (the contract's group key) present in more than one split.

Each group's home is the split that holds most of its rows (ties: the earliest split); every row of the
group in another split is a finding. Only a 64-bit hash, a split index and a line number are kept per row.
Rows with no group key are counted; they are findings only when the contract does not already require
the key (then the `contract` check reports them).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import xxhash

from gate.contract import Contract
from gate.contract.file_schema import NO_OPTIONS
from gate.data.base import Batch, Check, CheckResult, Finding
from gate.data.groups import group_of
from gate.pii.redact import mask_ident


def _group_shown(value: str, width: int = 40) -> str:
    """A group key's value as the message names it: an identifier (like a row id), so shown as written unless it
    looks like personal data or a secret (`mask_ident`: "cus-00003" stays, an e-mail becomes "j***@e***.org").
    It was once masked as a data value ("xxx-ddddd"), so a reviewer could not tell which group to move."""
    shown = mask_ident(value)
    return shown if len(shown) <= width else shown[:width - 1] + "…"

class GroupSplitCheck(Check):
    name = "group_split"
    rules = ("group_split", "group_split.no_key")
    order = 90
    incremental = "full"
    options_schema = NO_OPTIONS  # the key is the contract's `group_key` / `group_fallback_key` / `group_window`
    version = "1"

    @classmethod
    def skip_reason(cls, contract: Contract) -> str | None:
        return None if contract.group_key else "the contract names no group_key"

    def __init__(self, contract: Contract) -> None:
        super().__init__(contract)
        self._splits: list[str] = []
        self._hashes: list[np.ndarray] = []
        self._split_idx: list[np.ndarray] = []
        self._lines: list[np.ndarray] = []
        self._values: list[Any] = []  # pyarrow string arrays: compact, read only for flagged rows
        self._ids: list[Any] = []
        key = contract.group_key
        self._key_required = any(f.name == key and f.required for f in contract.fields)

    def map(self, batch: Batch) -> Any:
        if not self.contract.group_key:
            return batch.split, None
        hashes, lines, values, ids, missing = [], [], [], [], []
        for line, row in batch.rows:
            group, _ = group_of(row, self.contract)
            rid = row.get("id") if isinstance(row.get("id"), str) else None
            if group is None:
                missing.append((line, rid))
                continue
            hashes.append(xxhash.xxh3_64_intdigest(group.encode("utf-8", "surrogatepass")))
            lines.append(line)
            values.append(group)
            ids.append(rid)
        return batch.split, (np.asarray(hashes, dtype=np.uint64), np.asarray(lines, dtype=np.int64), values, ids,
                             missing)

    def reduce(self, partial: Any) -> None:
        split, data = partial
        if split not in self._splits:
            self._splits.append(split)
        if data is None:
            return
        hashes, lines, values, ids, missing = data
        self.counts["scanned"] += len(lines) + len(missing)
        self.counts["no_group_key"] += len(missing)
        self._hashes.append(hashes)
        self._split_idx.append(np.full(len(lines), self._splits.index(split), dtype=np.int16))
        self._lines.append(lines)
        import pyarrow as pa

        self._values.append(pa.array(values, type=pa.string()))
        self._ids.append(pa.array(ids, type=pa.string()))
        if not self._key_required:
            for line, rid in missing:
                self.findings.append(Finding("group_split", split, line, self.contract.group_key, "group_split.no_key",
                                             "error", "row has no group key, so it cannot be kept with its group",
                                             None, rid))

    def finish(self) -> None:
        if not self._hashes:
            return
        g = np.concatenate(self._hashes)
        s = np.concatenate(self._split_idx)
        lines = np.concatenate(self._lines)
        import pyarrow as pa

        values = pa.chunked_array(self._values, type=pa.string())
        ids = pa.chunked_array(self._ids, type=pa.string())
        n = len(g)
        if n == 0:
            return
        order = np.lexsort((s, g))
        gs, ss = g[order], s[order]
        change = np.ones(n, dtype=bool)
        change[1:] = (gs[1:] != gs[:-1]) | (ss[1:] != ss[:-1])
        starts = np.flatnonzero(change)
        counts = np.diff(np.append(starts, n))
        pair_g, pair_s = gs[starts], ss[starts]
        # home split per group: most rows, then the earliest split
        o2 = np.lexsort((pair_s, -counts, pair_g))
        first = np.ones(len(o2), dtype=bool)
        first[1:] = pair_g[o2][1:] != pair_g[o2][:-1]
        home_g, home_s, home_n = pair_g[o2][first], pair_s[o2][first], counts[o2][first]
        pos = np.searchsorted(home_g, g)
        row_home = home_s[pos]
        self.counts["groups"] = int(len(home_g))
        groups_split = np.unique(g[row_home != s])
        self.counts["groups_in_several_splits"] = int(len(groups_split))
        for i in np.flatnonzero(row_home != s):
            home = self._splits[int(row_home[i])]
            self.findings.append(Finding(
                "group_split", self._splits[int(s[i])], int(lines[i]), self.contract.group_key, "group_split",
                "error", f"group {_group_shown(values[int(i)].as_py())} lives in {home} ({int(home_n[pos[i]])} "
                         f"rows); this row is in {self._splits[int(s[i])]}", None, ids[int(i)].as_py()))
        self._hashes.clear()

    def result(self) -> CheckResult:
        res = super().result()
        reason = self.skip_reason(self.contract)
        if reason:
            res.status = "skipped"
            res.summary = reason
        else:
            res.summary = (f"{self.counts['groups_in_several_splits']} of {self.counts['groups']} group(s) "
                           f"by '{self.contract.group_key}' span splits; {len(self.findings)} row(s) outside "
                           f"their group's split")
        return res
