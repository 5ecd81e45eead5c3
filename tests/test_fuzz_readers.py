"""Property-based fuzzing of the dataset readers (gate/io): every input is either read correctly or refused
with one clear line naming the file (and the line where there is one); never a traceback.

Runs in-process against the real readers; GATE_FUZZ_EXAMPLES sets the budget (see tests/fuzzkit.py).
"""

from __future__ import annotations

import gzip
import io
import json
import tempfile
from pathlib import Path

import pytest
import zstandard
from hypothesis import given
from hypothesis import strategies as st

from gate.errors import GateError
from gate.io.dataset import SplitStats, discover, iter_chunks
from gate.io.rows import parse_chunk
from tests.fuzzkit import assert_clear_error, fuzz_settings, json_values

pytestmark = pytest.mark.fuzz

WORK = Path(tempfile.mkdtemp(prefix="gate-fuzz-readers-"))


def read_all(path: Path, **kw: int) -> list[tuple[int, dict]]:
    rows: list[tuple[int, dict]] = []
    for src in discover(path):
        stats = SplitStats(src.split, str(src.path), src.format)
        for chunk in iter_chunks(src, stats, **kw):
            rows.extend(parse_chunk(chunk))
    return rows


good_rows = st.dictionaries(st.text(max_size=10), json_values, max_size=5)


@st.composite
def jsonl_lines(draw: st.DrawFn) -> tuple[bytes, bool]:
    """One line of a JSONL file and whether it is a valid row."""
    kind = draw(st.sampled_from(["good", "good", "good", "scalar", "bytes", "mutated", "bigint", "nan",
                                 "surrogate", "deep", "bom", "blank", "truncated"]))
    if kind == "good":
        return json.dumps(draw(good_rows), ensure_ascii=draw(st.booleans())).encode(), True
    if kind == "blank":
        return draw(st.sampled_from([b"", b" ", b"\t", b"  \r"])), True
    if kind == "scalar":
        return json.dumps(draw(json_values.filter(lambda v: not isinstance(v, dict)))).encode(), False
    if kind == "bytes":
        return draw(st.binary(min_size=1, max_size=40).filter(lambda b: b"\n" not in b and b.strip())), False
    if kind == "bigint":  # beyond 64 bits for orjson, beyond 4,300 digits for Python's int()
        digits = draw(st.sampled_from([20, 40, 4301, 6000]))
        return b'{"n": ' + b"9" * digits + b"}", False
    if kind == "nan":
        return draw(st.sampled_from([b'{"x": NaN}', b'{"x": Infinity}', b'{"x": -Infinity}', b'{"x": 1e999}'])), False
    if kind == "surrogate":
        return '{"x": "\ud800"}'.encode("utf-8", "surrogatepass"), False
    if kind == "deep":
        n = draw(st.sampled_from([100, 1000, 100_000]))
        return b'{"x": ' + b"[" * n + b"]" * n + b"}", False
    if kind == "bom":  # a BOM in the middle of a file is not whitespace
        return b"\xef\xbb\xbf{}", False
    base = json.dumps(draw(good_rows)).encode()
    if kind == "truncated":
        return base[: draw(st.integers(0, max(0, len(base) - 1)))] or b"{", False
    data = bytearray(base)  # mutated: flip one byte somewhere
    pos = draw(st.integers(0, len(data) - 1))
    data[pos] = draw(st.integers(0, 255).filter(lambda b: b != 10))
    return bytes(data), None  # may or may not still be valid


@st.composite
def jsonl_files(draw: st.DrawFn) -> tuple[bytes, list[bytes], bool]:
    lines = draw(st.lists(jsonl_lines(), min_size=0, max_size=8))
    sep = draw(st.sampled_from([b"\n", b"\r\n"]))
    body = sep.join(line for line, _ in lines) + (sep if draw(st.booleans()) else b"")
    if draw(st.integers(0, 9)) == 0:
        body = b"\xef\xbb\xbf" + body
    valid = all(ok is True for _, ok in lines)
    return body, [line for line, _ in lines], valid


def _expected(lines: list[bytes]) -> list[tuple[int, dict]]:
    return [(i, json.loads(line)) for i, line in enumerate(lines, 1) if line.strip()]


@fuzz_settings(0.25)
@given(jsonl_files(), st.sampled_from(["train.jsonl", "data.json", "x.ndjson"]),
       st.sampled_from([7, 64, 4096, 4 << 20]), st.sampled_from([64, 1 << 20]))
def test_jsonl_read_or_refused_clearly(file, name, chunk_bytes, max_line_bytes):
    body, lines, valid = file
    path = WORK / name
    path.write_bytes(body)
    try:
        rows = read_all(path, chunk_bytes=chunk_bytes, max_line_bytes=max_line_bytes)
    except GateError as exc:
        assert_clear_error(exc, path)
        assert not (valid and max_line_bytes == 1 << 20 and any(line.strip() for line in lines)), str(exc)
        return
    assert rows, "a file read without error must have rows"
    assert all(isinstance(r, dict) for _, r in rows)
    if valid:  # the reader returns exactly the rows and line numbers that were written
        assert rows == _expected(lines)
    assert path.read_bytes() == body


