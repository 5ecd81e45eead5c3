"""`gate check DATASET --base REF`: check what a pull request changed, against the index of everything else.

Which rows: a line of a split is *changed* when its digest is not among the lines of the same file at REF
(counted as a multiset). Changed rows get every per-row check (contract, PII, secrets, template, length).

Duplicates, near duplicates and leakage need the rest of the dataset, which the index stands in for. The rows
that can share a finding with a changed row are: index rows with the same normalised text, index rows sharing an
LSH band key, and every row that was ever in one near-duplicate group with those (the stored groups are unions
of past clusters, so an edge between two unchanged rows is always inside one group). That set plus the changed
rows is closed under "in one cluster with a changed row", so running the unchanged `exact_duplicate`,
`near_duplicate` and `leakage` checks on it, with the rows' current line numbers, reproduces exactly the
findings a full check gives for every cluster that contains a changed row; findings of clusters without one are
old news and are dropped. Only these rows are parsed; the rest of the dataset is read as line digests.

Rows the index does not know yet (it was built before some merge) are queried like changed rows, so their
links are found too, and are added to the index afterwards together with the changed rows (atomically).
"""

from __future__ import annotations

import hashlib
import multiprocessing as mp
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from gate.contract import Contract
from gate.data.base import Batch, Check, CheckResult, Finding
from gate.data.neardup import neardup_config
from gate.data.registry import CHECKS
from gate.data.runner import CheckRun
from gate.errors import GateError
from gate.index import store
from gate.index.features import features, parse_rows, unique_fields
from gate.index.lines import (
    StreamedLines,
    appended_mask,
    base_blob,
    changed_lines,
    changed_mask,
    lines_at,
    repo_root,
    resolve_ref,
    start_diff,
)
from gate.io.dataset import SplitStats, discover

PER_ROW = ("contract", "pii", "secret", "template", "length")
AGAINST_INDEX = ("exact_duplicate", "near_duplicate", "leakage")
PARALLEL_MIN_ROWS = 512  # below this, forking workers costs more than the checks
_TASK_CHECKS: list[Check] = []


@dataclass
class _Split:
    name: str
    file: str
    table: StreamedLines
    digests: np.ndarray  # S16, one per line (compare as arrays only: S16 drops trailing NULs when indexed)
    changed: np.ndarray  # bool per line
    query: np.ndarray  # changed, or not in the index yet


def _s16(digests: list[bytes]) -> np.ndarray:
    return np.frombuffer(b"".join(digests), dtype="S16") if digests else np.zeros(0, "S16")


