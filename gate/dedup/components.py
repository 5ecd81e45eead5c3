"""Connected components of verified pairs: union-find on numpy arrays, and the spanning verification that tests a
candidate pair only while its two ends are still apart (a dense cluster of k near-copies costs ~k verifications,
not k^2/2). Used by near_duplicate's clusters and semantic_duplicate's."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gate.dedup._arrays import ranks_within


def _flatten(parent: np.ndarray) -> None:
    """Pointer jumping until every node points at its root (in place)."""
    while True:
        grand = parent[parent]
        if np.array_equal(grand, parent):
            return
        parent[:] = grand


def union_edges(parent: np.ndarray, left: np.ndarray, right: np.ndarray) -> None:
    """Vectorised union-find: merge the components of each (left[k], right[k]) into ``parent`` (flat, in place).

    Min-label hooking with full pointer jumping: each round hooks every edge's larger root under the smaller, then
    flattens; it stops when every edge joins equal roots, so each component ends labelled by its smallest node.
    """
    left, right = np.asarray(left, np.int64), np.asarray(right, np.int64)
    while left.size:
        pl, pr = parent[left], parent[right]
        differ = pl != pr
        if not differ.any():
            return
        pl, pr = pl[differ], pr[differ]
        np.minimum.at(parent, np.maximum(pl, pr), np.minimum(pl, pr))
        _flatten(parent)


def connected_components(n: int, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Component label (smallest member position) of each of n nodes, given edges."""
    parent = np.arange(n, dtype=np.int64)
    union_edges(parent, left, right)
    return parent


def verify_spanning(
    n: int,
    left: np.ndarray,
    right: np.ndarray,
    jaccard: Callable[[np.ndarray, np.ndarray], np.ndarray],
    threshold: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, int]:
    """Connected components of the graph of candidate edges whose exact Jaccard >= threshold, verifying as few
    edges as possible.

    An edge whose ends are already connected cannot change the components, so it is skipped. Rounds are Borůvka-like:
    each current component verifies up to K of its untested edges to other components (K doubles per round, so a
    component with many false candidates needs only log rounds); passing edges are united. A dense cluster of k
    near-copies thus costs ~k verifications instead of k^2/2, and the result equals verifying every edge.

    Returns (labels, passed edge indices, their Jaccard, edges tested, edges rejected).
    """
    parent = np.arange(n, dtype=np.int64)
    left, right = np.asarray(left, np.int64), np.asarray(right, np.int64)
    remaining = np.arange(left.size, dtype=np.int64)
    passed: list[np.ndarray] = []
    passed_j: list[np.ndarray] = []
    tested = rejected = 0
    per_component = 1
    while remaining.size:
        lu, lv = parent[left[remaining]], parent[right[remaining]]
        open_ = lu != lv
        remaining, lu, lv = remaining[open_], lu[open_], lv[open_]
        if remaining.size == 0:
            break
        owner = np.minimum(lu, lv)
        order = np.argsort(owner, kind="stable")  # stable: within a component, edges keep their given order
        owner_sorted = owner[order]
        run_start = np.flatnonzero(np.concatenate(([True], owner_sorted[1:] != owner_sorted[:-1])))
        rank = ranks_within(np.diff(np.append(run_start, order.size)))
        pick = np.zeros(remaining.size, dtype=bool)
        pick[order[rank < per_component]] = True
        edges = remaining[pick]
        jac = jaccard(left[edges], right[edges])
        ok = jac >= threshold
        tested += int(edges.size)
        rejected += int((~ok).sum())
        passed.append(edges[ok])
        passed_j.append(jac[ok])
        union_edges(parent, left[edges[ok]], right[edges[ok]])
        remaining = remaining[~pick]
        per_component = min(per_component * 2, 1 << 12)
    edges = np.concatenate(passed) if passed else np.zeros(0, np.int64)
    jac = np.concatenate(passed_j) if passed_j else np.zeros(0, np.float64)
    return parent, edges, jac, tested, rejected
