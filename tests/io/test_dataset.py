import gzip
import json

import pytest
import zstandard

from gate.errors import InputError
from gate.io.dataset import SplitStats, discover, iter_chunks
from gate.io.rows import parse_chunk
from tests.conftest import triage_row, write_jsonl


def read_all(path, chunk_bytes=1 << 20):
    out = {}
    for src in discover(path):
        st = SplitStats(src.split, src.display, src.format)
        rows = []
        for chunk in iter_chunks(src, st, chunk_bytes=chunk_bytes):
            rows.extend(parse_chunk(chunk))
        out[src.split] = (rows, st)
    return out


def test_directory_splits_are_ordered_train_val_test(tmp_path):
    for split in ("test", "val", "train", "extra"):
        write_jsonl(tmp_path / f"{split}.jsonl", [triage_row(1)])
    assert [s.split for s in discover(tmp_path)] == ["train", "val", "test", "extra"]


def test_line_numbers_survive_tiny_chunks_blank_lines_and_bom(tmp_path):
    lines = [json.dumps(triage_row(i)) for i in range(50)]
    lines.insert(10, "")
    lines.insert(20, "   ")
    (tmp_path / "train.jsonl").write_bytes(b"\xef\xbb\xbf" + ("\n".join(lines) + "\n").encode())
    rows, st = read_all(tmp_path, chunk_bytes=300)["train"]
    assert len(rows) == 50
    # every row's id tells its index; the line number must be index + 1 plus the blank lines before it
    for line, row in rows:
        i = int(row["id"][4:])
        expected = i + 1 + (1 if i >= 10 else 0) + (1 if i >= 19 else 0)
        assert line == expected, (line, row["id"])
    assert st.bytes == (tmp_path / "train.jsonl").stat().st_size
    assert len(st.sha256) == 64


@pytest.mark.parametrize("suffix", [".jsonl.gz", ".jsonl.zst", ".parquet"])
def test_compressed_and_columnar_formats_read_the_same_rows(tmp_path, suffix):
    rows = [triage_row(i) for i in range(30)]
    rows[3]["messages"].insert(2, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "lookup_order", "arguments": "{}"}}]})
    payload = "".join(json.dumps(r) + "\n" for r in rows).encode()
    path = tmp_path / f"train{suffix}"
    if suffix == ".jsonl.gz":
        path.write_bytes(gzip.compress(payload))
    elif suffix == ".jsonl.zst":
        path.write_bytes(zstandard.ZstdCompressor().compress(payload))
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(rows), path)
    got, st = read_all(tmp_path, chunk_bytes=500)["train"]
    assert [r for _, r in got] == rows
    assert [n for n, _ in got] == list(range(1, 31))


def test_hugging_face_save_to_disk_directory(tmp_path):
    datasets = pytest.importorskip("datasets")
    rows = [triage_row(i) for i in range(12)]
    dd = datasets.DatasetDict({"train": datasets.Dataset.from_list(rows[:8]),
                               "test": datasets.Dataset.from_list(rows[8:])})
    dd.save_to_disk(str(tmp_path / "hf"))
    got = read_all(tmp_path / "hf")
    assert list(got) == ["train", "test"]
    assert [r for _, r in got["train"][0]] == rows[:8]
    assert got["test"][0][0][0] == 1


def test_single_file_is_one_split(tmp_path):
    write_jsonl(tmp_path / "mydata.jsonl", [triage_row(1)])
    assert [(s.split, s.format) for s in discover(tmp_path / "mydata.jsonl")] == [("mydata", "jsonl")]


@pytest.mark.parametrize(("content", "message", "line"), [
    (b'{"a": 1}\n{"a": 2,,}\n', "malformed JSON", 2),
    (b'{"a": 1}\n{"a": "\xff\xfe"}\n', "invalid UTF-8", 2),
    (b'{"a": 1}\n[1, 2]\n', "row is an array", 2),
    (b'"just a string"\n', "row is a string", 1),
    (b"", "file is empty", None),
    (b"\n\n  \n", "file is empty", None),
])
def test_bad_input_names_file_and_line(tmp_path, content, message, line):
    (tmp_path / "train.jsonl").write_bytes(content)
    with pytest.raises(InputError) as err:
        read_all(tmp_path)
    assert message in str(err.value)
    assert err.value.file and err.value.file.endswith("train.jsonl")
    assert err.value.line == line


def test_line_longer_than_limit_is_an_error(tmp_path):
    (tmp_path / "train.jsonl").write_bytes(b'{"a": "' + b"x" * 5000 + b'"}\n')
    src = discover(tmp_path)[0]
    with pytest.raises(InputError, match="longer than"):
        list(iter_chunks(src, SplitStats("train", "", "jsonl"), chunk_bytes=1000, max_line_bytes=2000))


def test_missing_path_and_no_splits(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        discover(tmp_path / "nope")
    (tmp_path / "notes.txt").write_text("hi")
    with pytest.raises(InputError, match="no split files"):
        discover(tmp_path)
