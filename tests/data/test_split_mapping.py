"""Issue 33 item 5: a data file whose name is no known split is never silently a split of its own.

An evaluation item copied into `train_more.ndjson` passed `contamination` (it read only `train`/`training`) while the
same row in `train.jsonl` failed, and copies of base rows in the new file were blamed on the old rows (scrub would
have deleted the originals). Now an unmapped file is refused in one line naming it, a contract `splits` rule maps it
(`splits: {train: ["train*"]}`), contamination reads the mapped train files, and leakage blames the new file's rows.
The PR path (`--base`, an incremental check) refuses and maps the same way.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import gate_inprocess, triage_row, write_jsonl

CHECKS = "contamination,leakage,exact_duplicate"


def _dataset(root: Path) -> Path:
    """train.jsonl and test.jsonl as the base has them, and a new train_more.ndjson holding a copy of a test item
    (row 2) and of a train row (row 3)."""
    data = root / "ds"
    train = [triage_row(i, f"my parcel number {i} never arrived at the depot in town {i}") for i in range(6)]
    test = [triage_row(100 + i, f"the login page for account {i} loops back to the start every single time")
            for i in range(3)]
    write_jsonl(data / "train.jsonl", train)
    write_jsonl(data / "test.jsonl", test)
    new = [triage_row(50, "a brand new question about refunds for an order placed on monday"),
           {**test[1], "id": "tri-000051"}, {**train[4], "id": "tri-000052"}]
    write_jsonl(data / "train_more.ndjson", new)
    return data


def _contract(root: Path, splits: str = "") -> Path:
    path = root / "contract.yaml"
    path.write_text(f"name: c\nversion: 1\n{splits}")
    return path


def _check(data: Path, contract: Path, out: Path, *extra: str):
    return gate_inprocess("check", str(data), "-c", str(contract), "--checks", CHECKS, "--no-db", "-o", str(out),
                          "-q", *extra, split=True)


def _findings(out: Path) -> list[tuple[str, str, int]]:
    report = json.loads((out / "report.json").read_text())
    return sorted((f["check"], f["split"], f["row"]) for f in report["findings"])


def test_an_unmapped_file_is_refused_in_one_line_naming_it(tmp_path):
    data = _dataset(tmp_path)
    res = _check(data, _contract(tmp_path), tmp_path / "r")
    assert res.returncode == 1, res.stdout + res.stderr
    [line] = res.stderr.strip().splitlines()
    assert "train_more.ndjson" in line and "'train_more' is not a known split" in line
    assert 'splits: {train: ["train_more*"]}' in line and "Traceback" not in res.stderr


def test_a_mapped_file_is_read_as_train_and_its_copies_are_its_findings(tmp_path):
    data = _dataset(tmp_path)
    res = _check(data, _contract(tmp_path, 'splits: {train: ["train*"]}\n'), tmp_path / "r")
    assert res.returncode == 100, res.stdout + res.stderr
    found = _findings(tmp_path / "r")
    # the copied test item: leakage (test is more protected); the copied train row: blamed on the new file's row 3
    assert ("leakage", "train_more", 2) in found and ("leakage", "train_more", 3) in found
    assert not [f for f in found if f[1] == "train"], found
    # contamination reads the mapped file (the test split's copy is leakage's finding when leakage runs)
    res = gate_inprocess("check", str(data), "-c", str(_contract(tmp_path, 'splits: {train: ["train*"]}\n')),
                         "--checks", "contamination", "--no-db", "-o", str(tmp_path / "c"), "-q", split=True)
    assert res.returncode == 100 and _findings(tmp_path / "c") == [("contamination", "train_more", 2)]


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def _repo_adding_the_new_file(tmp_path: Path, *, commit: bool) -> tuple[Path, Path]:
    """A git repository whose `main` has the dataset without train_more.ndjson, and the new file added after it
    (committed on a branch `pr`, or left in the work tree): (repo, dataset)."""
    repo = tmp_path / "repo"
    data = _dataset(repo)
    new = (data / "train_more.ndjson").read_bytes()
    (data / "train_more.ndjson").unlink()
    ident = ("-c", "user.email=ci@example.org", "-c", "user.name=ci")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, *ident, "add", "-A")
    _git(repo, *ident, "commit", "-qm", "base")
    if commit:
        _git(repo, "checkout", "-q", "-b", "pr")
    (data / "train_more.ndjson").write_bytes(new)
    if commit:
        _git(repo, *ident, "add", "-A")
        _git(repo, *ident, "commit", "-qm", "pr: a new data file")
    return repo, data


@pytest.mark.parametrize("flag", ["--base", "--changed-since"])
def test_the_pr_path_refuses_and_maps_the_same_way(tmp_path, flag):
    _, data = _repo_adding_the_new_file(tmp_path, commit=True)
    base = (flag, "main", *(("--index", str(tmp_path / "idx")) if flag == "--base" else ()))
    res = _check(data, _contract(tmp_path), tmp_path / "r", *base)
    assert res.returncode == 1 and "train_more.ndjson" in res.stderr and "not a known split" in res.stderr, \
        res.stdout + res.stderr
    res = _check(data, _contract(tmp_path, 'splits: {train: ["train*"]}\n'), tmp_path / "r2", *base)
    assert res.returncode == 100, res.stdout + res.stderr
    found = _findings(tmp_path / "r2")
    assert ("leakage", "train_more", 2) in found and ("leakage", "train_more", 3) in found
    assert not [f for f in found if f[1] == "train"], found


def test_the_pr_paths_refusal_names_the_file_as_the_repository_has_it(tmp_path, monkeypatch):
    """The action runs `gate check data/triage --changed-since main` in the checkout and quotes the error line in
    the pull request's comment: it named the file by the runner's absolute path (the changed datasets are resolved
    to find them), not as the repository has it."""
    repo, _ = _repo_adding_the_new_file(tmp_path, commit=False)
    monkeypatch.chdir(repo)
    res = gate_inprocess("check", "ds", "-c", str(_contract(tmp_path)), "--checks", CHECKS, "--no-db", "-o",
                         str(tmp_path / "r"), "-q", "--changed-since", "main", split=True)
    [line] = res.stderr.strip().splitlines()
    assert res.returncode == 1 and line.startswith("gate: error: ds/train_more.ndjson: "), line
    assert str(tmp_path) not in line


def test_hugging_face_shard_names_are_their_split(tmp_path):
    """`train-00000-of-00002.parquet` is how the Hub names a train shard: it is train (read by contamination), not
    refused and not a split of its own; a shard of an unknown split is still refused."""
    from gate.contract import load_contract

    c = load_contract(_contract(tmp_path))
    assert c.split_kind("train-00000-of-00002") == "train" and c.split_kind("test-00001-of-00002") == "test"
    assert c.split_kind("extra-00000-of-00001") is None and c.split_kind("train-0-of-1") is None
