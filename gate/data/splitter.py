"""Source-grouped splits: whole groups go to train / val / test by a stable hash of the group.

Two passes over the input: the first learns each row's group (merged by union-find with every other group
it shares an exact or near-duplicate text with, so copies cannot straddle splits), the second writes each
row to its group's split. The assignment depends only on the group's value and the
salt, so it is the same on every run and a new row of an existing group lands with its group.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from gate import __version__
from gate.contract import Contract
from gate.data.groups import group_of
from gate.data.text import normalize, row_text
from gate.errors import GateError
from gate.io.dataset import SplitStats, discover, iter_chunks
from gate.io.digest import text_digest
from gate.io.rows import parse_chunk
from gate.io.writer import SplitWriter


@dataclass(frozen=True)
class SplitConfig:
    """Ratios in split order; the salt changes every assignment at once (a new shuffle), nothing else does."""

    names: tuple[str, ...] = ("train", "val", "test")
    ratios: tuple[float, ...] = (0.8, 0.1, 0.1)
    salt: str = "gate-split-v1"
    drop_ungrouped: bool = False

    def __post_init__(self) -> None:
        if len(self.names) != len(self.ratios) or abs(sum(self.ratios) - 1.0) > 1e-6 or min(self.ratios) < 0:
            raise GateError(f"split ratios {list(self.ratios)} must be {len(self.names)} non-negative numbers "
                            f"summing to 1")


def assign(group: str, cfg: SplitConfig) -> str:
    """The split of a group: md5 of salt and group, as a number in [0, 1), against the cumulative ratios."""
    h = int.from_bytes(hashlib.md5(f"{cfg.salt}\x00{group}".encode("utf-8", "surrogatepass")).digest()[:8], "big")
    x = h / 2**64
    acc = 0.0
    for name, ratio in zip(cfg.names, cfg.ratios, strict=True):
        acc += ratio
        if x < acc:
            return name
    return cfg.names[-1]


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, x: str) -> str:
        root = x
        while self.parent.get(root, root) != root:
            root = self.parent[root]
        while self.parent.get(x, x) != root:
            self.parent[x], x = root, self.parent[x]
        return root

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            # the smaller value represents the merged group, so the result does not depend on input order
            lo, hi = sorted((ra, rb))
            self.parent[hi] = lo


@dataclass
class SplitOutcome:
    counts: dict[str, int]
    groups: dict[str, int]
    ungrouped: list[tuple[str, int, str | None]] = field(default_factory=list)
    merged_groups: int = 0
    manifest: dict[str, Any] = field(default_factory=dict)


def _rows(dataset: str) -> Iterator[tuple[str, int, dict[str, Any], SplitStats]]:
    for src in discover(dataset):
        stats = SplitStats(src.split, src.display, src.format)
        for chunk in iter_chunks(src, stats):
            for line, row in parse_chunk(chunk):
                stats.rows += 1
                yield src.split, line, row, stats


def split_dataset(dataset: str, contract: Contract, out: str, cfg: SplitConfig) -> SplitOutcome:
    if not contract.group_key:
        raise GateError("the contract names no group_key, so there is nothing to split by", file=contract.path)
    from gate.data.neardup import neardup_config
    from gate.dedup import find_near_duplicates

    uf = _UnionFind()
    first_group_of_text: dict[bytes, str] = {}
    texts: list[str] = []
    groups: list[str] = []
    ungrouped: list[tuple[str, int, str | None]] = []
    inputs: dict[str, SplitStats] = {}
    for split, line, row, stats in _rows(dataset):
        inputs[split] = stats
        group, _ = group_of(row, contract)
        if group is None:
            ungrouped.append((split, line, row.get("id") if isinstance(row.get("id"), str) else None))
            continue
        uf.find(group)
        text = row_text(row, contract.text_roles, contract.include_tool_calls)
        texts.append(text)
        groups.append(group)
        digest = text_digest(normalize(text))
        other = first_group_of_text.setdefault(digest, group)
        if other != group:
            uf.union(other, group)
    if ungrouped and not cfg.drop_ungrouped:
        return SplitOutcome(counts={}, groups={}, ungrouped=ungrouped)
    if texts:
        for c in find_near_duplicates(texts, None, neardup_config(contract)).clusters:
            for pos in c.members[1:]:
                uf.union(groups[c.members[0]], groups[pos])
    texts.clear()
    merged = sum(1 for g in uf.parent if uf.find(g) != g)
    groups_per_split: dict[str, set[str]] = {n: set() for n in cfg.names}
    writer = SplitWriter(out, list(cfg.names))
    with writer:
        for _split, _line, row, _stats in _rows(dataset):
            group, _ = group_of(row, contract)
            if group is None:
                continue
            root = uf.find(group)
            target = assign(root, cfg)
            groups_per_split[target].add(root)
            writer.write(target, row)
        writer.manifest = {
            "kind": "gate.split/1",
            "gate_version": __version__,
            "input": {"path": dataset, "splits": [{"split": s.split, "file": s.file, "rows": s.rows,
                                                   "sha256": s.sha256} for s in inputs.values()]},
            "contract": {"name": contract.name, "version": contract.version, "sha256": contract.sha256},
            "config": {"names": list(cfg.names), "ratios": list(cfg.ratios), "salt": cfg.salt,
                       "group_key": contract.group_key, "group_fallback_key": contract.group_fallback_key,
                       "group_window": contract.group_window,
                       "merge": "exact and near duplicates (union-find)"},
            "groups": {k: len(v) for k, v in groups_per_split.items()},
            "merged_groups": merged,
            "dropped_ungrouped": [{"split": s, "row": r, "id": i} for s, r, i in ungrouped],
        }
    return SplitOutcome(counts=dict(writer.counts), groups={k: len(v) for k, v in groups_per_split.items()},
                        ungrouped=ungrouped, merged_groups=merged, manifest=writer.manifest)
