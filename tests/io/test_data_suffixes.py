"""One list of data suffixes (gate.io.dataset.SPLIT_FORMATS): every suffix the reader accepts is data to
`--changed-since` too (issue 15 item 4: `.ndjson` and `.json` were not, so a faulty change passed unchecked)."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
from pathlib import Path

import pytest

from gate.io.dataset import DATA_SUFFIXES, SPLIT_FORMATS, discover, is_dataset_file
from tests.conftest import CONTRACTS, gate_inprocess, triage_row

AWS = "AKIA" + "QX7RZ2M4PLK9WB3T"


def _git(cwd: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.invalid", "GIT_CONFIG_GLOBAL": "/dev/null"}
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def _write(path: Path, rows: list[dict]) -> None:
    """Rows in the format the reader reads `path` as (a suffix with no writer here fails the test: add one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(r) + "\n" for r in rows).encode()
    fmt = SPLIT_FORMATS[next(s for s in sorted(SPLIT_FORMATS, key=len, reverse=True) if path.name.endswith(s))]
    if fmt == "jsonl":
        path.write_bytes(text)
    elif fmt == "jsonl.gz":
        path.write_bytes(gzip.compress(text, mtime=0))
    elif fmt == "jsonl.zst":
        import zstandard

        path.write_bytes(zstandard.ZstdCompressor().compress(text))
    elif fmt == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(rows), path)
    else:
        raise AssertionError(f"no writer for format {fmt}")


def _rows(n: int) -> list[dict]:
    return [triage_row(i, f"ticket {i} about a broken widget number {i}") for i in range(n)]


@pytest.mark.parametrize("suffix", list(SPLIT_FORMATS))
def test_every_reader_suffix_is_data_to_changed_since(tmp_path, suffix):
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    # plain .json is a split only as a single-file dataset (in a directory it is metadata, for the reader too)
    single = suffix == ".json"
    dataset = repo / "data" / f"train{suffix}" if single else repo / "data"
    split_file = dataset if single else dataset / f"train{suffix}"
    rows = _rows(6)
    _write(split_file, rows)
    assert [s.path for s in discover(dataset)] == [split_file]  # the reader takes it ...
    assert is_dataset_file(split_file, single_file=single)  # ... and so does the pull-request gate
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    leaky = triage_row(90, f"my key is {AWS} please rotate it")
    _write(split_file, [*rows, {**rows[2], "id": "tri-000099"}, leaky])  # a duplicate row and an AWS key
    _git(repo, "commit", "-q", "-am", "pr")
    code, out = gate_inprocess("check", str(dataset), "-c", str(CONTRACTS / "triage.yaml"), "--changed-since",
                               "HEAD~1", "--checks", "exact_duplicate,secret", "--no-db", "-q",
                               "-o", str(tmp_path / "rep"))
    assert code == 100, out
    report = json.loads((tmp_path / "rep" / "report.json").read_text())
    assert {f["check"] for f in report["findings"]} == {"exact_duplicate", "secret"}
    assert AWS not in out


def test_hugging_face_files_are_data_and_directory_metadata_is_not(tmp_path):
    assert all(is_dataset_file(tmp_path / f"train{s}") for s in DATA_SUFFIXES if s != ".json")
    assert is_dataset_file(tmp_path / "train" / "data-00000-of-00001.arrow")
    assert is_dataset_file(tmp_path / "dataset_dict.json") and is_dataset_file(tmp_path / "state.json")
    assert not is_dataset_file(tmp_path / "FAULTS.json") and not is_dataset_file(tmp_path / "notes.md")
    assert is_dataset_file(tmp_path / "train.json", single_file=True)
    assert not is_dataset_file(tmp_path / "train.csv", single_file=True)
