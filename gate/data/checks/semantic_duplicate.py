"""`semantic_duplicate`: rows of one split that say the same thing in other words (paraphrases), which MinHash misses.

Each row's dedup text (the same text `near_duplicate` shingles) is embedded with all-MiniLM-L6-v2 (gate.embed:
mean pooling, L2-normalised) in the map phase, so both cores encode; in `finish`, pairs with cosine >= `threshold`
are found per split (exact blockwise search up to `exact_max` rows, k-means buckets above), joined into clusters
(gate.dedup.components.connected_components, the union-find near_duplicate uses) and judged with the same keep rules:
the first row of a cluster stays; `star` (default) drops a later row only when its cosine with a row that stays
reaches the threshold, `chain` drops the whole closure. Findings carry the same evidence fields as near_duplicate
(partner_row, partner_id, score = that pair's cosine, cluster_id, cluster_size) and no text.

Work other checks do is not repeated: exact copies (same normalised digest) are left to `exact_duplicate`, and a
drop whose pair already reaches near_duplicate's Jaccard threshold is left to `near_duplicate` when it reported that
row in the same run (its LSH may miss a pair: a row is left only to a check that did report it).

Opt-in: the model costs ~90 MB and ~3-6 ms of CPU a row, so the check runs only with
`checks.semantic_duplicate.enabled: true`; when the model wheel is absent it is skipped with one line saying how to
install it (`pip install 'finetune-gate[semantic]'`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from gate.contract import Contract
from gate.contract.file_schema import check_options
from gate.data.base import Batch, Check, CheckResult, Finding, RunContext
from gate.data.dedup_text import dedup_texts
from gate.data.memo import TextMemo
from gate.data.neardup import KEEP_RULES, exact_pair_jaccard, neardup_config
from gate.errors import GateError

# cosine of all-MiniLM-L6-v2 embeddings: the lowest threshold with precision >= 0.9 on MRPC's labelled pairs
# (bench/results/semantic_dedup.md); recall there is ~0.3: only close rewordings are merged, by design
DEFAULT_THRESHOLD = 0.92
EXACT_MAX = 20000


@dataclass(frozen=True)
class SemanticDrop:
    """A row to drop as a paraphrase inside its split: `partner` stays (or, under `chain`, is its best verified
    neighbour), `score` is that pair's cosine, `kept` the cluster's first row, `size` the cluster's row count."""

    pos: int
    partner: int
    kept: int
    score: float
    size: int


def semantic_drops(emb: np.ndarray, split_of: list[int], digests: list[bytes], threshold: float, keep: str,
                   exact_max: int = EXACT_MAX) -> tuple[list[SemanticDrop], int, int]:
    """Rows to drop as paraphrases within their split, by the keep rule; shared by the check and `gate scrub` so
    scrub drops exactly what the check reports. Only the first copy of each exact text takes part (exact copies
    are `exact_duplicate`'s). Returns (drops, similar pairs, clusters)."""
    from gate.dedup.components import connected_components
    from gate.embed.encoder import similar_pairs

    drops: list[SemanticDrop] = []
    n_pairs = n_clusters = 0
    for s in sorted(set(split_of)):
        seen: set[bytes] = set()
        pos: list[int] = []
        for i, (si, d) in enumerate(zip(split_of, digests, strict=True)):
            if si == s and d not in seen:
                seen.add(d)
                pos.append(i)
        if len(pos) < 2:
            continue
        e = emb[np.asarray(pos)]
        a, b, cos = similar_pairs(e, threshold, exact_max)
        n_pairs += len(a)
        if not len(a):
            continue
        label = connected_components(len(pos), a, b)
        members: dict[int, list[int]] = {}
        for local in np.unique(np.concatenate((a, b))).tolist():
            members.setdefault(int(label[local]), []).append(local)
        best: dict[int, tuple[float, int]] = {}  # chain: each row's best neighbour
        for x, y, c in zip(a.tolist(), b.tolist(), cos.tolist(), strict=True):
            for u, v in ((x, y), (y, x)):
                if c > best.get(u, (-2.0, 0))[0]:
                    best[u] = (c, v)
        for group in members.values():
            group.sort()
            n_clusters += 1
            kept = [group[0]]
            for m in group[1:]:
                if keep == "chain":
                    score, partner = best[m]
                else:
                    sims = e[kept] @ e[m]
                    k = int(np.argmax(sims))
                    if sims[k] < threshold:
                        kept.append(m)
                        continue
                    score, partner = float(sims[k]), kept[k]
                drops.append(SemanticDrop(pos[m], pos[partner], pos[group[0]], float(score), len(group)))
    drops.sort(key=lambda d: d.pos)
    return drops, n_pairs, n_clusters


