"""Issue 27 item 2: `--base` must not trust an index the pull request brings: a forged `.gate-index/` (random text
digests and band keys) plus an exact duplicate row passed. An index that is part of the change is refused (one
line, exit 1); the same duplicate with an index the change did not bring fails the gate."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from tests.conftest import gate_inprocess
from tests.security.conftest import append_rows, commit_all, rows

ARGS = ("check", "data/triage", "-c", "contracts/triage.yaml", "--base", "main", "--checks", "exact_duplicate",
        "--no-db", "-o", "rep", "-q")


def _in(repo: Path, *args: str) -> tuple[int, str]:
    cwd = os.getcwd()
    os.chdir(repo)
    try:
        return gate_inprocess(*args)
    finally:
        os.chdir(cwd)


def _forge(index: Path) -> None:
    """Every entry's text digest and band keys replaced by random values (what an attacker commits)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(0)
    for part in index.glob("part-*.parquet"):
        t = pq.read_table(part)
        for i, name in enumerate(t.column_names):
            if name == "text_digest":
                t = t.set_column(i, name, pa.array([rng.bytes(16) for _ in range(t.num_rows)], pa.binary(16)))
            elif name.startswith("b") and name[1:].isdigit():
                t = t.set_column(i, name, pa.array(rng.integers(0, 2**62, t.num_rows, dtype=np.int64)
                                                   .astype(t.column(i).type.to_pandas_dtype())))
        pq.write_table(t, part)


def _duplicate_row(repo: Path) -> None:
    append_rows(repo / "data" / "triage" / "train.jsonl", [{**rows(1)[0], "id": "tri-000777"}])


def test_a_committed_forged_index_is_refused(project: Path) -> None:
    code, out = _in(project, "index", "build", "data/triage", "-c", "contracts/triage.yaml", "--no-db")
    assert code == 0, out
    _forge(next((project / ".gate-index").iterdir()))
    _duplicate_row(project)
    commit_all(project, "pr: a row and an index")
    code, out = _in(project, *ARGS)
    assert code == 1, out
    assert out.strip().count("\n") == 0 and "is part of this change" in out and ".gate-index" in out


def test_the_same_duplicate_with_an_index_outside_the_change_fails(project: Path) -> None:
    _duplicate_row(project)
    commit_all(project, "pr: a row")
    code, out = _in(project, *ARGS)  # the index is built here, untracked: this machine's
    assert code == 100, out
