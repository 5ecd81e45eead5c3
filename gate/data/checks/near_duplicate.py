"""`near_duplicate` (within a split) and `leakage` (across splits) from one MinHash-LSH clustering.

MinHash over word n-gram shingles (datasketch-compatible), LSH bands chosen from the threshold to keep
recall at the threshold >= 0.99, every candidate verified by exact Jaccard, clusters by union-find.
Within a split the earliest row of a cluster stays; `keep: star` (default) drops a later row only when it is
within the threshold of a row that stays, `keep: chain` drops the whole closure (gate.data.neardup.within_split_drops).
Each finding cites its verified partner and that pair's Jaccard, and names the cluster with the number of rows its
verified pairs join, a lower bound (LSH may miss every pair of a member); exact copies are
left to `exact_duplicate`. Across splits, the copy in the less protected split (train < val < test) is a
`leakage` finding, whether the copy is exact or near.
"""

from __future__ import annotations

from typing import Any

from gate.contract import Contract
from gate.contract.file_schema import check_options
from gate.data.base import Batch, Check, CheckResult, Finding, IncrementalView
from gate.data.dedup_text import dedup_texts
from gate.data.neardup import (
    PROTECTED,
    Clustering,
    cluster,
    exact_pair_jaccard,
    keep_rule,
    neardup_config,
    within_split_drops,
)
from gate.pii.redact import value_snippet


class _ClusterCheck(Check):
    """Collects the dedup text of every row; subclasses read the shared clustering."""

    fields = ("id", "messages")

    def __init__(self, contract: Contract) -> None:
        super().__init__(contract)
        self._config = neardup_config(contract)  # built once; bad options fail here, before the scan
        self._texts: list[str] = []
        self._keys: list[tuple[int, int]] = []
        self._ids: list[str | None] = []
        self._digests: list[bytes] = []
        self._splits: list[str] = []
        self._sketches: list[Any] = []
        self._clustering: Clustering | None = None

    def map(self, batch: Batch) -> Any:
        key = f"neardup:{self._config}:{self.contract.text_roles}"
        if key not in batch.cache:  # computed once per batch for near_duplicate and leakage
            from gate.dedup import compute_signatures, sketch_signatures

            texts, digests = dedup_texts(batch, self.contract)
            out = []
            for (line, row), text, digest in zip(batch.rows, texts, digests, strict=True):
                rid = row.get("id")
                out.append((line, text, rid if isinstance(rid, str) else None, digest))
            # shingling, MinHash and band keys in the workers (per row, so both cores share them); only the sketch
            # travels back, not the signature matrix
            sig, counts = compute_signatures(texts, self._config)
            batch.cache[key] = (batch.split, out, sketch_signatures(sig, counts, self._config.plan()))
        return batch.cache[key]

    def reduce(self, partial: Any) -> None:
        split, rows, sketch = partial
        if split not in self._splits:
            self._splits.append(split)
        s = self._splits.index(split)
        for line, text, rid, digest in rows:
            self._texts.append(text)
            self._keys.append((s, line))
            self._ids.append(rid)
            self._digests.append(digest)
        if sketch is not None:
            self._sketches.append(sketch)
        self.counts["scanned"] += len(rows)

    def finish(self) -> None:
        if self._texts:
            from gate.dedup import Sketch

            sketch = Sketch.concat(self._sketches, self._config.plan().bands)
            self._sketches.clear()
            self._clustering = cluster(self._texts, self._keys, self._splits, self._ids, self._digests,
                                       self.contract, sketch, cache=self.context.cache)

    def clusters_with(self, changed: frozenset[tuple[str, int]]) -> int:
        """How many clusters hold a changed row (in an incremental run the others are old news)."""
        cl = self._clustering
        if cl is None:
            return 0
        return sum(any((cl.splits[cl.keys[p][0]], cl.keys[p][1]) in changed for p in cluster.members)
                   for cluster in cl.result.clusters)

    def _cluster_incremental(self, view: IncrementalView, flagged_key: str) -> None:
        """Keeps, for an incremental result, the findings on members of the clusters that hold a changed row,
        counted as the full check counts them for those clusters."""
        self.findings = [f for f in self.findings if (f.split, f.row) in view.members]
        self.counts[flagged_key] = len(self.findings)
        self.counts["scanned"] = view.total_rows
        self.counts["changed_rows"] = len(view.changed)
        if "clusters" in self.counts:
            self.counts["clusters"] = self.clusters_with(view.changed)

    def _plan_details(self) -> dict[str, Any]:
        if self._clustering is None:
            return {}
        res = self._clustering.result
        c = res.counters
        return {"config": res.config_key, "bands": res.plan.bands, "rows": res.plan.rows,
                "threshold": res.plan.threshold,
                "detection_curve": [{"jaccard": s, "p_candidate": round(p, 4)} for s, p in res.plan.curve],
                "counters": {k: getattr(c, k) for k in ("docs", "empty_docs", "candidate_pairs", "verified_pairs",
                                                        "false_candidates_rejected", "rejected_by_signature",
                                                        "rejected_by_bound", "skipped_already_connected",
                                                        "oversized_buckets", "split_buckets", "clusters",
                                                        "rows_in_clusters")},
                "report_lines": [res.plan.describe()]}