def semantic_options(contract: Contract) -> tuple[bool, float, str, int]:
    """(enabled, threshold, keep, exact_max) from `checks.semantic_duplicate` (validated by the contract schema)."""
    opts = contract.options("semantic_duplicate")
    return (bool(opts.get("enabled", False)), float(opts.get("threshold", DEFAULT_THRESHOLD)),
            str(opts.get("keep", "star")), int(opts.get("exact_max", EXACT_MAX)))


class SemanticDuplicateCheck(Check):
    name = "semantic_duplicate"
    drop_action = "drop_row"  # every paraphrase of a cluster but the kept one goes
    drop_switch = "drop_duplicates"
    rules = ("semantic_duplicate",)
    order = 40
    incremental = "full"
    finding_fields = ("partner_row", "partner_id", "score", "cluster_id", "cluster_size")
    version = "1"
    fields = ("id", "messages")
    defers_to = ("near_duplicate",)  # rows near_duplicate reported, whose pair reaches its Jaccard threshold
    options_schema = check_options({
        "enabled": {"type": "boolean", "default": False, "description":
                    "Run the check (opt-in: it embeds every row with all-MiniLM-L6-v2, from the model wheel)."},
        "threshold": {"type": "number", "exclusiveMinimum": 0, "maximum": 1, "default": DEFAULT_THRESHOLD,
                      "description": "Cosine similarity of two rows' embeddings at or above which they are "
                                     "paraphrases."},
        "keep": {"enum": list(KEEP_RULES), "default": "star", "description":
                 "Which rows of a cluster stay (as `checks.near_duplicate.keep`)."},
        "exact_max": {"type": "integer", "minimum": 2, "default": EXACT_MAX, "description":
                      "Up to this many rows per split, all pairs are compared exactly; above, an approximate "
                      "neighbour index proposes the pairs."},
    })

    @classmethod
    def skip_reason(cls, contract: Contract) -> str | None:
        """Opt-in, and only with the model wheel installed (located only; the model loads in the first map)."""
        from gate.embed.model import ModelMissing, model_zip

        if not semantic_options(contract)[0]:
            return "not enabled (set checks.semantic_duplicate.enabled: true in the contract)"
        try:
            model_zip()
        except ModelMissing as exc:
            return f"not run: {exc}"
        return None

    def __init__(self, contract: Contract) -> None:
        super().__init__(contract)
        _, self.threshold, self.keep, self.exact_max = semantic_options(contract)
        self.not_run: str | None = self.skip_reason(contract)
        self._splits: list[str] = []
        self._rows: list[tuple[int, int, str | None, bytes, str]] = []  # (split index, line, id, digest, text)
        self._emb: list[np.ndarray] = []
        self.precision = ""

    def map(self, batch: Batch) -> Any:
        if self.not_run is not None:
            return None
        from gate.embed.encoder import get_encoder

        texts, digests = dedup_texts(batch, self.contract)
        enc = get_encoder()
        first: dict[bytes, int] = {}
        todo = [i for i, d in enumerate(digests) if first.setdefault(d, i) == i]  # exact copies: encoded once
        emb = enc.encode([texts[i] for i in todo])
        rows = []
        for (line, row), text, digest in zip(batch.rows, texts, digests, strict=True):
            rid = row.get("id")
            rows.append((line, rid if isinstance(rid, str) else None, digest, text))
        slot = {i: k for k, i in enumerate(todo)}
        where = [slot[first[d]] for d in digests] if len(todo) < len(digests) else None
        return batch.split, rows, where, emb, enc.precision

    def reduce(self, partial: Any) -> None:
        if partial is None:
            return
        split, rows, where, emb, precision = partial
        self.precision = precision
        if split not in self._splits:
            self._splits.append(split)
        s = self._splits.index(split)
        for line, rid, digest, text in rows:
            self._rows.append((s, line, rid, digest, text))
        self._emb.append(emb if where is None else emb[np.asarray(where, dtype=np.int64)])
        self.counts["scanned"] += len(rows)

    def finish(self) -> None:
        if self.not_run is not None or not self._rows:
            return
        emb = np.concatenate(self._emb)
        self._emb.clear()
        near = None
        if "near_duplicate" in self.handed:
            near = neardup_config(self.contract)
        drops, pairs, clusters = semantic_drops(emb, [r[0] for r in self._rows], [r[3] for r in self._rows],
                                                self.threshold, self.keep, self.exact_max)
        self.counts["pairs"] += pairs
        self.counts["clusters"] += clusters
        for d in drops:
            self._drop(d.pos, d.partner, d.kept, d.score, d.size, near)

    def _drop(self, i: int, p: int, k: int, score: float, size: int, near: Any) -> None:
        s, line, rid, _, text = self._rows[i]
        _, p_line, p_id, _, p_text = self._rows[p]
        if (near is not None and self.reported_by("near_duplicate", self._splits[s], line)
                and exact_pair_jaccard(text, p_text, near) >= near.threshold):
            self.counts["left_to_near_duplicate"] += 1
            return
        cluster_id = f"{self._splits[s]}:{self._rows[k][1]}"
        self.counts["dropped_semantic_duplicate"] += 1
        self.findings.append(Finding(
            "semantic_duplicate", self._splits[s], line, "messages", "semantic_duplicate", "error",
            f"paraphrase of row {p_line}" + (f" (id {p_id})" if p_id else "") + f", cosine {score:.3f}; cluster "
            f"{cluster_id} of {size} row(s), kept row {self._rows[k][1]}",
            None, rid, partner_row=p_line, partner_id=p_id, score=round(score, 6), cluster_id=cluster_id,
            cluster_size=size))

    def details(self) -> dict[str, Any]:
        if self.not_run is not None:
            return {}
        return {"model": "sentence-transformers/all-MiniLM-L6-v2", "threshold": self.threshold, "keep": self.keep,
                "precision": self.precision, "exact_max": self.exact_max}

    def result(self) -> CheckResult:
        res = super().result()
        if self.not_run is not None:
            res.status, res.summary = "skipped", self.not_run
        else:
            res.summary = (f"{self.counts['dropped_semantic_duplicate']} paraphrase row(s) at cosine >= "
                           f"{self.threshold:g} (all-MiniLM-L6-v2; keep {self.keep})")
        return res


