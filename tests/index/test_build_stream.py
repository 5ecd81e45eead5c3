"""`gate index build` streams its input (issue 19 section 3): blocks, slices and row groups far smaller than the
data must give the same index as reading everything at once, byte for byte in every entry and group."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import FIXTURES

TRICKY = (b"\xef\xbb\xbf" + b'{"a": 1}\r\n' + b"\n  \n" + b'   {"b": 2}  \n' + b"x" * 700 + b"\n\t\n"
          + b'{"c": 3}\r\n' * 5 + b'{"last": true}')


def _split(tmp_path: Path, blob: bytes, fmt: str = "jsonl") -> object:
    from gate.io.dataset import discover

    d = tmp_path / "ds"
    d.mkdir(exist_ok=True)
    path = d / f"train.{fmt}"
    path.write_bytes(gzip.compress(blob) if fmt == "jsonl.gz" else blob)
    return next(s for s in discover(str(d)) if s.split == "train")


@pytest.mark.parametrize("block", [1, 2, 7, 64, 701, 1 << 20])
@pytest.mark.parametrize("fmt", ["jsonl", "jsonl.gz"])
def test_line_blocks_equal_line_table(tmp_path, monkeypatch, block, fmt):
    """Every block size (down to one byte, lines longer than a block, BOM, CRLF, blank and whitespace-only lines,
    no final newline) finds the same lines, numbers and digests as the whole-file `line_table`."""
    from gate.index import lines

    monkeypatch.setattr(lines, "BLOCK_BYTES", block)
    src = _split(tmp_path, TRICKY, fmt)
    whole = lines.line_table(TRICKY, "jsonl", "x")
    blocks = list(lines.line_blocks(src))
    assert np.array_equal(np.concatenate([b.lines for b in blocks]), whole.lines)
    assert b"".join(b.digests.tobytes() for b in blocks) == b"".join(whole.digests)
    got = [b.line_bytes(k) for b in blocks for k in range(len(b))]
    assert got == [whole.line_bytes(k) for k in range(len(whole))]
    starts = np.concatenate([b.starts + b.offset for b in blocks])
    assert np.array_equal(starts, whole.starts)


def _dataset(tmp_path: Path) -> Path:
    """The faulty triage fixture (near duplicates, leakage, exact copies), one split gzip-compressed."""
    d = tmp_path / "data"
    d.mkdir()
    for f in (FIXTURES / "triage-faulty").glob("*.jsonl"):
        blob = f.read_bytes()
        if f.stem == "test":
            (d / "test.jsonl.gz").write_bytes(gzip.compress(blob))
        else:
            (d / f.name).write_bytes(blob.replace(b"\n", b"\r\n", 3))  # a few CRLF lines too
    return d


def _index(index: Path) -> tuple[object, list[dict]]:
    import pyarrow.parquet as pq

    man = json.loads((index / "manifest.json").read_text())
    assert man["parts"] == ["part-000000.parquet"]
    return pq.read_table(index / man["parts"][0]), pq.read_table(index / man["groups"]).to_pylist()


@pytest.mark.forks
def test_chunked_build_equals_whole_build(tmp_path, monkeypatch, triage_contract):
    """Blocks of 2 KB, slices of 7 rows, row groups of 13 entries and two forked workers give exactly the entries
    and groups of a build that holds everything at once, and those entries are what `features` computes from
    the whole file in one call (the reference the incremental check relies on)."""
    import pyarrow.parquet as pq

    from gate.data.neardup import neardup_config
    from gate.index import build, lines, parts
    from gate.index.features import features, parse_rows
    from gate.io.dataset import discover

    data = _dataset(tmp_path)
    build.build_index(str(data), triage_contract, str(tmp_path / "whole"), workers=1)
    monkeypatch.setattr(lines, "BLOCK_BYTES", 2048)
    monkeypatch.setattr(build, "SLICE_ROWS", 7)
    monkeypatch.setattr(parts, "ROW_GROUP_ROWS", 13)
    out = build.build_index(str(data), triage_contract, str(tmp_path / "chunked"), workers=2)
    assert out["clusters"] > 0
    whole, whole_groups = _index(tmp_path / "whole")
    chunked, chunked_groups = _index(tmp_path / "chunked")
    assert pq.ParquetFile(tmp_path / "chunked" / "part-000000.parquet").metadata.num_row_groups > 1
    assert chunked.equals(whole)
    assert chunked_groups == whole_groups
    assert out["rows"] == whole.num_rows

    config = neardup_config(triage_contract)
    splits, digests, rows = [], [], []
    for src in discover(str(data)):
        t = lines.current_lines(src)
        items = [(int(t.lines[k]), t.line_bytes(k)) for k in range(len(t))]
        rows += [r for _, r in parse_rows(src.display, items)]
        splits += [src.split] * len(t)
        digests += t.digests
    reference = parts.entries_table(splits, digests, features(rows, triage_contract, config))
    assert chunked.equals(reference)


def test_bad_line_in_a_later_block_leaves_nothing(tmp_path, monkeypatch, triage_contract):
    """A malformed row far into the file: one-line error naming file and line, no index, no temporary files."""
    from gate.errors import GateError
    from gate.index import build, lines

    data = tmp_path / "data"
    data.mkdir()
    good = (FIXTURES / "triage-clean" / "train.jsonl").read_bytes().splitlines(keepends=True)
    (data / "train.jsonl").write_bytes(b"".join(good[:40]) + b'{"broken": \n' + b"".join(good[40:]))
    monkeypatch.setattr(lines, "BLOCK_BYTES", 1024)
    monkeypatch.setattr(build, "SLICE_ROWS", 5)
    with pytest.raises(GateError) as err:
        build.build_index(str(data), triage_contract, str(tmp_path / "idx" / "index"), workers=1)
    assert "41" in str(err.value) and "train.jsonl" in str(err.value)
    assert not (tmp_path / "idx" / "index").exists()
    assert [p.name for p in (tmp_path / "idx").iterdir() if not p.name.endswith(".lock")] == []


@pytest.mark.parametrize("block", [3, 64, 1 << 20])
@pytest.mark.parametrize("fmt", ["jsonl", "jsonl.gz"])
def test_streamed_lines_equal_line_table(tmp_path, monkeypatch, block, fmt):
    """`gate check --base` reads splits as StreamedLines: the same numbers, spans, digests, file sha256 and git
    prefix id as the whole-file `line_table`, and `line_bytes` reads the same bytes back from disk."""
    from gate.index import lines

    monkeypatch.setattr(lines, "BLOCK_BYTES", block)
    src = _split(tmp_path, TRICKY, fmt)
    raw = src.path.read_bytes()
    prefix = ("sha1", 40) if fmt == "jsonl" else None
    whole = lines.line_table(raw, fmt, "x", prefix)
    got = lines.StreamedLines(src, prefix)
    assert len(got) == len(whole)
    assert np.array_equal(got.lines, whole.lines)
    assert np.array_equal(got.ends, whole.ends)
    assert list(got.digests) == whole.digests and got.digests[-1] == whole.digests[-1]
    assert [got.line_bytes(k) for k in range(len(got))] == [whole.line_bytes(k) for k in range(len(whole))]
    assert got.sha256 == whole.sha256
    assert got.git_prefix_id == whole.git_prefix_id == ("" if prefix is None else
                                                        lines._git_object_id("sha1", memoryview(raw)[:40]))
    too_long = lines.StreamedLines(src, ("sha1", len(raw) + 1))  # a base longer than the file: no prefix id
    assert too_long.git_prefix_id == ""


def test_streamed_digests_keep_trailing_nul_bytes():
    """A digest ending in NUL bytes stays 16 bytes long (numpy's 'S16' items would strip them)."""
    from gate.index.lines import _Digests

    arr = np.frombuffer(b"a" * 14 + b"\0\0" + b"b" * 16, dtype="S16")
    d = _Digests(arr)
    assert d[0] == b"a" * 14 + b"\0\0" and d[-2] == d[0] and list(d)[0] == d[0] and len(d) == 2