SNIPPET_CHARS = 160  # of a near duplicate's text in its finding (redacted like every quoted value)

#: what a finding's `cluster_size` is (details and docs say it): the rows joined by verified pairs, never an estimate
CLUSTER_SIZE = ("a lower bound: the rows joined by verified pairs; a row whose every pair LSH missed (see "
                "detection_curve) is not counted")


class NearDuplicateCheck(_ClusterCheck):
    name = "near_duplicate"
    drop_action = "drop_row"  # every row of a cluster but the kept one goes
    drop_switch = "drop_duplicates"
    rules = ("near_duplicate",)
    order = 30
    incremental = "against_index"
    finding_fields = ("partner_row", "partner_id", "score", "cluster_id", "cluster_size")
    version = "2"  # findings cite a verified partner; `keep: star` is the default
    keep = "star"
    hops_max = 0
    # read by gate.data.neardup.neardup_config (shared with `leakage` and `contamination`'s MinHash)
    options_schema = check_options({
        "threshold": {"type": "number", "exclusiveMinimum": 0, "maximum": 1, "default": 0.8, "description":
                      "Exact Jaccard of two rows' shingle sets at or above which they are near duplicates."},
        "ngram": {"type": "integer", "minimum": 1, "default": 5, "description":
                  "Shingle length in units (words or characters); a shorter text is one whole-text shingle."},
        "num_perm": {"type": "integer", "minimum": 1, "default": 128, "description":
                     "MinHash permutations: more finds more candidate pairs (recall) at more CPU."},
        "seed": {"type": "integer", "minimum": 0, "default": 1, "description":
                 "MinHash seed (datasketch-compatible); the same seed gives the same signatures."},
        "strip_punct": {"type": "boolean", "default": True, "description":
                        "Replace punctuation by spaces before shingling."},
        "unit": {"enum": ["word", "char"], "default": "word", "description":
                 "Shingle unit: word n-grams, or character n-grams (for text without spaces)."},
        "keep": {"enum": ["star", "chain"], "default": "star", "description":
                 "Which rows of a cluster stay: star drops a row only when it is near a row that stays; chain "
                 "drops every row linked to the kept one through verified pairs."},
    })

    def finish(self) -> None:
        super().finish()
        cl = self._clustering
        if cl is None:
            return
        keep = keep_rule(self.contract)
        clusters = cl.result.clusters
        for d in within_split_drops(cl, self._texts, self._config, keep):
            s, line = cl.keys[d.pos]
            c = clusters[d.cluster]
            p_split, p_line = cl.keys[d.partner]
            partner = (f"row {p_line}" if p_split == s else f"{cl.splits[p_split]} row {p_line}") + (
                f" (id {cl.ids[d.partner]})" if cl.ids[d.partner] else "")
            cluster_id = f"{cl.splits[c.id[0]]}:{c.id[1]}"
            kept_line = cl.keys[d.kept][1]
            self.counts["dropped_near_duplicate"] += 1
            self.hops_max = max(self.hops_max, d.hops)
            self.findings.append(Finding(
                "near_duplicate", cl.splits[s], line, "messages", "near_duplicate", "error",
                # the rows verified pairs join: LSH may miss every pair of a member (79 of 80
                # on GPTeacher at 0.7), so the size is a lower bound and says so
                f"near duplicate of {partner}, Jaccard {d.jaccard:.2f}; cluster {cluster_id} of at least {c.size} "
                f"row(s) (joined by verified pairs), kept row {kept_line}"
                + (f", {d.hops} hop(s) from it" if keep == "chain" else ""),
                # the row's text, redacted: a cluster listed as ids alone did not show what was repeated
                value_snippet(self._texts[d.pos], SNIPPET_CHARS) if self._texts[d.pos] else None, cl.ids[d.pos],
                partner_row=p_line, partner_id=cl.ids[d.partner], score=round(d.jaccard, 6),
                cluster_id=cluster_id, cluster_size=c.size))
        self.keep = keep
        self.counts["clusters"] = cl.result.counters.clusters

    def details(self) -> dict[str, Any]:
        """The LSH plan and counters, the keep rule, and how far a dropped row lies from its kept row (hops along
        verified pairs: always 1 under `star`; under `chain` a deep cluster is a hint of templated data)."""
        return {**self._plan_details(), "keep": self.keep, "max_hops_from_kept": self.hops_max,
                "cluster_size": CLUSTER_SIZE}

    def incremental_result(self, view: IncrementalView) -> CheckResult:
        self._cluster_incremental(view, "dropped_near_duplicate")
        return self.result()

    def result(self) -> CheckResult:
        res = super().result()
        if self._clustering is not None:
            p = self._clustering.result.plan
            res.summary = (f"{self.counts['dropped_near_duplicate']} near-duplicate row(s) at Jaccard >= "
                           f"{p.threshold:g} (LSH {p.bands}x{p.rows}, P(detect at threshold) "
                           f"{p.recall_at_threshold:.3f}; keep {self.keep}; every cited pair verified)")
        return res