def embedding_memo(context: RunContext) -> TextMemo[np.ndarray]:
    """The run's memo of sentence embeddings (all-MiniLM-L6-v2, by raw text), which `leakage` and `contamination`
    share: with `semantic` on both embed the same training rows, and the second gets the first's vectors."""
    from gate.embed.encoder import MEMO_MAX

    return context.memo("embeddings:all-MiniLM-L6-v2", MEMO_MAX)


def semantic_matches(contract: Contract, items: list[str], rows: list[str], block: int = 4096,
                     memo: TextMemo[np.ndarray] | None = None) -> list[tuple[int, int, float]]:
    """(row index, item index, cosine) of every row within `checks.semantic_duplicate.threshold` of an evaluation
    item: reworded copies for `contamination`'s `semantic` option. A missing model is a one-line GateError (the
    contract asked for it)."""
    from gate.embed.model import ModelMissing, model_zip

    try:
        model_zip()
    except ModelMissing as exc:
        raise GateError(f"checks.contamination.semantic: {exc}", file=contract.path) from None
    from gate.embed.encoder import encode

    threshold = semantic_options(contract)[1]
    if not items or not rows:
        return []
    ie, re_ = encode(items, memo), encode(rows, memo)
    out: list[tuple[int, int, float]] = []
    for s in range(0, len(re_), block):
        sims = re_[s:s + block] @ ie.T
        a, b = np.nonzero(sims >= threshold)
        out += [(int(x) + s, int(y), float(sims[x, y])) for x, y in zip(a.tolist(), b.tolist(), strict=True)]
    return out


def semantic_leaks(contract: Contract, texts: list[str], keys: list[tuple[int, int]], splits: list[str],
                   protected: dict[str, int], block: int = 4096,
                   memo: TextMemo[np.ndarray] | None = None) -> list[tuple[int, int, float]]:
    """(position, anchor position, cosine): each row of a less protected split whose best match in a more
    protected split reaches `checks.semantic_duplicate.threshold` (reworded cross-split copies, for `leakage`'s
    `semantic` option). A missing model is a one-line GateError (the contract asked for it)."""
    from gate.embed.model import ModelMissing, model_zip

    try:
        model_zip()
    except ModelMissing as exc:
        raise GateError(f"checks.leakage.semantic: {exc}", file=contract.path) from None
    level = [protected.get(splits[s], 1) for s, _ in keys]
    if len(set(level)) < 2:
        return []
    from gate.embed.encoder import encode

    threshold = semantic_options(contract)[1]
    emb = encode(texts, memo)
    lv = np.asarray(level)
    out: list[tuple[int, int, float]] = []
    for low in sorted(set(level))[:-1]:
        rows, anchors = np.nonzero(lv == low)[0], np.nonzero(lv > low)[0]
        for s in range(0, len(rows), block):
            part = rows[s:s + block]
            sims = emb[part] @ emb[anchors].T
            best = np.argmax(sims, axis=1)
            score = sims[np.arange(len(part)), best]
            for i in np.nonzero(score >= threshold)[0].tolist():
                out.append((int(part[i]), int(anchors[best[i]]), float(score[i])))
    return sorted(out)
