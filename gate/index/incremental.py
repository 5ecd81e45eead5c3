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
import os
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from gate.contract import Contract
from gate.data.base import Batch, Check, CheckResult, IncrementalView, finish_all
from gate.data.neardup import neardup_config
from gate.data.registry import CHECKS, instantiate, resolve
from gate.data.runner import CheckRun
from gate.errors import GateError
from gate.index import parts
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
from gate.io.dataset import SplitStats, discover, refuse_unmapped_splits
from gate.io.forking import fork_context

PARALLEL_MIN_ROWS = 512  # below this, forking workers costs more than the checks
_Rows = list[tuple[int, dict[str, Any]]]
_Task = tuple[str, str, _Rows]
_WORKER_CHECKS: list[Check] = []  # set in each forked worker by its initializer only; the parent never sets it


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


def _map_task(task: _Task, checks: list[Check] | None = None) -> list[Any]:
    split, file, rows = task
    batch = Batch(split, file, rows)
    return [c.map(batch) for c in (_WORKER_CHECKS if checks is None else checks)]


def _init_worker(checks: list[Check]) -> None:
    """Runs in each forked worker (its arguments are inherited, not pickled)."""
    global _WORKER_CHECKS
    _WORKER_CHECKS = checks


def _run(instances: list[Check], batches: list[_Task], workers: int) -> None:
    """Map/reduce/finish of unchanged checks over selected rows (in split and line order), forked like the runner."""
    if not instances:
        return
    tasks = [(s, f, rows[i:i + 256]) for s, f, rows in batches for i in range(0, len(rows), 256)]
    n_rows = sum(len(r) for _, _, r in batches)
    ctx = fork_context("incremental check workers") if workers > 1 and n_rows >= PARALLEL_MIN_ROWS else None
    if ctx is not None:
        # one row mapped here first loads the engines (spaCy, validators, tokenizer) once: the forked workers
        # inherit them instead of each loading its own; map must not touch what reduce relies on, so it is free
        first = next(t for t in tasks if t[2])
        _map_task((first[0], first[1], first[2][:1]), instances)
        with ctx.Pool(workers, initializer=_init_worker, initargs=(instances,)) as pool:
            # started only after the fork, as in the runner: forking while a thread imports is unsafe
            warm = threading.Thread(target=lambda: [c.warm_up() for c in instances], daemon=True)
            warm.start()
            for parts in pool.imap(_map_task, tasks, chunksize=1):
                for c, p in zip(instances, parts, strict=True):
                    c.reduce(p)
            warm.join()
    else:
        for t in tasks:
            for c, p in zip(instances, _map_task(t, instances), strict=True):
                c.reduce(p)
    finish_all(instances)


class _Clock:
    """Wall and CPU seconds per phase (`timings` of the CheckRun): CPU counts this process and its reaped workers,
    because on a shared machine wall time hides the work."""

    def __init__(self) -> None:
        self.t0 = time.perf_counter()
        self.timings: dict[str, float] = {}
        self._since = (self.t0, self._cpu())

    @staticmethod
    def _cpu() -> float:
        t = os.times()
        return t.user + t.system + t.children_user + t.children_system

    def lap(self, name: str) -> None:
        now, c = time.perf_counter(), self._cpu()
        self.timings[name] = round(now - self._since[0], 4)
        self.timings[f"cpu.{name}"] = round(c - self._since[1], 3)
        self._since = (now, c)


@dataclass
class _Query:
    """The query rows (changed, or new to the index), parsed with the index's features, and what of the index can
    share a finding with them: per split, the row digests of candidate rows and their groups (`closure`), and of
    rows holding a changed row's unique-field value (`collide`)."""

    rows: dict[str, _Rows]
    pos: dict[str, np.ndarray]
    features: Any  # gate.index.features.Features of the query rows, in split order
    closure: dict[str, list[np.ndarray]]
    collide: dict[str, list[np.ndarray]]


