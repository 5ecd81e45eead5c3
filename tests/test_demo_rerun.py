"""`gate demo` reruns in one tree (issue 15 items 2 and 3): each run has a folder and a record of its own, and
`--out` switches to a run only when it has passed, each report folder in one rename (a symlink), never showing half
a run; everything it writes stays inside `--out` (issue 33 item 7), and a folder it did not write is refused.

The data door twice is the cheap case (about a minute per run here). The whole loop twice (train, score, release,
promote: the step that failed on a rerun with `release 'demo-a' already exists`) takes minutes per run: `slow`.
"""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import pytest

from tests.conftest import gate_inprocess


def _records(db: Path, sql: str) -> list[tuple]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(sql).fetchall()


@pytest.fixture
def tree(tmp_path, monkeypatch):
    """A working directory with no GATE_DB: the demo's own record is the default, as for `make demo`."""
    monkeypatch.delenv("GATE_DB", raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_data_door_reruns_with_a_record_of_its_own_and_replaces_its_outputs_whole(tree):
    out = tree / "gate-report" / "demo"
    seen = []
    for _ in range(2):
        code, text = gate_inprocess("demo", "--data-only", "--out", str(out))
        assert code == 0, text
        assert (out / ".current").is_symlink() and (out / "triage-faulty" / "report.md").is_file()
        run_dir = (out / ".current").resolve()
        assert (out / "triage-faulty").resolve() == run_dir / "triage-faulty"
        seen.append(run_dir)
        # its own record, beside its reports: the four data-door runs of this run only
        assert len(_records(out / "gate.duckdb", "SELECT run_id FROM runs WHERE kind = 'check'")) == 4
        assert f"record: {out / 'gate.duckdb'}" in text
    assert seen[0] != seen[1] and not seen[0].exists()  # the previous run is gone, the new one whole
    assert sorted(p.name for p in (out / ".runs").iterdir()) == [seen[1].name]
    assert sorted(p.name for p in out.parent.iterdir()) == ["demo"]  # nothing beside --out
    assert not (tree / "gate.duckdb").exists()  # nothing written into the working directory's default record


def test_a_failed_run_leaves_the_last_good_one_and_entries_switch_whole(tree):
    from gate.commands.demo import _abandoned, new_run_dir, publish

    out = tree / "demo"
    first = new_run_dir(out)
    (first / "report.md").write_text("run 1\n")
    (first / "only-in-1").mkdir()
    publish(out, first)
    assert (out / "report.md").read_text() == "run 1\n" and (out / "only-in-1").is_dir()
    assert not [p for p in out.iterdir() if ".link-" in p.name]  # no link left behind
    assert sorted(p.name for p in tree.iterdir()) == ["demo"]
    # a run that failed (its process gone): kept for a look until the next run that passes
    failed = first.parent / f"{first.name.rsplit('-', 1)[0]}-{2 ** 22 + 7}"
    failed.mkdir()
    assert _abandoned(failed) and not _abandoned(first)
    second = new_run_dir(out)
    (second / "report.md").write_text("run 2\n")
    assert (out / "report.md").read_text() == "run 1\n"  # until it is published, the last good run shows
    publish(out, second)
    assert (out / "report.md").read_text() == "run 2\n" and not (out / "only-in-1").exists()
    assert sorted(first.parent.iterdir()) == [second]
    assert os.readlink(out / ".current") == os.path.relpath(second, out)  # relative: the tree can move
    assert os.readlink(out / "report.md") == os.path.join(os.path.relpath(second, out), "report.md")


def test_a_folder_the_demo_did_not_write_is_refused_untouched(tree):
    """`gate demo -o ~/reports` used to replace the folder (moved aside and removed): a user's files lost."""
    out = tree / "mine"
    out.mkdir()
    (out / "notes.md").write_text("mine\n")
    code, text = gate_inprocess("demo", "--data-only", "--out", str(out))
    assert code == 1 and "--out is a folder gate demo did not write" in text and "Traceback" not in text, text
    assert sorted(p.name for p in out.iterdir()) == ["notes.md"] and (out / "notes.md").read_text() == "mine\n"
    (tree / "file").write_text("x")
    code, text = gate_inprocess("demo", "--data-only", "--out", str(tree / "file"))
    assert code == 1 and "--out is a file" in text and (tree / "file").read_text() == "x"


def test_the_layout_before_is_taken_over_and_its_runs_beside_out_removed(tree):
    """Before, `out` was a symlink into `.<name>-runs` beside it; the next run moves everything inside `out`."""
    from gate.commands.demo import new_run_dir, publish

    old = tree / ".demo-runs" / "20260101T000000000000-host-1"
    old.mkdir(parents=True)
    (old / "report.md").write_text("old\n")
    out = tree / "demo"
    out.symlink_to(os.path.relpath(old, tree))
    run = new_run_dir(out)
    (run / "report.md").write_text("new\n")
    publish(out, run)
    assert not out.is_symlink() and (out / "report.md").read_text() == "new\n"
    assert sorted(p.name for p in tree.iterdir()) == ["demo"]


@pytest.mark.slow
def test_the_whole_demo_runs_twice_in_one_tree(tree):
    out = tree / "gate-report" / "demo"
    for n in (1, 2):
        code, text = gate_inprocess("demo", "--out", str(out))
        assert code == 0, f"run {n}:\n{text[-3000:]}"
        assert "Release A promoted, release B blocked and refused" in text and "leak scan: 0 of " in text
        releases = _records(out / "gate.duckdb", "SELECT release_id FROM releases ORDER BY 1")
        assert releases == [("demo-a",), ("demo-b",)]
        assert (out / "release-report" / "index.html").is_file()
    assert len(list((out / ".runs").iterdir())) == 1 and sorted(p.name for p in out.parent.iterdir()) == ["demo"]


def test_a_rerun_into_a_shared_record_gets_release_ids_it_does_not_hold(tmp_path):
    """With `--db`/GATE_DB the record is the user's, and may hold an earlier demo's demo-a (the rerun failed with
    `--id: release 'demo-a' already exists`): the new releases get the run's stamp."""
    import random

    from gate.commands.demo import _release_ids, new_run_dir
    from gate.store.releases import list_releases, record_decision, record_release
    from tests.dashboard_seed import release_rows, seed_check_run

    db = str(tmp_path / "shared.duckdb")
    run_dir = new_run_dir(tmp_path / "demo")
    assert _release_ids(db, True, run_dir) == ("demo-a", "demo-b")
    check = seed_check_run(db)
    assert _release_ids(db, False, run_dir) == ("demo-a", "demo-b")  # a record without them: the plain ids
    decision, gates, comps, rel = release_rows("triage", 0, rng=random.Random(1), check_run=check)
    record_decision(decision, gates, comps, db)
    record_release({**rel, "release_id": "demo-a"}, db)
    a, b = _release_ids(db, False, run_dir)
    stamp = run_dir.name.split("-")[0]
    assert (a, b) == (f"demo-a-{stamp}", f"demo-b-{stamp}")
    assert not {a, b} & {r["release_id"] for r in list_releases(db)}
