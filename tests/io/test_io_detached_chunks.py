"""Local workers read JSONL chunks by offset instead of receiving them through a pipe: same bytes, or a clear error."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from gate.errors import InputError
from gate.io.dataset import SplitStats, discover, iter_chunks


def _chunks(path: Path, chunk_bytes: int = 64):
    src = discover(path)[0]
    return list(iter_chunks(src, SplitStats(src.split, src.display, src.format), chunk_bytes=chunk_bytes))


@pytest.mark.parametrize("bom", [False, True])
def test_detached_chunks_read_back_the_same_bytes(tmp_path, bom):
    lines = [f'{{"id": "r{i}", "messages": [{{"role": "user", "content": "{"x" * (i % 37)}"}}]}}' for i in range(200)]
    body = "\n".join(lines) + "\n\n" + lines[0]  # a blank line and no final newline
    p = tmp_path / "train.jsonl"
    p.write_bytes((b"\xef\xbb\xbf" if bom else b"") + body.encode())
    chunks = _chunks(p)
    assert len(chunks) > 10
    for c in chunks:
        d = c.detached()
        assert d.blob is None and d.nbytes == len(c.blob)
        back = d.attached()
        assert back.blob == c.blob and back.first_row == c.first_row
    assert not chunks[0].blob.startswith(b"\xef\xbb\xbf")


def test_compressed_chunks_keep_their_bytes(tmp_path):
    p = tmp_path / "train.jsonl.gz"
    p.write_bytes(gzip.compress(b'{"a": 1}\n' * 50))
    for c in _chunks(p):
        assert c.detached() is c  # offsets into a compressed file mean nothing


def test_a_file_changed_under_the_worker_is_an_error(tmp_path):
    p = tmp_path / "train.jsonl"
    p.write_bytes(b'{"a": 1}\n' * 50)
    d = _chunks(p)[1].detached()
    p.write_bytes(b'{"b": 2}\n' * 50)
    with pytest.raises(InputError, match="file changed while it was being checked") as exc:
        d.attached()
    assert str(p) in str(exc.value)