def run_incremental(dataset: str, contract: Contract, base: str, *, index_dir: str | None = None,
                    checks: list[str] | None = None, workers: int | None = None,
                    update_index: bool = True) -> CheckRun:
    """The incremental check; returns a CheckRun like a full check (reports, record and exit code work as usual)."""
    started = datetime.now(UTC)
    clock = _Clock()
    names = resolve(checks)
    n_workers = workers or os.cpu_count() or 1
    config = neardup_config(contract)
    sources = discover(dataset)
    repo = repo_root(Path(dataset).resolve())
    commit = resolve_ref(repo, base)
    from gate.vcs import refuse_unseen

    refuse_unseen(repo, Path(dataset), base)  # a link out of the dataset, a submodule: changes no diff shows
    refuse_unmapped_splits(dataset, sources, contract.split_kind)  # a file no rule maps is no split of its own
    refuse_index_from_change(repo, commit, Path(index_dir) if index_dir else parts.default_dir(dataset), base)
    idx_dir, manifest, built_now = _open_index(dataset, contract, config, index_dir, n_workers, clock)
    splits, diff_paths = _diff(sources, repo, commit)
    clock.lap("diff")
    query = _query_index(idx_dir, manifest, contract, config, splits, "contract" in names, clock)
    _release_arrow_memory()  # the index columns are gone: freed before the checks fork their workers
    clock.lap("index_query")

    parsed, dedup_sel, contract_sel = _parse_selected(splits, query)
    changed = frozenset((sp.name, int(ln)) for sp in splits for ln in sp.table.lines[sp.changed].tolist())
    instances = {c.name: c for c in instantiate([n for n in names if CHECKS[n].incremental != "full"], contract)}
    # one pass for every per-row check: the contract's rows (changed + unique-value collisions) are a superset
    per_row = [c for c in instances.values() if c.incremental == "per_row"]
    _run(per_row, _batches(splits, parsed, contract_sel if "contract" in instances
                           else {sp.name: sp.changed for sp in splits}), n_workers)
    clock.lap("per_row_checks")
    dedup = [c for c in instances.values() if c.incremental == "against_index"]
    _run(dedup, _batches(splits, parsed, dedup_sel), n_workers)
    clock.lap("dedup_checks")

    members, new_clusters = _relevant_clusters(instances, changed)
    view = IncrementalView(changed, sum(len(sp.table) for sp in splits), tuple(sp.name for sp in splits),
                           frozenset(members), _text_digests(parsed, contract) if "exact_duplicate" in instances
                           else {})
    clock.lap("filter")
    full = _full_checks(dataset, contract, [n for n in names if n not in instances], n_workers, repo, commit, base)
    results = [instances[n].incremental_result(view) if n in instances else full[n] for n in names]
    clock.lap("full_checks")

    options: dict[str, Any] = {"checks": names, "workers": n_workers, "base": base, "base_commit": commit,
                               "index": str(idx_dir), "changed_rows": len(changed),
                               "query_rows": int(sum(int(sp.query.sum()) for sp in splits)),
                               "parsed_rows": len(parsed), "index_rows": int(manifest["rows"]),
                               "index_built_now": built_now, "diff": diff_paths}
    if update_index and dedup:
        options["index_rows_added"] = _update_index(idx_dir, contract, config, splits, query.pos, query.features,
                                                    new_clusters)
        clock.lap("index_update")
    return _check_run(dataset, contract, sources, splits, results, started, clock, options)


def refuse_index_from_change(repo: Path, commit: str, idx_dir: Path, base: str) -> None:
    """The index stands in for every row the change did not touch, so it must not come from the change: a pull
    request that commits a forged index (random text digests and band keys) hides a duplicate of any row it likes.
    An index git does not see (ignored, outside the repository: built here, or a CI cache of the base) is this
    machine's; one whose files git tracks is part of the repository and is used only when identical to `commit`'s.
    Otherwise one line, exit 1. Checked on the index's top folder inside the repository, so a tracked symlink on
    the way (`.gate-index` -> elsewhere) counts too."""
    import subprocess

    root = repo.resolve()
    for candidate in {idx_dir.absolute(), idx_dir.resolve()}:
        try:
            rel = candidate.relative_to(root)
        except ValueError:
            continue
        if not rel.parts:
            continue
        top = rel.parts[0]
        out = subprocess.run(["git", "diff", "--name-only", "--no-renames", commit, "--", top], cwd=root,
                             capture_output=True, text=True, timeout=120)
        staged = subprocess.run(["git", "diff", "--name-only", "--cached", commit, "--", top], cwd=root,
                                capture_output=True, text=True, timeout=120)
        changed = sorted({*out.stdout.split(), *staged.stdout.split()})
        if out.returncode != 0 or changed:
            raise GateError(f"the index {top}/ is part of this change ({', '.join(changed[:3]) or 'unreadable'} "
                            f"differ from `{base}`): an index must come from the base; remove it from the "
                            "change, or point --index outside the repository", file=str(candidate))


