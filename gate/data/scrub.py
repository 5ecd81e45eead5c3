"""`gate scrub`: a new dataset without personal data, secrets and duplicates, and a manifest of what changed.

Pass 1 scans every row (presidio + secrets, batched) and rewrites each hit with the contract's operator
per entity (typed placeholder, salted hash, or drop the row), spooling the rewritten rows to a temporary
file. Dedup runs on the rewritten text (a placeholder can make two rows identical): exact and near
duplicates within a split, and copies of a more protected split's row, are dropped. Pass 2 writes the kept
rows. The output directory appears atomically; the input is only read.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from gate import __version__
from gate.contract import Contract
from gate.data.base import RunContext
from gate.data.neardup import PROTECTED, Clustering, keep_rule, neardup_config, within_split_drops
from gate.data.pii_scan import RowScanner, set_field
from gate.data.text import normalize, row_text
from gate.errors import GateError
from gate.io.atomic import scratch_dir
from gate.io.dataset import SplitStats, discover, iter_chunks
from gate.io.digest import text_digest
from gate.io.rows import parse_chunk
from gate.io.writer import SplitWriter


@dataclass
class ScrubOutcome:
    rows_in: int = 0
    rows_out: int = 0
    entities: Counter[str] = field(default_factory=Counter)
    dropped: Counter[str] = field(default_factory=Counter)
    rows_changed: Counter[str] = field(default_factory=Counter)
    manifest: dict[str, Any] = field(default_factory=dict)


def scrub_config(contract: Contract) -> Any:
    from gate.pii import ScrubConfig

    sec = dict(contract.raw.get("scrub") or {})
    salt_env = sec.get("salt_env", "GATE_SCRUB_SALT")
    try:
        return ScrubConfig(operators=tuple(sorted(dict(sec.get("operators") or {}).items())),
                           default_operator=sec.get("default_operator", "replace"),
                           salt=os.environ.get(salt_env, ""))
    except ValueError as exc:
        raise GateError(f"scrub: {exc} (the salt comes from ${salt_env})", file=contract.path) from None


def scrub_dataset(dataset: str, contract: Contract, out: str) -> ScrubOutcome:
    cfg = scrub_config(contract)
    sec = dict(contract.raw.get("scrub") or {})
    drop_dups, drop_leaks = sec.get("drop_duplicates", True), sec.get("drop_leakage", True)
    scanner = RowScanner(contract)
    context = RunContext()  # this scrub's memos: each distinct text is scanned once
    outcome = ScrubOutcome()
    inputs: list[SplitStats] = []
    splits: list[str] = []
    keys: list[tuple[int, int]] = []
    texts: list[str] = []
    digests: list[bytes] = []
    out_path = Path(out)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    with scratch_dir(out_path) as tmp:  # a killed run's spool is swept by the next write to `out`
        spool = Path(tmp) / "rows.jsonl"
        with open(spool, "wb") as fh:
            for src in discover(dataset):
                stats = SplitStats(src.split, src.display, src.format)
                inputs.append(stats)
                splits.append(src.split)
                for chunk in iter_chunks(src, stats):
                    rows = parse_chunk(chunk)
                    stats.rows += len(rows)
                    outcome.rows_in += len(rows)
                    for (line, row), fields in zip(rows, scanner.scan([r for _, r in rows], context), strict=True):
                        if _rewrite(row, fields, cfg, outcome):
                            outcome.dropped["pii_or_secret"] += 1
                            continue
                        text = row_text(row, contract.text_roles, contract.include_tool_calls)
                        keys.append((len(splits) - 1, line))
                        texts.append(text)
                        digests.append(text_digest(normalize(text)))
                        fh.write(orjson.dumps([len(splits) - 1, line, row]) + b"\n")
        drop_keys = _dedup_drops(contract, splits, keys, texts, digests, drop_dups=drop_dups, drop_leaks=drop_leaks)
        outcome.dropped.update(drop_keys.values())
        writer = SplitWriter(out, list(splits))
        with writer, open(spool, "rb") as fh:
            for raw in fh:
                s, line, row = orjson.loads(raw)
                if (s, line) in drop_keys:
                    continue
                writer.write(splits[s], row)
                outcome.rows_out += 1
            outcome.manifest = writer.manifest = {
                "kind": "gate.scrub/1",
                "gate_version": __version__,
                "input": {"path": dataset, "splits": [{"split": st.split, "file": st.file, "rows": st.rows,
                                                       "sha256": st.sha256} for st in inputs]},
                "contract": {"name": contract.name, "version": contract.version, "sha256": contract.sha256},
                "scrub_config": str(cfg),
                "pii_config": str(scanner.pii_config),
                "rows": {"in": outcome.rows_in, "out": outcome.rows_out},
                "entities_rewritten": dict(sorted(outcome.entities.items())),
                "rows_changed": dict(sorted(outcome.rows_changed.items())),
                "rows_dropped": dict(sorted(outcome.dropped.items())),
            }
    return outcome


def _rewrite(row: dict[str, Any], fields: list[Any], cfg: Any, outcome: ScrubOutcome) -> bool:
    """Rewrites each hit of the row in place with the contract's operator for its entity, counting entities and
    changed rows into `outcome`; true when an operator drops the whole row."""
    from gate.pii import anonymize

    drop, changed = False, set()
    for fhit in fields:
        hits = fhit.pii + fhit.secrets
        if not hits:
            continue
        res = anonymize(fhit.text, hits, cfg)
        set_field(row, fhit.path, res.text)
        outcome.entities.update(res.counts)
        drop = drop or res.drop_row
        changed.update("pii" if h in fhit.pii else "secret" for h in hits)
    for kind in changed:
        outcome.rows_changed[kind] += 1
    return drop


def _dedup_drops(contract: Contract, splits: list[str], keys: list[tuple[int, int]], texts: list[str],
                 digests: list[bytes], *, drop_dups: bool, drop_leaks: bool) -> dict[tuple[int, int], str]:
    """(split index, line) -> reason of every rewritten row to drop: the checks' own rules on the rewritten text
    (a placeholder can make two rows identical), so scrub drops what `gate check` would report. The first reason
    found stays: exact copies, copies of a more protected split's row (near, then reworded), near duplicates,
    paraphrases."""
    from gate.dedup import find_near_duplicates

    drop_keys: dict[tuple[int, int], str] = {}
    if not (drop_dups or drop_leaks):
        return drop_keys
    seen: dict[tuple[int, bytes], tuple[int, int]] = {}
    for k, d in zip(keys, digests, strict=True):
        if (k[0], d) in seen and drop_dups:
            drop_keys[k] = "exact_duplicate"
        seen.setdefault((k[0], d), k)
    config = neardup_config(contract)
    result = find_near_duplicates(texts, keys, config)
    for c in result.clusters:  # copies of a more protected split's row
        top = max(PROTECTED.get(splits[keys[p][0]], 1) for p in c.members)
        for p in c.members:
            if PROTECTED.get(splits[keys[p][0]], 1) < top and drop_leaks:
                drop_keys.setdefault(keys[p], "leakage")
    if drop_leaks and contract.options("leakage").get("semantic"):  # reworded copies, as leakage reports
        from gate.data.checks.semantic_duplicate import semantic_leaks

        for pos, _, _ in semantic_leaks(contract, texts, keys, list(splits), PROTECTED):
            drop_keys.setdefault(keys[pos], "leakage")
    if drop_dups:  # the near_duplicate check's own keep rule, so scrub drops exactly what it reports
        clustering = Clustering(result, keys, splits, [None] * len(keys), digests)
        for d in within_split_drops(clustering, texts, config, keep_rule(contract)):
            drop_keys.setdefault(keys[d.pos], "near_duplicate")
        from gate.data.checks.semantic_duplicate import scrub_semantic_drops  # paraphrases, when on

        for k in scrub_semantic_drops(contract, texts, keys, digests):
            drop_keys.setdefault(k, "semantic_duplicate")
    return drop_keys
