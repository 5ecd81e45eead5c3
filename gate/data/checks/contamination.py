"""`contamination`: training rows that contain evaluation items.

Evaluation items are the contract's `evaluation_sets` (scorecard suites) and the rows of the evaluation
splits (default: test). A training row is contaminated when it shares at least `min_shared` word
n-grams (13 by default, as lm-evaluation-harness's decontamination) with an item, or is a MinHash near
duplicate of a suite item. N-grams are taken inside each message, never across the seam between a prompt
and its answer, where structured answers would make every row look alike. Near copies of a test-split row
are left to `leakage`. The report names every contaminated evaluation item.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from gate.contract import Contract
from gate.data.base import Batch, CheckResult, Finding
from gate.data.checks.near_duplicate import _ClusterCheck
from gate.data.evalsets import EvalItem, load_eval_items
from gate.data.neardup import exact_pair_jaccard
from gate.data.text import message_text
from gate.errors import GateError

# training rows: the `train_splits` present (a validation split is neither trained on nor a protected test set);
# when none of them exists (a single file), every split that is not an evaluation split
OPTIONS = {"ngram": 13, "min_shared": 1, "eval_splits": ["test"], "train_splits": ["train", "training"]}
SEP = "\x1e"  # between messages: n-grams never span it


def _message_shingles(texts: list[str], cfg: Any) -> tuple[np.ndarray, np.ndarray]:
    """Shingle hashes of every message of every text, with the index of the text each one belongs to."""
    from gate.dedup import shingle_batch

    parts: list[str] = []
    owners: list[int] = []
    for i, text in enumerate(texts):
        for part in text.split(SEP):
            parts.append(part)
            owners.append(i)
    from gate.dedup.shingles import tokenize

    batch = shingle_batch(parts, cfg)
    counts = np.diff(batch.offsets)
    keep = np.ones(len(batch.hashes), dtype=bool)
    # a message shorter than n words becomes one whole-text shingle for dedup; it cannot hold an n-gram
    for i in np.flatnonzero(counts == 1):
        if len(tokenize(parts[i], cfg)) < cfg.n:
            keep[batch.offsets[i]] = False
    owner = np.repeat(np.asarray(owners, dtype=np.int64), counts)
    return batch.hashes[keep], owner[keep]


class ContaminationCheck(_ClusterCheck):
    name = "contamination"
    version = "1"

    def __init__(self, contract: Contract) -> None:
        super().__init__(contract)
        opts = contract.options("contamination")
        unknown = set(opts) - set(OPTIONS)
        if unknown:
            raise GateError(f"unknown option(s) {sorted(unknown)} in checks.contamination (known: "
                            f"{sorted(OPTIONS)})", file=contract.path)
        self.opts = {**OPTIONS, **opts}
        self._items = load_eval_items(contract.evaluation_sets)
        self._leaked_items: dict[tuple[str, str], int] = defaultdict(int)

    def map(self, batch: Batch) -> Any:
        roles = set(self.contract.text_roles)
        out = []
        for line, row in batch.rows:
            msgs = row.get("messages") if isinstance(row.get("messages"), list) else []
            parts = [message_text(m, self.contract.include_tool_calls) for m in msgs
                     if isinstance(m, dict) and m.get("role") in roles]
            rid = row.get("id") if isinstance(row.get("id"), str) else None
            out.append((line, SEP.join(parts), rid, b""))
        return batch.split, out, None

    def finish(self) -> None:
        from gate.dedup import NearDupIndex, ShingleConfig

        eval_splits = set(self.opts["eval_splits"])
        items: list[EvalItem] = list(self._items)
        split_item_pos: dict[int, int] = {}  # item index -> position in self._texts (for test-split items)
        for pos, (s, line) in enumerate(self._keys):
            if self._splits[s] in eval_splits:
                split_item_pos[len(items)] = pos
                items.append(EvalItem(f"split:{self._splits[s]}", self._ids[pos] or f"row-{line}", self._texts[pos]))
        train_splits = set(self.opts["train_splits"]) & set(self._splits) or set(self._splits) - eval_splits
        train_pos = [p for p, (s, _) in enumerate(self._keys) if self._splits[s] in train_splits]
        self.counts["scanned"] = len(train_pos)
        self.counts["evaluation_items"] = len(items)
        if not items or not train_pos:
            return
        cfg = ShingleConfig(n=int(self.opts["ngram"]), strip_punct=True)
        ev_hashes, ev_owner = _message_shingles([it.text for it in items], cfg)
        order = np.argsort(ev_hashes, kind="stable")
        ev_hashes, ev_owner = ev_hashes[order], ev_owner[order]
        tr_hashes, tr_owner = _message_shingles([self._texts[p] for p in train_pos], cfg)
        tr_starts = np.searchsorted(tr_owner, np.arange(len(train_pos) + 1))
        hits: dict[int, dict[int, int]] = {}
        for k in range(len(train_pos)):
            h = np.unique(tr_hashes[tr_starts[k]:tr_starts[k + 1]])
            if not len(h):
                continue
            lo = np.searchsorted(ev_hashes, h, side="left")
            hi = np.searchsorted(ev_hashes, h, side="right")
            found = np.flatnonzero(hi > lo)
            if not len(found):
                continue
            per_item: dict[int, int] = defaultdict(int)
            for f in found:
                for it in np.unique(ev_owner[lo[f]:hi[f]]):
                    per_item[int(it)] += 1
            hits[k] = per_item
        # near duplicates of suite items (short items have no 13-grams; MinHash on 5-grams still sees them)
        suite_texts = [it.text.replace(SEP, "\n") for it in self._items]
        if suite_texts:
            index = NearDupIndex(suite_texts, None, self._config)
            for pair in index.query([self._texts[p].replace(SEP, "\n") for p in train_pos]).pairs:
                hits.setdefault(pair.query_index, {})
                hits[pair.query_index][pair.index_index] = max(hits[pair.query_index].get(pair.index_index, 0), 1)
        threshold = self._config.threshold
        for k, per_item in sorted(hits.items()):
            pos = train_pos[k]
            matched = []
            for it, shared in sorted(per_item.items()):
                if shared < int(self.opts["min_shared"]) and it not in split_item_pos and it >= len(self._items):
                    continue
                if it in split_item_pos:
                    if shared < int(self.opts["min_shared"]):
                        continue
                    jac = exact_pair_jaccard(self._texts[pos].replace(SEP, "\n"),
                                             self._texts[split_item_pos[it]].replace(SEP, "\n"), self._config)
                    if jac >= threshold:
                        continue  # a near copy of a test row: leakage reports it
                matched.append((it, shared))
            if not matched:
                continue
            s, line = self._keys[pos]
            names = ", ".join(f"{items[it].source}#{items[it].item_id}" for it, _ in matched[:3])
            for it, _ in matched:
                self._leaked_items[(items[it].source, items[it].item_id)] += 1
            self.findings.append(Finding(
                "contamination", self._splits[s], line, "messages", "contamination", "error",
                f"shares {max(n for _, n in matched)} {self.opts['ngram']}-gram(s) with evaluation item(s) {names}"
                + (f" and {len(matched) - 3} more" if len(matched) > 3 else ""), None, self._ids[pos]))

    def details(self) -> dict[str, Any]:
        return {"options": self.opts, "evaluation_sets": list(self.contract.evaluation_sets),
                "contaminated_items": [{"source": s, "id": i, "training_rows": n}
                                       for (s, i), n in sorted(self._leaked_items.items())]}

    def result(self) -> CheckResult:
        res = super().result()
        if not self._items and not any(self._splits[s] in set(self.opts["eval_splits"]) for s, _ in self._keys):
            res.status = "skipped"
            res.summary = "no evaluation sets in the contract and no evaluation split"
        else:
            res.summary = (f"{len(self.findings)} training row(s) contain {len(self._leaked_items)} evaluation "
                           f"item(s) of {self.counts['evaluation_items']}")
        return res