@st.composite
def compressed(draw: st.DrawFn) -> tuple[str, bytes, bytes | None]:
    body, _, valid = draw(jsonl_files())
    fmt = draw(st.sampled_from(["gz", "zst"]))
    how = draw(st.sampled_from(["intact", "truncated", "flipped", "garbage", "concatenated"]))
    if how == "concatenated" and body and not body.endswith(b"\n"):
        body += b"\n"
    packed = gzip.compress(body) if fmt == "gz" else zstandard.ZstdCompressor().compress(body)
    if how == "truncated":
        packed = packed[: draw(st.integers(0, max(0, len(packed) - 1)))]
    elif how == "flipped":
        data = bytearray(packed)
        pos = draw(st.integers(0, len(data) - 1))
        data[pos] ^= draw(st.integers(1, 255))
        packed = bytes(data)
    elif how == "garbage":
        packed = draw(st.binary(max_size=64))
    elif how == "concatenated":  # two members / frames: both must be read
        packed = packed + (gzip.compress(b'{"tail": 1}\n') if fmt == "gz"
                           else zstandard.ZstdCompressor().compress(b'{"tail": 1}\n'))
        body = body + b'{"tail": 1}\n'
    return fmt, packed, body if how in ("intact", "concatenated") and valid else None


@fuzz_settings(0.12)
@given(compressed(), st.sampled_from([7, 4096, 4 << 20]))
def test_compressed_jsonl_read_or_refused_clearly(case, chunk_bytes):
    fmt, packed, plain = case
    path = WORK / f"train.jsonl.{fmt}"
    path.write_bytes(packed)
    try:
        rows = read_all(path, chunk_bytes=chunk_bytes)
    except GateError as exc:
        assert_clear_error(exc, path)
        if plain is not None:
            assert not plain.replace(b"\xef\xbb\xbf", b"", 1).strip(), str(exc)
        return
    assert all(isinstance(r, dict) for _, r in rows)
    if plain is not None:
        text = plain[3:] if plain.startswith(b"\xef\xbb\xbf") else plain
        assert rows == [(i, json.loads(line)) for i, line in enumerate(text.split(b"\n"), 1) if line.strip()]


_COLUMN_TYPES = {
    "int": st.integers(-(2**63), 2**63 - 1),
    "float": st.floats(),
    "str": st.text(max_size=16),
    "bool": st.booleans(),
    "strlist": st.lists(st.text(max_size=5), max_size=3),
    "messages": st.lists(st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant"]),
                                                "content": st.text(max_size=10) | st.none()}), max_size=3),
}


@st.composite
def parquet_files(draw: st.DrawFn) -> tuple[bytes, int | None]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = draw(st.integers(0, 6))
    cols = draw(st.dictionaries(st.sampled_from(["id", "text", "messages", "score", "ok", "tags", "n"]),
                                st.sampled_from(sorted(_COLUMN_TYPES)), min_size=1, max_size=4))
    data = {c: draw(st.lists(_COLUMN_TYPES[t] | st.none(), min_size=n, max_size=n)) for c, t in cols.items()}
    buf = io.BytesIO()
    pq.write_table(pa.table(data), buf)
    raw = buf.getvalue()
    how = draw(st.sampled_from(["intact", "intact", "truncated", "flipped", "garbage", "empty"]))
    if how == "truncated":
        raw = raw[: draw(st.integers(0, len(raw) - 1))]
    elif how == "flipped":
        out = bytearray(raw)
        for _ in range(draw(st.integers(1, 4))):
            pos = draw(st.integers(0, len(out) - 1))
            out[pos] ^= draw(st.integers(1, 255))
        raw = bytes(out)
    elif how == "garbage":
        raw = draw(st.binary(max_size=200))
    elif how == "empty":
        raw = b""
    return raw, n if how == "intact" else None


@fuzz_settings(0.08)
@given(parquet_files())
def test_parquet_read_or_refused_clearly(case):
    raw, n = case
    path = WORK / "train.parquet"
    path.write_bytes(raw)
    try:
        rows = read_all(path)
    except GateError as exc:
        assert_clear_error(exc, path, max_len=600)
        assert n in (None, 0), str(exc)
        return
    assert all(isinstance(r, dict) for _, r in rows)
    if n is not None:
        assert [i for i, _ in rows] == list(range(1, n + 1))


@fuzz_settings(0.02)
@given(st.binary(max_size=80) | json_values.map(lambda v: json.dumps(v).encode())
       | st.lists(st.text(max_size=12) | st.integers(), max_size=3).map(lambda s: json.dumps({"splits": s}).encode()))
def test_hf_dataset_dict_refused_clearly(raw):
    """A DatasetDict directory whose dataset_dict.json is broken: refused on discovery, nothing else read."""
    d = Path(tempfile.mkdtemp(dir=WORK))
    (d / "dataset_dict.json").write_bytes(raw)
    try:
        sources = discover(d)
    except GateError as exc:
        assert_clear_error(exc, d / "dataset_dict.json")
        return
    for s in sources:  # whatever was accepted names a split directory inside the dataset
        assert isinstance(s.split, str) and s.path.parent == d


def test_bom_only_file_is_empty_not_zero_rows(tmp_path):
    path = tmp_path / "train.jsonl"
    path.write_bytes(b"\xef\xbb\xbf")
    with pytest.raises(GateError, match="empty"):
        read_all(path)


def test_huge_integer_names_the_line(tmp_path):
    path = tmp_path / "train.jsonl"
    path.write_bytes(b'{"a": 1}\n{"n": ' + b"7" * 5000 + b"}\n")
    with pytest.raises(GateError) as info:
        read_all(path)
    assert info.value.line == 2 and "number" in str(info.value)


def test_parquet_with_a_column_name_that_is_not_utf8(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(pa.table({"zqxname": ["a", "b"]}), buf)
    path = tmp_path / "train.parquet"
    path.write_bytes(buf.getvalue().replace(b"zqxname", b"zq\xccname"))
    with pytest.raises(GateError) as info:
        read_all(path)
    assert_clear_error(info.value, path)