def _open_index(dataset: str, contract: Contract, config: Any, index_dir: str | None, workers: int,
                clock: _Clock) -> tuple[Path, dict[str, Any], bool]:
    """The index directory and its manifest, built now on first use (the dataset as it is, its changed rows
    included: harmless); refuses an index built under other dedup options."""
    idx_dir = Path(index_dir) if index_dir else parts.default_dir(dataset)
    manifest = parts.read_manifest(idx_dir)
    built_now = False
    if manifest is None:
        from gate.index.build import build_index

        build_index(dataset, contract, str(idx_dir), workers=workers)
        manifest = parts.read_manifest(idx_dir)
        built_now = True
        clock.lap("index_build")
    assert manifest is not None
    parts.check_compatible(manifest, parts.compat_key(contract, config), idx_dir)
    return idx_dir, manifest, built_now


def _diff(sources: list[Any], repo: Path, commit: str) -> tuple[list[_Split], dict[str, str]]:
    """Each split's lines as digests, and which of them changed since `commit` (with the method used)."""
    splits: list[_Split] = []
    diff_paths: dict[str, str] = {}
    for src in sources:
        blob = base_blob(repo, commit, src)
        # streamed: the split's lines as digests and spans, rows read back only when parsed
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
    return splits, diff_paths


def _query_index(idx_dir: Path, manifest: dict[str, Any], contract: Contract, config: Any, splits: list[_Split],
                 with_unique: bool, clock: _Clock) -> _Query:
    """Loads the index, marks each split's query rows (`sp.query`), parses them, and finds the index rows that can
    share a finding with them. The index columns are local: gone when this returns."""
    ufields = unique_fields(contract)
    bands = int(manifest["bands"])
    cols = ["split", "row_digest", "text_digest", *[f"u:{f}" for f in ufields], *[f"b{b}" for b in range(bands)]]
    ent = parts.load_entries(idx_dir, manifest, cols)
    ent_split = _split_column(ent.column("split"))
    ent_row = parts.digest_array(ent.column("row_digest"))
    ent_text = parts.digest_array(ent.column("text_digest"))
    clock.lap("index_load")

    for sp in splits:
        in_index = _isin16(sp.digests, ent_row[ent_split == sp.name])
        sp.query = sp.changed | ~in_index
    # the query rows: parsed, with the same features the index holds
    q_rows: dict[str, _Rows] = {}
    q_pos: dict[str, np.ndarray] = {}
    for sp in splits:
        pos = np.flatnonzero(sp.query)
        q_pos[sp.name] = pos
        q_rows[sp.name] = parse_rows(sp.file, [(int(sp.table.lines[k]), sp.table.line_bytes(k)) for k in pos])
    qf = features([r for sp in splits for _, r in q_rows[sp.name]], contract, config)
    clock.lap("parse_changed")

    # index entries that can share a finding with a query row
    cand = _isin16(ent_text, _s16(qf.text_digests))  # the few query digests against every entry
    for b in range(bands):
        cand |= _isin(ent.column(f"b{b}").to_numpy(), qf.bands[:, b])
    closure = _closure(idx_dir, manifest, ent_split, ent_row, cand)
    collide: dict[str, list[np.ndarray]] = {}
    if ufields and with_unique:
        changed_flat = np.concatenate([sp.changed[q_pos[sp.name]] for sp in splits]) if splits else np.zeros(0, bool)
        collide = _unique_collisions(ent, ent_split, ent_row, ufields, qf, changed_flat)
    return _Query(q_rows, q_pos, qf, closure, collide)


