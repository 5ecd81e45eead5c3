"""`gate index build`: the index of a whole dataset from scratch, in one atomic step.

Rows are parsed and signed in worker processes (chunk by chunk, in order), the near-duplicate clusters of the
whole dataset come from the same clustering a full check runs, and each cluster becomes a group. Rebuilding is
the answer to any doubt about an index (another config, a crash, a history rewrite): it is always exact.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import time
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from gate.contract import Contract
from gate.data.neardup import neardup_config
from gate.index import store
from gate.index.features import Features, features, parse_rows
from gate.index.lines import LineTable, current_lines
from gate.io.atomic import atomic_dir
from gate.io.dataset import discover

SLICE_ROWS = 4096
_STATE: dict[str, Any] = {}


def _features_of(task: tuple[str, list[tuple[int, bytes]]]) -> Features:
    file, items = task
    rows = parse_rows(file, items)
    return features([r for _, r in rows], _STATE["contract"], _STATE["config"])


def _map_ordered(tasks: Iterator[tuple[str, list[tuple[int, bytes]]]], workers: int) -> list[Features]:
    """In order, with a bounded window of slices in flight: the line bytes of a gigabyte split are never all
    copied out at once (Pool.imap would drain the generator into its queue)."""
    if workers <= 1:
        return [_features_of(t) for t in tasks]
    out: list[Features] = []
    with mp.get_context("fork").Pool(workers) as pool:
        window: deque[Any] = deque()
        for task in tasks:
            window.append(pool.apply_async(_features_of, (task,)))
            if len(window) >= 2 * workers:
                out.append(window.popleft().get())
        while window:
            out.append(window.popleft().get())
    return out


def concat(parts: list[Features], contract_fields: list[str], num_perm: int, n_bands: int) -> Features:
    if not parts:
        return Features([], [], [], {f: [] for f in contract_fields}, np.zeros((0, num_perm), np.uint32),
                        np.zeros(0, np.int64), np.zeros((0, n_bands), np.uint64))
    return Features(
        texts=[t for p in parts for t in p.texts],
        text_digests=[d for p in parts for d in p.text_digests],
        ids=[i for p in parts for i in p.ids],
        uniques={f: [v for p in parts for v in p.uniques[f]] for f in contract_fields},
        signatures=np.concatenate([p.signatures for p in parts]),
        shingles=np.concatenate([p.shingles for p in parts]),
        bands=np.concatenate([p.bands for p in parts]))


def build_index(dataset: str, contract: Contract, index_dir: str | None = None, *,
                workers: int | None = None) -> dict[str, Any]:
    """Builds (or replaces) the index of `dataset`; returns its manifest with timings."""
    from gate.dedup import find_near_duplicates
    from gate.index.features import unique_fields

    t0 = time.perf_counter()
    config = neardup_config(contract)
    plan = config.plan()
    target = store.default_dir(dataset) if index_dir is None else Path(index_dir)
    sources = discover(dataset)
    _STATE.update(contract=contract, config=config)
    splits: list[str] = []
    row_digests: list[bytes] = []
    keys: list[tuple[int, int]] = []
    parts: list[Features] = []
    n_workers = workers or os.cpu_count() or 1
    for s, src in enumerate(sources):
        table = current_lines(src)

        def slices(table: LineTable = table, file: str = src.display) -> Iterator[tuple[str, list[tuple[int, bytes]]]]:
            for lo in range(0, len(table), SLICE_ROWS):
                hi = min(lo + SLICE_ROWS, len(table))
                yield file, [(int(table.lines[k]), table.line_bytes(k)) for k in range(lo, hi)]

        parts.extend(_map_ordered(slices(), n_workers))
        splits.extend([src.split] * len(table))
        row_digests.extend(table.digests)
        keys.extend((s, int(line)) for line in table.lines.tolist())
        del table
    t_map = time.perf_counter() - t0
    feats = concat(parts, unique_fields(contract), config.minhash.num_perm, plan.bands)
    del parts
    result = find_near_duplicates(feats.texts, keys, config, (feats.signatures, feats.shingles))
    g_split, g_digest, g_group = [], [], []
    for gid, c in enumerate(result.clusters):
        for pos in c.members:
            g_split.append(splits[pos])
            g_digest.append(row_digests[pos])
            g_group.append(gid)
    t_cluster = time.perf_counter() - t0 - t_map
    entries = store.entries_table(splits, row_digests, feats)
    groups = store.groups_table(g_split, g_digest, g_group)
    manifest = {"dataset": str(dataset), "compat": store.compat_key(contract, config), "config": str(config),
                "bands": plan.bands, "rows_per_band": plan.rows, "contract": contract.name,
                "contract_sha256": contract.sha256, "splits": [s.split for s in sources]}
    with store.locked(target):
        with atomic_dir(target) as tmp:
            store.write_new(tmp, manifest, entries, groups)
    out = store.read_manifest(target) or {}
    out["timings"] = {"parse_and_sign": round(t_map, 3), "cluster": round(t_cluster, 3),
                      "total": round(time.perf_counter() - t0, 3)}
    out["clusters"] = len(result.clusters)
    out["index_dir"] = str(target)
    return out