def _isin16(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """np.isin for 16-byte digests as two uint64 halves: b sorted by its first half, a binary search per element
    of a, then the second half compared. numpy 2.x hashes 'S16' strings in np.isin, minutes on a million rows."""
    if a.size == 0 or b.size == 0:
        return np.zeros(a.size, dtype=bool)
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    head_a, tail_a = a.view("<u8")[::2], a.view("<u8")[1::2]
    head_b, tail_b = b.view("<u8")[::2], b.view("<u8")[1::2]
    order = np.argsort(head_b, kind="stable")
    heads, tails = head_b[order], tail_b[order]
    pos = np.searchsorted(heads, head_a)
    np.minimum(pos, heads.size - 1, out=pos)
    same_head = heads[pos] == head_a
    hit = same_head & (tails[pos] == tail_a)
    # a first half shared by several digests of b (copies, or a 64-bit collision): only the first was compared
    odd = np.flatnonzero(same_head & ~hit)
    if odd.size:
        hit[odd] = np.isin(a[odd], b)
    return hit


def _isin(big: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """np.isin for integers by a binary search into the sorted keys. numpy 2.x's np.isin hashes both arrays,
    seconds for a pull request's keys against a million index entries; this costs one sort of the keys."""
    if big.size == 0 or keys.size == 0:
        return np.zeros(big.size, dtype=bool)
    keys = np.sort(keys)
    pos = np.searchsorted(keys, big)
    np.minimum(pos, keys.size - 1, out=pos)
    return keys[pos] == big


def _split_column(column: Any) -> np.ndarray:
    """The split name of every entry as an object array of a handful of shared `str` objects (dictionary
    decoded): converting the column row by row made a million `str` objects, which stay in the heap."""
    import pyarrow.compute as pc

    enc = pc.dictionary_encode(column.combine_chunks() if hasattr(column, "combine_chunks") else column)
    names = np.empty(len(enc.dictionary), dtype=object)
    names[:] = enc.dictionary.to_pylist()
    return names[enc.indices.to_numpy().astype(np.int64)]  # a split name is never null


def _map_task(task: tuple[str, str, list[tuple[int, dict[str, Any]]]]) -> list[Any]:
    split, file, rows = task
    batch = Batch(split, file, rows)
    return [c.map(batch) for c in _TASK_CHECKS]


def _run(instances: list[Check], batches: list[tuple[str, str, list[tuple[int, dict[str, Any]]]]],
         workers: int) -> None:
    """Map/reduce/finish of unchanged checks over selected rows (in split and line order), forked like the runner."""
    global _TASK_CHECKS
    if not instances:
        return
    _TASK_CHECKS = instances
    tasks = [(s, f, rows[i:i + 256]) for s, f, rows in batches for i in range(0, len(rows), 256)]
    n_rows = sum(len(r) for _, _, r in batches)
    if workers > 1 and n_rows >= PARALLEL_MIN_ROWS:
        # one row mapped here first loads the engines (spaCy, validators, tokenizer) once: the forked workers
        # inherit them instead of each loading its own; map must not touch what reduce relies on, so it is free
        first = next(t for t in tasks if t[2])
        _map_task((first[0], first[1], first[2][:1]))
        with mp.get_context("fork").Pool(workers) as pool:
            # started only after the fork, as in the runner: forking while a thread imports is unsafe
            warm = threading.Thread(target=lambda: [c.warm_up() for c in instances], daemon=True)
            warm.start()
            for parts in pool.imap(_map_task, tasks, chunksize=1):
                for c, p in zip(instances, parts, strict=True):
                    c.reduce(p)
            warm.join()
    else:
        for t in tasks:
            for c, p in zip(instances, _map_task(t), strict=True):
                c.reduce(p)
    for c in instances:
        c.timed_finish()


def _skipped(name: str, contract: Contract, why: str) -> CheckResult:
    check = CHECKS[name]
    return CheckResult(name, check.version, "skipped", {"scanned": 0}, [], 0.0, why)


def _result(check: Check, keep: Callable[[Finding], bool], counts: dict[str, int]) -> CheckResult:
    check.findings = [f for f in check.findings if keep(f)]
    for k, v in counts.items():  # set, not add: these counts describe the incremental run
        check.counts[k] = v
    return check.result()


def run_incremental(dataset: str, contract: Contract, base: str, *, index_dir: str | None = None,
                    checks: list[str] | None = None, workers: int | None = None,
                    update_index: bool = True) -> CheckRun:
    """The incremental check; returns a CheckRun like a full check (reports, record and exit code work as usual)."""
    started = datetime.now(UTC)
    t0 = time.perf_counter()
    timings: dict[str, float] = {}

    def cpu() -> float:
        t = os.times()  # this process and its reaped workers: on a shared machine wall time hides the work
        return t.user + t.system + t.children_user + t.children_system

    def lap(name: str, since: list[float] = [t0, cpu()]) -> None:  # noqa: B006 - a closure's running clocks
        now, c = time.perf_counter(), cpu()
        timings[name] = round(now - since[0], 4)
        timings[f"cpu.{name}"] = round(c - since[1], 3)
        since[0], since[1] = now, c

    names = checks or list(CHECKS)
    unknown = [n for n in names if n not in CHECKS]
    if unknown:
        raise GateError(f"unknown check(s): {', '.join(unknown)} (available: {', '.join(CHECKS)})")
    n_workers = workers or os.cpu_count() or 1
    config = neardup_config(contract)
    sources = discover(dataset)
    repo = repo_root(Path(dataset).resolve())
    commit = resolve_ref(repo, base)
    idx_dir = Path(index_dir) if index_dir else store.default_dir(dataset)
    manifest = store.read_manifest(idx_dir)
    built_now = False
    if manifest is None:  # first use: index the dataset as it is now (its changed rows included: harmless)
        from gate.index.build import build_index

        build_index(dataset, contract, str(idx_dir), workers=n_workers)
        manifest = store.read_manifest(idx_dir)
        built_now = True
        lap("index_build")
    assert manifest is not None
    store.check_compatible(manifest, store.compat_key(contract, config), idx_dir)

    splits: list[_Split] = []
    diff_paths: dict[str, str] = {}
    for src in sources:
        blob = base_blob(repo, commit, src)
        # streamed: the split's lines as digests and spans, rows read back only when parsed (issue 19)
        table = StreamedLines(src, (blob.algo, blob.size) if blob is not None else None)
        mask = appended_mask(table, blob) if blob is not None else None
        if mask is not None:
            diff_paths[src.split] = "append"
        else:  # rows edited or removed: git compares both versions, or (over git's 1 GB limit) the digests do
            by_git = changed_lines(start_diff(repo, commit, src))
            diff_paths[src.split] = "git-diff" if by_git is not None else "digests"
            mask = (_isin(table.lines, by_git) if by_git is not None
                    else changed_mask(table, lines_at(repo, commit, src)))
        splits.append(_Split(src.split, src.display, table, table.digest_array, mask, np.zeros(0, bool)))
    lap("diff")

    ufields = unique_fields(contract)
    bands = int(manifest["bands"])
    cols = ["split", "row_digest", "text_digest", *[f"u:{f}" for f in ufields], *[f"b{b}" for b in range(bands)]]
    ent = store.load_entries(idx_dir, manifest, cols)
    ent_split = _split_column(ent.column("split"))
    ent_row = store.digest_array(ent.column("row_digest"))
    ent_text = store.digest_array(ent.column("text_digest"))
    lap("index_load")

    for sp in splits:
        in_index = _isin16(sp.digests, ent_row[ent_split == sp.name])
        sp.query = sp.changed | ~in_index
    # the query rows: parsed, with the same features the index holds
    q_rows: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    q_pos: dict[str, np.ndarray] = {}
    for sp in splits:
        pos = np.flatnonzero(sp.query)
        q_pos[sp.name] = pos
        q_rows[sp.name] = parse_rows(sp.file, [(int(sp.table.lines[k]), sp.table.line_bytes(k)) for k in pos])
    flat = [r for sp in splits for _, r in q_rows[sp.name]]
    qf = features(flat, contract, config)
    lap("parse_changed")

    # index entries that can share a finding with a query row
    cand = _isin16(ent_text, _s16(qf.text_digests))  # the few query digests against every entry
    for b in range(bands):
        cand |= _isin(ent.column(f"b{b}").to_numpy(), qf.bands[:, b])
    groups = store.load_groups(idx_dir, manifest)
    g_split = groups.column("split").to_pylist()
    g_row = store.digest_array(groups.column("row_digest"))
    g_id = groups.column("group").to_numpy()
    cand_keys = {(s, d) for s, d in zip(ent_split[cand].tolist(), ent_row[cand].tolist(), strict=True)}
    hit_groups = {int(g) for s, d, g in zip(g_split, g_row.tolist(), g_id.tolist(), strict=True)
                  if (s, d) in cand_keys}
    in_hit = _isin(g_id, np.fromiter(hit_groups, dtype=np.int64, count=len(hit_groups)))
    closure: dict[str, list[np.ndarray]] = {}
    for s in {*ent_split[cand].tolist()}:
        closure.setdefault(s, []).append(ent_row[cand & (ent_split == s)])
    for s in {g_split[k] for k in np.flatnonzero(in_hit).tolist()}:
        sel = in_hit & (np.asarray(g_split, dtype=object) == s)
        closure.setdefault(s, []).append(g_row[sel])
    # unique-field values of changed rows that the index already holds elsewhere (the contract's `unique`)
    changed_flat = np.concatenate([sp.changed[q_pos[sp.name]] for sp in splits]) if splits else np.zeros(0, bool)
    collide: dict[str, list[np.ndarray]] = {}
    if ufields and "contract" in names:
        import pyarrow as pa
        import pyarrow.compute as pc

        for f in ufields:
            values = [v for v, c in zip(qf.uniques[f], changed_flat.tolist(), strict=True) if c and v is not None]
            if not values:
                continue
            hit = pc.is_in(ent.column(f"u:{f}"), value_set=pa.array(values, pa.string())).to_numpy(
                zero_copy_only=False)
            hit = np.asarray(hit, dtype=bool)
            for s in {*ent_split[hit].tolist()}:
                collide.setdefault(s, []).append(ent_row[hit & (ent_split == s)])
    # nothing of the index is needed past this point: freed before the per-row checks fork their workers, and
    # Arrow's allocator told to return the pages (it keeps them for reuse; each forked worker's RSS would count
    # them: 1248 -> 1049 MB peak at 250k rows)
    del ent, ent_split, ent_row, ent_text, groups, g_split, g_row, g_id, cand, in_hit, cand_keys
    import gc

    import pyarrow as pa

    gc.collect()
    pa.default_memory_pool().release_unused()
    lap("index_query")

    # current lines behind those entries, and the row subsets each family of checks runs on
    dedup_sel: dict[str, np.ndarray] = {}
    contract_sel: dict[str, np.ndarray] = {}
    for sp in splits:
        want = np.concatenate(closure.get(sp.name, [np.zeros(0, "S16")]))
        dedup_sel[sp.name] = sp.query | _isin16(sp.digests, want)
        want = np.concatenate(collide.get(sp.name, [np.zeros(0, "S16")]))
        contract_sel[sp.name] = sp.changed | _isin16(sp.digests, want)
    parsed: dict[tuple[str, int], dict[str, Any]] = {}
    for sp in splits:
        for line, row in q_rows[sp.name]:
            parsed[(sp.name, line)] = row
        extra = np.flatnonzero((dedup_sel[sp.name] | contract_sel[sp.name]) & ~sp.query)
        for line, row in parse_rows(sp.file, [(int(sp.table.lines[k]), sp.table.line_bytes(k)) for k in extra]):
            parsed[(sp.name, line)] = row

    def batches(sel: dict[str, np.ndarray]) -> list[tuple[str, str, list[tuple[int, dict[str, Any]]]]]:
        out = []
        for sp in splits:
            lines = sp.table.lines[sel[sp.name]].tolist()
            out.append((sp.name, sp.file, [(ln, parsed[(sp.name, ln)]) for ln in lines]))
        return out

    changed_keys = {(sp.name, int(ln)) for sp in splits for ln in sp.table.lines[sp.changed].tolist()}
    total_rows = sum(len(sp.table) for sp in splits)
    instances = {n: CHECKS[n](contract) for n in names if n in PER_ROW or n in AGAINST_INDEX}
    # one pass for every per-row check: the contract's rows (changed + unique-value collisions) are a superset
    per_row = [instances[n] for n in names if n in PER_ROW]
    _run(per_row, batches(contract_sel if "contract" in instances else {sp.name: sp.changed for sp in splits}),
         n_workers)
    lap("per_row_checks")
    dedup = [instances[n] for n in names if n in AGAINST_INDEX]
    _run(dedup, batches(dedup_sel), n_workers)
    lap("dedup_checks")

    # keep what concerns a changed row
    n_changed = len(changed_keys)
    results: list[CheckResult] = []
    relevant_members, new_clusters = _relevant_clusters(instances, changed_keys)
    text_of: dict[tuple[str, int], bytes] = {}
    if "exact_duplicate" in instances:
        from gate.data.dedup_text import dedup_texts

        keys = list(parsed)
        _, digests = dedup_texts(Batch("", "", [(0, parsed[k]) for k in keys]), contract)
        text_of = dict(zip(keys, digests, strict=True))
    hot_texts = {(k[0], text_of[k]) for k in changed_keys if k in text_of}
    for n in names:
        if n not in instances:
            results.append(_skipped(n, contract, "runs in full checks only (not incremental)"))
            continue
        c = instances[n]
        if n in PER_ROW and n != "contract":
            results.append(_result(c, lambda f: (f.split, f.row) in changed_keys,
                                   {"changed_rows": n_changed, "scanned": n_changed}))
        elif n == "contract":
            results.append(_result(c, lambda f: (f.split, f.row) in changed_keys or f.rule == "field.unique",
                                   {"changed_rows": n_changed, "scanned": n_changed}))
        elif n == "exact_duplicate":
            def keep_exact(f: Finding) -> bool:
                return (f.split, text_of.get((f.split, f.row or 0))) in hot_texts

            res_counts = {"changed_rows": n_changed}
            c.findings = [f for f in c.findings if keep_exact(f)]
            c.counts.clear()
            # the clusters a full check counts that hold a changed row: texts with a duplicate, not every changed
            # row's text (issue 18 item 9: "1 duplicate row(s) in 20 cluster(s)" where the full check said one)
            dup_texts = {(f.split, text_of.get((f.split, f.row or 0))) for f in c.findings}
            c.counts.update(scanned=total_rows, dropped_duplicate=len(c.findings), clusters=len(dup_texts),
                            kept=total_rows - len(c.findings), **res_counts)
            results.append(c.result())
        else:
            kept = [f for f in c.findings if (f.split, f.row) in relevant_members]
            c.findings = kept
            key = "dropped_near_duplicate" if n == "near_duplicate" else "leaked_rows"
            c.counts[key] = len(kept)
            c.counts["scanned"] = total_rows
            c.counts["changed_rows"] = n_changed
            if "clusters" in c.counts:  # as the full check counts them, for the clusters that hold a changed row
                c.counts["clusters"] = _clusters_with(c, changed_keys)
            if n == "near_duplicate":
                c.counts["kept"] = total_rows - len(kept)
            if n == "leakage" and len(splits) > 1:
                for sp in splits:  # the subset may miss a split the dataset has: leakage still applies
                    if sp.name not in c._splits:  # type: ignore[attr-defined]
                        c._splits.append(sp.name)  # type: ignore[attr-defined]
            results.append(c.result())
    lap("filter")

    options: dict[str, Any] = {"checks": names, "workers": n_workers, "base": base, "base_commit": commit,
                               "index": str(idx_dir), "changed_rows": n_changed,
                               "query_rows": int(sum(int(sp.query.sum()) for sp in splits)),
                               "parsed_rows": len(parsed), "index_rows": int(manifest["rows"]),
                               "index_built_now": built_now, "diff": diff_paths}
    if update_index and dedup:
        added = _update_index(idx_dir, contract, config, splits, q_pos, qf, new_clusters)
        options["index_rows_added"] = added
        lap("index_update")
    stats = []
    for src, sp in zip(sources, splits, strict=True):
        stats.append(SplitStats(sp.name, src.display, src.format, rows=len(sp.table), bytes=src.path.stat().st_size,
                                sha256=sp.table.sha256))
    fingerprint = hashlib.sha256("".join(f"{s.split}:{s.sha256};" for s in stats).encode()).hexdigest()
    run_id = hashlib.sha256(f"{started.isoformat()}{fingerprint}{contract.sha256}{os.getpid()}".encode()).hexdigest()
    return CheckRun(run_id=run_id[:16], dataset=str(dataset), contract=contract, splits=stats, results=results,
                    started_at=started, seconds=time.perf_counter() - t0, fingerprint=fingerprint, options=options,
                    timings=timings)


def _clusters_with(check: Check, changed: set[tuple[str, int]]) -> int:
    """How many of the check's clusters hold a changed row (the others are old news, their findings dropped)."""
    cl = getattr(check, "_clustering", None)
    if cl is None:
        return 0
    return sum(any((cl.splits[cl.keys[p][0]], cl.keys[p][1]) in changed for p in cluster.members)
               for cluster in cl.result.clusters)


def _relevant_clusters(instances: dict[str, Check], changed: set[tuple[str, int]]
                       ) -> tuple[set[tuple[str, int]], list[list[tuple[str, int]]]]:
    """Members of the clusters that hold a changed row, and every cluster of the run (for the index groups)."""
    members: set[tuple[str, int]] = set()
    clusters: list[list[tuple[str, int]]] = []
    for n in ("near_duplicate", "leakage"):
        c = instances.get(n)
        cl = getattr(c, "_clustering", None)
        if cl is None:
            continue
        for cluster in cl.result.clusters:
            keys = [(cl.splits[cl.keys[p][0]], cl.keys[p][1]) for p in cluster.members]
            clusters.append(keys)
            if any(k in changed for k in keys):
                members.update(keys)
        break
    return members, clusters


def _update_index(idx_dir: Path, contract: Contract, config: Any, splits: list[_Split], q_pos: dict[str, np.ndarray],
                  qf: Any, clusters: list[list[tuple[str, int]]]) -> int:
    """Appends the rows the index lacked and merges this run's clusters into the groups, atomically."""
    from gate.index.features import Features

    by_name = {sp.name: sp for sp in splits}

    def digest_of(split: str, line: int) -> bytes:
        sp = by_name[split]
        return sp.table.digests[int(np.searchsorted(sp.table.lines, line))]

    with store.locked(idx_dir):
        manifest = store.read_manifest(idx_dir)
        if manifest is None:
            return 0
        # rows not in the index yet (a concurrent update may have added some: checked again under the lock)
        ent = store.load_entries(idx_dir, manifest, ["split", "row_digest"])
        ent_split = _split_column(ent.column("split"))
        ent_row = store.digest_array(ent.column("row_digest"))
        del ent
        take: list[int] = []
        splits_out: list[str] = []
        digests_out: list[bytes] = []
        offset = 0
        for sp in splits:
            pos = q_pos[sp.name]
            known = _isin16(sp.digests[pos], ent_row[ent_split == sp.name])
            seen: set[bytes] = set()
            for j, k in enumerate(pos.tolist()):
                d = sp.table.digests[k]
                if not known[j] and d not in seen:  # byte-identical lines of one split share one entry
                    seen.add(d)
                    take.append(offset + j)
                    splits_out.append(sp.name)
                    digests_out.append(d)
            offset += len(pos)
        sub = Features([qf.texts[i] for i in take], [qf.text_digests[i] for i in take], [qf.ids[i] for i in take],
                       {f: [v[i] for i in take] for f, v in qf.uniques.items()}, qf.signatures[take],
                       qf.shingles[take], qf.bands[take])
        entries = store.entries_table(splits_out, digests_out, sub)
        groups = store.load_groups(idx_dir, manifest)
        node_group: dict[tuple[str, bytes], int] = {
            (s, d): g for s, d, g in zip(groups.column("split").to_pylist(), groups.column("row_digest").to_pylist(),
                                         groups.column("group").to_pylist(), strict=True)}
        members: dict[int, set[tuple[str, bytes]]] = {}
        for node, g in node_group.items():
            members.setdefault(g, set()).add(node)
        next_id = max(members, default=-1) + 1
        for keys in clusters:
            nodes = {(s, digest_of(s, ln)) for s, ln in keys}
            gids = sorted({node_group[n] for n in nodes if n in node_group})
            target = gids[0] if gids else next_id
            next_id += 0 if gids else 1
            merged = set(nodes)
            for g in gids:
                merged |= members.pop(g, set())
            members[target] = merged
            for node in merged:
                node_group[node] = target
        g_items = [(s, d, g) for (s, d), g in node_group.items()]
        table = store.groups_table([s for s, _, _ in g_items], [d for _, d, _ in g_items], [g for _, _, g in g_items])
        store.append(idx_dir, manifest, entries, table)
        return entries.num_rows