def _closure(idx_dir: Path, manifest: dict[str, Any], ent_split: np.ndarray, ent_row: np.ndarray,
             cand: np.ndarray) -> dict[str, list[np.ndarray]]:
    """Per split, the row digests of the candidate entries and of every row ever in one group with one of them."""
    groups = parts.load_groups(idx_dir, manifest)
    g_split = groups.column("split").to_pylist()
    g_row = parts.digest_array(groups.column("row_digest"))
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
    return closure


def _unique_collisions(ent: Any, ent_split: np.ndarray, ent_row: np.ndarray, ufields: list[str], qf: Any,
                       changed_flat: np.ndarray) -> dict[str, list[np.ndarray]]:
    """Per split, the row digests of index rows holding a changed row's value of a `unique` field."""
    import pyarrow as pa
    import pyarrow.compute as pc

    collide: dict[str, list[np.ndarray]] = {}
    for f in ufields:
        values = [v for v, c in zip(qf.uniques[f], changed_flat.tolist(), strict=True) if c and v is not None]
        if not values:
            continue
        hit = pc.is_in(ent.column(f"u:{f}"), value_set=pa.array(values, pa.string())).to_numpy(zero_copy_only=False)
        hit = np.asarray(hit, dtype=bool)
        for s in {*ent_split[hit].tolist()}:
            collide.setdefault(s, []).append(ent_row[hit & (ent_split == s)])
    return collide


def _release_arrow_memory() -> None:
    """Arrow's allocator keeps freed pages for reuse; each forked worker's RSS would count them (1248 -> 1049 MB
    peak at 250k rows once returned)."""
    import gc

    import pyarrow as pa

    gc.collect()
    pa.default_memory_pool().release_unused()