class LeakageCheck(_ClusterCheck):
    name = "leakage"
    drop_action = "drop_row"  # the copy in the less protected split goes
    drop_switch = "drop_leakage"
    rules = ("leakage.exact", "leakage.near", "leakage.semantic")
    order = 50
    incremental = "against_index"
    finding_fields = ("partner_row", "partner_id", "score")  # the row of the more protected split and the similarity
    version = "1"
    # clusters under `checks.near_duplicate`'s options; `semantic`: also reworded copies (gate.embed cosine >=
    # checks.semantic_duplicate.threshold), reported as leakage.semantic
    options_schema = check_options({"semantic": {"type": "boolean", "default": False, "description": (
        "Also report a training row that says a test or validation row in other words (cosine of all-MiniLM-L6-v2 "
        "embeddings at or above `checks.semantic_duplicate.threshold`; needs the model wheel).")}})

    def finish(self) -> None:
        super().finish()
        cl = self._clustering
        if cl is None:
            return
        # protection by the split a file is (a contract `splits` rule maps test_extra to test)
        kinds = self.contract.split_kinds(cl.splits)
        protected = {s: PROTECTED.get(kinds[s], 1) for s in cl.splits}
        for c in cl.result.clusters:
            by_split: dict[int, list[int]] = {}
            for pos in c.members:
                by_split.setdefault(cl.keys[pos][0], []).append(pos)
            if len(by_split) < 2:
                continue
            # equally protected (train.jsonl and train_more.ndjson): the first split in reading order is the
            # original, so the copies in a file added later are the findings, never the rows they copy
            top = max(by_split, key=lambda s: (protected[cl.splits[s]], -s))
            anchor = by_split[top][0]
            for s, positions in by_split.items():
                if s == top:
                    continue
                for pos in positions:
                    exact = cl.digests[pos] == cl.digests[anchor]
                    jac = 1.0 if exact else exact_pair_jaccard(self._texts[pos], self._texts[anchor], self._config)
                    self.counts["leaked_rows"] += 1
                    self.findings.append(Finding(
                        "leakage", cl.splits[s], cl.keys[pos][1], "messages",
                        "leakage.exact" if exact else "leakage.near", "error",
                        f"{'exact' if exact else 'near'} copy of {cl.splits[top]} row {cl.keys[anchor][1]}"
                        + (f" (id {cl.ids[anchor]})" if cl.ids[anchor] else "") + f", Jaccard {jac:.2f}",
                        None, cl.ids[pos], partner_row=cl.keys[anchor][1], partner_id=cl.ids[anchor],
                        score=round(jac, 6)))
        if self.contract.options("leakage").get("semantic"):
            from gate.data.checks.semantic_duplicate import embedding_memo, semantic_leaks

            flagged = {(f.split, f.row) for f in self.findings}
            for pos, anchor, cos in semantic_leaks(self.contract, self._texts, cl.keys, cl.splits, protected,
                                                    memo=embedding_memo(self.context)):
                (s, line), (a, a_line) = cl.keys[pos], cl.keys[anchor]
                if (cl.splits[s], line) not in flagged:
                    self.counts["leaked_rows"] += 1
                    self.findings.append(Finding(
                        "leakage", cl.splits[s], line, "messages", "leakage.semantic", "error",
                        f"reworded copy of {cl.splits[a]} row {a_line}" + (f" (id {cl.ids[anchor]})" if cl.ids[anchor]
                                                                           else "") + f", cosine {cos:.3f}",
                        None, cl.ids[pos], partner_row=a_line, partner_id=cl.ids[anchor], score=round(cos, 6)))

    def details(self) -> dict[str, Any]:
        d = self._plan_details()
        d.pop("report_lines", None)
        return d

    def incremental_result(self, view: IncrementalView) -> CheckResult:
        if len(view.splits) > 1:  # the checked subset may miss a split the dataset has: leakage still applies
            self._splits.extend(s for s in view.splits if s not in self._splits)
        self._cluster_incremental(view, "leaked_rows")
        return self.result()

    def result(self) -> CheckResult:
        res = super().result()
        if len(self._splits) < 2:
            res.status = "skipped" if not self.findings else res.status
            res.summary = "one split only: nothing can leak across splits"
        else:
            res.summary = f"{self.counts['leaked_rows']} row(s) copy a row of a more protected split"
        return res
