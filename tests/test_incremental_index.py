"""Incremental checks (`gate check --base REF`) against a full check, in throwaway git repositories.

The base commit holds a clean fixture (no findings), the next commit turns it into the faulty fixture (fault
rows inserted in the middle of every split, so line numbers shift). Every finding of a full check of the head
then concerns a changed row, so the incremental check must reproduce the full check's findings exactly.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import CONTRACTS, FIXTURES, run_gate

# forks check workers in this process (run_incremental, gate index build in-process): the serial phase of
# `make test` (pytest -m forks), where this process runs no other thread and the pools really fork
pytestmark = pytest.mark.forks

CHECKS = ["contract", "pii", "secret", "template", "length", "exact_duplicate", "near_duplicate", "leakage"]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def make_repo(root: Path, base_fixture: str) -> Path:
    repo = root / "repo"
    (repo / "data").mkdir(parents=True)
    git(repo, "init", "-q")
    git(repo, "config", "user.email", "ci@example.org")
    git(repo, "config", "user.name", "ci")
    for f in (FIXTURES / base_fixture).glob("*.jsonl"):
        shutil.copy(f, repo / "data" / f.name)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    return repo


def commit_fixture(repo: Path, fixture: str, msg: str) -> None:
    for f in (FIXTURES / fixture).glob("*.jsonl"):
        shutil.copy(f, repo / "data" / f.name)
    git(repo, "commit", "-qam", msg)


def _manifest(index: Path) -> dict:
    return json.loads((index / "manifest.json").read_text())


@pytest.mark.parametrize(("kind", "contract_file"), [("triage", "triage.yaml"), ("tool-use", "tool-use.yaml")])
def test_incremental_equals_full_check(tmp_path, monkeypatch, kind, contract_file):
    from gate.contract import load_contract
    from gate.data.runner import run_checks
    from gate.index import incremental
    from gate.index.build import build_index
    from gate.index.incremental import run_incremental

    if kind == "triage":  # the forked two-worker path (used from 512 changed rows) on the small fixture too
        monkeypatch.setattr(incremental, "PARALLEL_MIN_ROWS", 1)

    contract = load_contract(CONTRACTS / contract_file)
    repo = make_repo(tmp_path, f"{kind}-clean")
    index = tmp_path / "index"
    build_index(str(repo / "data"), contract, str(index), workers=1)  # the index of the base, as CI caches it
    rows_before = _manifest(index)["rows"]
    commit_fixture(repo, f"{kind}-faulty", "add faulty rows")
    before = {p.name: p.read_bytes() for p in (repo / "data").iterdir()}

    inc = run_incremental(str(repo / "data"), contract, "HEAD~1", index_dir=str(index), checks=CHECKS, workers=2)
    full = run_checks(str(repo / "data"), contract, checks=CHECKS, progress=False)

    assert inc.options["changed_rows"] == full.rows - rows_before  # the inserted fault rows, nothing else
    assert inc.options["parsed_rows"] < full.rows / 3  # only the changed rows and their candidates were parsed
    assert sum(len(r.findings) for r in full.results) > 20
    for a, b in zip(full.results, inc.results, strict=True):
        assert a.name == b.name
        assert b.findings == a.findings, a.name
        assert b.status == a.status, a.name
        # every cluster holds a changed row here, so the counts the summary shows match too (issue 18 item 9)
        assert b.counts.get("clusters") == a.counts.get("clusters"), a.name
        if a.name == "exact_duplicate":
            assert b.summary == a.summary
    assert inc.verdict == full.verdict == "fail"
    from gate.report.check_report import to_markdown

    sha = git(repo, "rev-parse", "HEAD~1").strip()
    assert (f"Incremental against `{sha[:12]}` (`HEAD~1`): {inc.options['changed_rows']:,} new row(s) checked"
            in to_markdown(inc))
    assert "Incremental against" not in to_markdown(full)
    # the changed rows are in the index now, added atomically; the dataset is untouched
    assert _manifest(index)["rows"] == rows_before + inc.options["changed_rows"]
    assert {p.name: p.read_bytes() for p in (repo / "data").iterdir()} == before

    again = run_incremental(str(repo / "data"), contract, "HEAD", index_dir=str(index), checks=CHECKS)
    assert again.options["changed_rows"] == 0 and again.options["query_rows"] == 0
    assert all(not r.findings for r in again.results)
    assert _manifest(index)["rows"] == rows_before + inc.options["changed_rows"]


def test_stale_index_rows_are_queried_too(tmp_path, triage_contract):
    """An index older than REF: rows merged since it was built are looked up like changed rows, then indexed."""
    from gate.data.runner import run_checks
    from gate.index.build import build_index
    from gate.index.incremental import run_incremental

    checks = ["exact_duplicate", "near_duplicate", "leakage"]
    repo = make_repo(tmp_path, "triage-clean")
    index = tmp_path / "index"
    build_index(str(repo / "data"), triage_contract, str(index), workers=1)
    faulty = {p.name: p.read_text().splitlines(keepends=True) for p in (FIXTURES / "triage-faulty").glob("*.jsonl")}
    # commit 1 (merged without updating the index): the first half of each faulty split; commit 2: the rest
    for name, lines in faulty.items():
        (repo / "data" / name).write_text("".join(lines[: len(lines) // 2]))
    git(repo, "commit", "-qam", "first half")
    for name, lines in faulty.items():
        (repo / "data" / name).write_text("".join(lines))
    git(repo, "commit", "-qam", "second half")

    inc = run_incremental(str(repo / "data"), triage_contract, "HEAD~1", index_dir=str(index), checks=checks)
    full = run_checks(str(repo / "data"), triage_contract, checks=checks, progress=False)
    assert inc.options["query_rows"] > inc.options["changed_rows"] > 0
    lines = git(repo, "diff", "-U0", "HEAD~1", "--", "data").splitlines()
    assert lines  # the second commit changed something
    for a, b in zip(full.results, inc.results, strict=True):
        assert set(b.findings) <= set(a.findings), a.name  # nothing invented
    assert any(r.findings for r in inc.results)
    assert _manifest(index)["rows"] == full.rows


def test_cli_base_and_index_build(tmp_path):
    repo = make_repo(tmp_path, "triage-clean")
    index = tmp_path / "idx"
    contract = str(CONTRACTS / "triage.yaml")
    res = run_gate("index", "build", str(repo / "data"), "-c", contract, "--index", str(index), "--no-db")
    assert res.returncode == 0, res.stderr
    assert "540 rows" in res.stdout
    first = (index / "part-000000.parquet").read_bytes()
    commit_fixture(repo, "triage-faulty", "faults")
    res = run_gate("check", str(repo / "data"), "-c", contract, "--base", "HEAD~1", "--index", str(index),
                   "--checks", "contract,exact_duplicate,near_duplicate,leakage", "-o", str(tmp_path / "r"),
                   "--no-db", "-q")
    assert res.returncode == 100, res.stderr
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert "Traceback" not in res.stderr and report
    # rebuilt from scratch on demand: the same base rows give the same first part
    shutil.rmtree(index)
    git(repo, "checkout", "-q", "HEAD~1")
    res = run_gate("index", "build", str(repo / "data"), "-c", contract, "--index", str(index), "--no-db")
    assert res.returncode == 0, res.stderr
    import pyarrow.parquet as pq

    assert pq.read_table(index / "part-000000.parquet").equals(pq.read_table(pa_file(first, tmp_path)))


def pa_file(data: bytes, tmp_path: Path) -> Path:
    p = tmp_path / "first.parquet"
    p.write_bytes(data)
    return p


def test_bad_ref_and_wrong_index_are_one_line_errors(tmp_path):
    repo = make_repo(tmp_path, "triage-clean")
    contract = str(CONTRACTS / "triage.yaml")
    res = run_gate("check", str(repo / "data"), "-c", contract, "--base", "no-such-ref", "--index",
                   str(tmp_path / "idx"), "--no-db", "-o", str(tmp_path / "r"))
    assert res.returncode == 1
    assert res.stderr.strip().splitlines() == [f"gate: error: unknown git ref 'no-such-ref' in {repo}"]
    assert not (tmp_path / "r").exists()
    # an index built for another near-duplicate configuration is refused, not silently reused
    other = tmp_path / "other.yaml"
    suites = str(CONTRACTS.parent / "scorecards") + "/"
    text = (CONTRACTS / "triage.yaml").read_text().replace("../scorecards/", suites)
    other.write_text(text + "\nchecks:\n  near_duplicate: {threshold: 0.7}\n")
    res = run_gate("index", "build", str(repo / "data"), "-c", str(other), "--index", str(tmp_path / "idx"),
                   "--no-db")
    assert res.returncode == 0, res.stderr
    res = run_gate("check", str(repo / "data"), "-c", contract, "--base", "HEAD", "--index", str(tmp_path / "idx"),
                   "--no-db", "-o", str(tmp_path / "r"))
    assert res.returncode == 1
    assert "rebuild it with `gate index build`" in res.stderr and "Traceback" not in res.stderr
    (tmp_path / "idx" / "manifest.json").write_text("{broken")
    res = run_gate("check", str(repo / "data"), "-c", contract, "--base", "HEAD", "--index", str(tmp_path / "idx"),
                   "--no-db", "-o", str(tmp_path / "r"))
    assert res.returncode == 1 and len(res.stderr.strip().splitlines()) == 1


def test_appended_rows_skip_git_diff_and_match_the_digest_comparison(tmp_path, triage_contract):
    """A pull request that appends rows is recognised from git's object id of the old bytes (no diff, no base
    read), and gives the same changed rows and findings as the multiset comparison of line digests. A base file
    without a final newline whose last line the pull request extends counts that line as changed."""
    from gate.index import lines as lines_mod
    from gate.index.build import build_index
    from gate.index.incremental import run_incremental
    from gate.io.dataset import discover

    checks = ["contract", "exact_duplicate", "near_duplicate", "leakage"]
    repo = make_repo(tmp_path, "triage-clean")
    train = repo / "data" / "train.jsonl"
    val = repo / "data" / "val.jsonl"
    clean_val = val.read_bytes()
    val.write_bytes(clean_val.rstrip(b"\n"))  # the base's last line has no newline
    git(repo, "commit", "-qam", "val without final newline")
    index = tmp_path / "index"
    build_index(str(repo / "data"), triage_contract, str(index), workers=1)
    extra = [ln for ln in (FIXTURES / "triage-faulty" / "train.jsonl").read_bytes().splitlines(keepends=True)
             if ln not in set(train.read_bytes().splitlines(keepends=True))]
    assert len(extra) > 10
    train.write_bytes(train.read_bytes() + b"".join(extra))
    last = clean_val.rstrip(b"\n").rsplit(b"\n", 1)[1]
    val.write_bytes(clean_val.rstrip(b"\n") + b'  \n' + last.replace(b'"id":"', b'"id":"x') + b"\n")
    git(repo, "commit", "-qam", "append")

    inc = run_incremental(str(repo / "data"), triage_contract, "HEAD~1", index_dir=str(index), checks=checks,
                          update_index=False)
    assert inc.options["diff"] == {"train": "append", "val": "append", "test": "append"}
    assert inc.options["changed_rows"] == len(extra) + 1  # the new rows and the copied last val line
    # the same files through the digest comparison (the path for edits and for files over git's diff limit)
    commit = lines_mod.resolve_ref(repo, "HEAD~1")
    for src in discover(str(repo / "data")):
        now = lines_mod.current_lines(src)
        by_digest = lines_mod.changed_mask(now, lines_mod.lines_at(repo, commit, src))
        blob = lines_mod.base_blob(repo, commit, src)
        fast = lines_mod.appended_mask(lines_mod.current_lines(src, (blob.algo, blob.size)), blob)
        assert fast is not None and (fast == by_digest).all(), src.split
    # the trailing whitespace added after val's old last line leaves that line unchanged
    assert not any(f.split == "val" and f.row == len(clean_val.splitlines()) for r in inc.results for f in r.findings
                   if r.name == "contract")
    # an edit before the end is not an append: git diff takes over
    train.write_bytes(train.read_bytes().replace(b'"id":"tri-', b'"id":"trX-', 1))
    git(repo, "commit", "-qam", "edit first row")
    inc2 = run_incremental(str(repo / "data"), triage_contract, "HEAD~1", index_dir=str(index), checks=["contract"],
                           update_index=False)
    assert inc2.options["diff"]["train"] == "git-diff"
    assert inc2.options["changed_rows"] == 1


def test_membership_helpers_agree_with_numpy():
    import numpy as np

    from gate.index.incremental import _isin, _isin16

    rng = np.random.default_rng(7)
    big = rng.integers(0, 2**63, 200_000, dtype=np.uint64)
    for few in (big[:0], big[[5]], np.concatenate([big[rng.integers(0, big.size, 300)],
                                                     rng.integers(0, 2**63, 300, dtype=np.uint64)]),
                np.array([np.iinfo(np.uint64).max], dtype=np.uint64)):
        assert (_isin(big, few) == np.isin(big, few)).all()
    digests = np.frombuffer(rng.bytes(16 * 50_000), dtype="S16")
    # same first 8 bytes, different last 8: the pre-filter alone would call them equal
    twin = np.frombuffer(digests[3].ljust(16, b"\0")[:8] + b"\x01" * 8, dtype="S16")
    copies = np.concatenate([twin, digests[:5], twin, digests[:5]])  # b with repeated first halves
    for probe in (digests[rng.integers(0, digests.size, 40)], twin, digests, copies):
        assert (_isin16(digests, probe) == np.isin(digests, probe)).all()
        assert (_isin16(probe, digests) == np.isin(probe, digests)).all()


def test_index_build_with_a_database_records_the_build(tmp_path):
    """issue 15 item 24: the record's column was named `at`, which DuckDB 2.0 rejects (a parser error, exit 1)."""
    import duckdb

    repo = make_repo(tmp_path, "triage-clean")
    db = tmp_path / "gate.duckdb"
    index = tmp_path / "idx"
    res = run_gate("index", "build", str(repo / "data"), "-c", str(CONTRACTS / "triage.yaml"), "--index",
                   str(index), "--db", str(db))
    assert res.returncode == 0, res.stderr
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute("SELECT index_dir, action, rows, recorded_at IS NOT NULL FROM dataset_indexes").fetchall()
    assert rows == [(str(index), "build", 540, True)]


def test_an_index_of_another_normal_form_is_refused(tmp_path, monkeypatch):
    """Index digests are of normal forms: after normalize() changed (exact and near duplicates share one normaliser
    now), an old index would compare digests of different texts and miss or invent duplicates, so it is refused."""
    from gate.contract import load_contract
    from gate.errors import GateError
    from gate.index import parts
    from gate.index.build import neardup_config

    contract = load_contract(CONTRACTS / "triage.yaml")
    config = neardup_config(contract)
    built = parts.compat_key(contract, config)
    monkeypatch.setattr(parts, "NORMAL_FORM_VERSION", parts.NORMAL_FORM_VERSION + 1)
    now = parts.compat_key(contract, config)
    assert now != built
    with pytest.raises(GateError, match="rebuild"):
        parts.check_compatible({"compat": built}, now, tmp_path)