def _parse_selected(splits: list[_Split], query: _Query
                    ) -> tuple[dict[tuple[str, int], dict[str, Any]], dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The current lines behind the index hits, parsed, and the row subsets each family of checks runs on:
    the dedup checks (query rows + their closure) and the contract (changed rows + unique-value collisions)."""
    dedup_sel: dict[str, np.ndarray] = {}
    contract_sel: dict[str, np.ndarray] = {}
    for sp in splits:
        want = np.concatenate(query.closure.get(sp.name, [np.zeros(0, "S16")]))
        dedup_sel[sp.name] = sp.query | _isin16(sp.digests, want)
        want = np.concatenate(query.collide.get(sp.name, [np.zeros(0, "S16")]))
        contract_sel[sp.name] = sp.changed | _isin16(sp.digests, want)
    parsed: dict[tuple[str, int], dict[str, Any]] = {}
    for sp in splits:
        for line, row in query.rows[sp.name]:
            parsed[(sp.name, line)] = row
        extra = np.flatnonzero((dedup_sel[sp.name] | contract_sel[sp.name]) & ~sp.query)
        for line, row in parse_rows(sp.file, [(int(sp.table.lines[k]), sp.table.line_bytes(k)) for k in extra]):
            parsed[(sp.name, line)] = row
    return parsed, dedup_sel, contract_sel


def _batches(splits: list[_Split], parsed: dict[tuple[str, int], dict[str, Any]],
             sel: dict[str, np.ndarray]) -> list[_Task]:
    out = []
    for sp in splits:
        lines = sp.table.lines[sel[sp.name]].tolist()
        out.append((sp.name, sp.file, [(ln, parsed[(sp.name, ln)]) for ln in lines]))
    return out


def _text_digests(parsed: dict[tuple[str, int], dict[str, Any]], contract: Contract) -> dict[tuple[str, int], bytes]:
    """The normalised text digest of every parsed row (what exact_duplicate compares)."""
    from gate.data.dedup_text import dedup_texts

    keys = list(parsed)
    _, digests = dedup_texts(Batch("", "", [(0, parsed[k]) for k in keys]), contract)
    return dict(zip(keys, digests, strict=True))


def _full_checks(dataset: str, contract: Contract, names: list[str], workers: int, repo: Path, commit: str,
                 ref: str) -> dict[str, CheckResult]:
    """The dataset-level checks (`contamination`, `group_split`, `boilerplate`, `semantic_duplicate`) the index
    cannot answer, run on the whole dataset now and as it was at `commit`, with the same contract; a finding the
    base already had is marked existing and fails only with new ones (gate.data.novelty), as under
    `--changed-since`. Skipping them let a pull request add a training row copying an evaluation item, or a row of
    a customer who lives in the test split, under `--base`."""
    import tempfile

    from gate.data.novelty import BaseCheck, mark, row_keys
    from gate.data.runner import run_checks
    from gate.vcs import export_at

    if not names:
        return {}
    run = run_checks(dataset, contract, checks=names, workers=workers, progress=False)
    # the base is checked only for the checks with an error now (a clean change, the usual case, costs one run)
    again = [r.name for r in run.results if any(f.severity == "error" for f in r.findings)]
    if not again:
        return {r.name: r for r in run.results}
    target = Path(dataset).resolve()
    with tempfile.TemporaryDirectory(prefix="gate-base-") as tmp:  # outside the work tree, as gate.data.novelty
        if export_at(commit, repo, [target], Path(tmp)):
            base_unit = Path(tmp) / target.relative_to(repo.resolve())
            base_run = run_checks(str(base_unit), contract, checks=again, workers=workers, progress=False)
            base = BaseCheck(ref, commit, base_run, row_keys(base_unit))
        else:
            base = BaseCheck(ref, commit, None, note=f"`{target.name}` is new since `{ref}`")
    mark(run, base)
    for res in run.results:
        res.summary = f"{res.summary} (whole dataset, against `{ref}`)" if res.status != "skipped" else res.summary
    return {r.name: r for r in run.results}


def _check_run(dataset: str, contract: Contract, sources: list[Any], splits: list[_Split],
               results: list[CheckResult], started: datetime, clock: _Clock, options: dict[str, Any]) -> CheckRun:
    stats = []
    for src, sp in zip(sources, splits, strict=True):
        stats.append(SplitStats(sp.name, src.display, src.format, rows=len(sp.table), bytes=src.path.stat().st_size,
                                sha256=sp.table.sha256))
    fingerprint = hashlib.sha256("".join(f"{s.split}:{s.sha256};" for s in stats).encode()).hexdigest()
    run_id = hashlib.sha256(f"{started.isoformat()}{fingerprint}{contract.sha256}{os.getpid()}".encode()).hexdigest()
    return CheckRun(run_id=run_id[:16], dataset=str(dataset), contract=contract, splits=stats, results=results,
                    started_at=started, seconds=time.perf_counter() - clock.t0, fingerprint=fingerprint,
                    options=options, timings=clock.timings)


def _relevant_clusters(instances: dict[str, Check], changed: frozenset[tuple[str, int]]
                       ) -> tuple[set[tuple[str, int]], list[list[tuple[str, int]]]]:
    """Members of the clusters that hold a changed row, and every cluster of the run (for the index groups)."""
    members: set[tuple[str, int]] = set()
    clusters: list[list[tuple[str, int]]] = []
    for c in instances.values():  # near_duplicate and leakage share one clustering (the run's context): the first
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

    with parts.locked(idx_dir):
        manifest = parts.read_manifest(idx_dir)
        if manifest is None:
            return 0
        # rows not in the index yet (a concurrent update may have added some: checked again under the lock)
        ent = parts.load_entries(idx_dir, manifest, ["split", "row_digest"])
        ent_split = _split_column(ent.column("split"))
        ent_row = parts.digest_array(ent.column("row_digest"))
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
        entries = parts.entries_table(splits_out, digests_out, sub)
        groups = parts.load_groups(idx_dir, manifest)
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
        table = parts.groups_table([s for s, _, _ in g_items], [d for _, d, _ in g_items], [g for _, _, g in g_items])
        parts.append(idx_dir, manifest, entries, table)
        return entries.num_rows
