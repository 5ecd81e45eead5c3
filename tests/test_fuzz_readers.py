"""Property-based fuzzing of the dataset readers (gate/io): every input is either read correctly or refused
with one clear line naming the file (and the line where there is one); never a traceback.

Runs in-process against the real readers; GATE_FUZZ_EXAMPLES sets the budget (see tests/fuzzkit.py).
"""

from __future__ import annotations

import gzip
import io
import json
import random
import tempfile
from pathlib import Path

import pytest
import zstandard
from hypothesis import given
from hypothesis import strategies as st

from gate.errors import GateError
from gate.io.dataset import SplitStats, discover, iter_chunks
from gate.io.rows import parse_chunk
from tests import fuzzkit as fk
from tests.fuzzkit import assert_clear_error, hypothesis_test, json_values

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


def check_jsonl(body: bytes, lines: list[bytes], valid: bool | int, name: str, chunk_bytes: int,
                max_line_bytes: int) -> str:
    """`valid`: True for a file of valid rows, an int for the first (certainly) bad line, else False."""
    path = WORK / name
    path.write_bytes(body)
    try:
        rows = read_all(path, chunk_bytes=chunk_bytes, max_line_bytes=max_line_bytes)
    except GateError as exc:
        assert_clear_error(exc, path)
        if max_line_bytes == 1 << 20:  # (a 64-byte limit refuses long lines first)
            assert not (valid is True and any(line.strip() for line in lines)), str(exc)
            if valid is not True and valid is not False:
                assert exc.line == valid, f"the error names line {exc.line}, the first bad line is {valid}: {exc}"
        return "refused"
    assert valid is True or valid is False, f"line {valid} is not a valid row but the file was read"
    assert rows, "a file read without error must have rows"
    assert all(isinstance(r, dict) for _, r in rows)
    if valid is True:  # the reader returns exactly the rows and line numbers that were written
        assert rows == _expected(lines)
    assert path.read_bytes() == body
    return "read"


@hypothesis_test("readers.jsonl")
@given(jsonl_files(), st.sampled_from(["train.jsonl", "data.json", "x.ndjson"]),
       st.sampled_from([7, 64, 4096, 4 << 20]), st.sampled_from([64, 1 << 20]))
def test_jsonl_read_or_refused_clearly(file, name, chunk_bytes, max_line_bytes):
    body, lines, valid = file
    check_jsonl(body, lines, valid, name, chunk_bytes, max_line_bytes)


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


def check_compressed(fmt: str, packed: bytes, plain: bytes | None, chunk_bytes: int) -> str:
    path = WORK / f"train.jsonl.{fmt}"
    path.write_bytes(packed)
    try:
        rows = read_all(path, chunk_bytes=chunk_bytes)
    except GateError as exc:
        assert_clear_error(exc, path)
        if plain is not None:
            assert not plain.replace(b"\xef\xbb\xbf", b"", 1).strip(), str(exc)
        return "refused"
    assert all(isinstance(r, dict) for _, r in rows)
    if plain is not None:
        text = plain[3:] if plain.startswith(b"\xef\xbb\xbf") else plain
        assert rows == [(i, json.loads(line)) for i, line in enumerate(text.split(b"\n"), 1) if line.strip()]
    return "read"


@hypothesis_test("readers.compressed")
@given(compressed(), st.sampled_from([7, 4096, 4 << 20]))
def test_compressed_jsonl_read_or_refused_clearly(case, chunk_bytes):
    check_compressed(*case, chunk_bytes)


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


def check_parquet(raw: bytes, n: int | None) -> str:
    path = WORK / "train.parquet"
    path.write_bytes(raw)
    try:
        rows = read_all(path)
    except GateError as exc:
        assert_clear_error(exc, path, max_len=600)
        assert n in (None, 0), str(exc)
        return "refused"
    assert all(isinstance(r, dict) for _, r in rows)
    if n is not None:
        assert [i for i, _ in rows] == list(range(1, n + 1))
    return "read"


@hypothesis_test("readers.parquet")
@given(parquet_files())
def test_parquet_read_or_refused_clearly(case):
    check_parquet(*case)


def check_hf_dict(d: Path, raw: bytes) -> str:
    """A DatasetDict directory whose dataset_dict.json may be broken: refused on discovery, nothing else read."""
    (d / "dataset_dict.json").write_bytes(raw)
    try:
        sources = discover(d)
    except GateError as exc:
        assert_clear_error(exc, d / "dataset_dict.json")
        return "refused"
    for s in sources:  # whatever was accepted names a split directory inside the dataset
        assert isinstance(s.split, str) and s.path.parent == d
    return "read"


@hypothesis_test("readers.hf_dict")
@given(st.binary(max_size=80) | json_values.map(lambda v: json.dumps(v).encode())
       | st.lists(st.text(max_size=12) | st.integers(), max_size=3).map(lambda s: json.dumps({"splits": s}).encode()))
def test_hf_dataset_dict_refused_clearly(raw):
    check_hf_dict(Path(tempfile.mkdtemp(dir=WORK)), raw)


# ---------------------------------------------------------------------------------------------------------------
# the volume lane: the same oracles on cases from seeded generators (see tests/fuzzkit.py)

fk.register("readers.jsonl.volume", "readers.compressed.volume", "readers.parquet.volume", "readers.hf_dict.volume")
ROOT = Path(__file__).resolve().parents[1]
# real rows of the four fixture datasets: chat records with tools, unicode and planted faults
FIXTURE_LINES = [line for p in sorted((ROOT / "fixtures" / "datasets").glob("*/*.jsonl"))
                 for line in p.read_bytes().splitlines()[:40] if line.strip()]
GOOD_KINDS = {"good": 6, "fixture": 4, "blank": 1}
BAD_KINDS = {"scalar": 1, "bytes": 1, "bigint": 1, "nan": 1, "surrogate": 1, "control": 1, "deep": 1,
             "truncated": 2}  # never a valid row
ODD_KINDS = {"escaped_surrogate": 1, "duplicate_keys": 1, "bom": 1, "shallow": 1, "big_int": 1,
             "mutated": 3, "mutated_fixture": 3}  # the reader decides


def r_jsonl_line(rng: random.Random, kinds: dict[str, int]) -> tuple[bytes, bool | None]:
    """One line of a JSONL file and whether it is a valid row (None: unknown, the reader decides)."""
    kind = rng.choices(list(kinds), weights=list(kinds.values()))[0]
    if kind == "good":
        row = {fk.rtext(rng, 10): fk.rjson(rng, 1) for _ in range(rng.randrange(6))}
        return json.dumps(row, ensure_ascii=rng.random() < 0.5).encode(), True
    if kind == "fixture":
        return rng.choice(FIXTURE_LINES), True
    if kind == "blank":
        return rng.choice([b"", b" ", b"\t", b"  \r"]), True
    if kind == "scalar":
        return json.dumps(rng.choice([None, True, 0, -1.5, "x", [], [1, {}], ""])).encode(), False
    if kind == "bytes":  # with an invalid UTF-8 byte somewhere, so never JSON
        raw = bytearray(rng.randbytes(rng.randint(0, 40)).replace(b"\n", b" "))
        raw.insert(rng.randint(0, len(raw)), 0xFF)
        return bytes(raw), False
    if kind == "bigint":  # beyond a double's range, beyond 4,300 digits for Python's int()
        return b'{"n": ' + rng.choice([b"", b"-"]) + b"9" * rng.choice([309, 4301, 6000]) + b"}", False
    if kind == "big_int":  # beyond 64 bits: orjson reads a float (a known limit, docs/SECURITY-AUDIT.md)
        return b'{"n": ' + rng.choice([b"", b"-"]) + b"9" * rng.choice([20, 40, 300]) + b"}", None
    if kind == "nan":
        return rng.choice([b'{"x": NaN}', b'{"x": Infinity}', b'{"x": -Infinity}', b'{"x": 1e999}',
                           b'{"x": -1e400}']), False
    if kind == "surrogate":
        return '{"x": "\ud800"}'.encode("utf-8", "surrogatepass"), False
    if kind == "escaped_surrogate":  # valid JSON grammar, not valid Unicode
        return rng.choice([b'{"x": "\\ud800"}', b'{"\\udfff": 1}', b'{"x": "\\ud83d\\ude00"}']), None
    if kind == "deep":  # deeper than orjson's and Python's recursion limits
        n = rng.choice([1100, 5000])
        return b'{"x": ' + b"[" * n + b"]" * n + b"}", False
    if kind == "shallow":
        n = rng.choice([100, 1000])
        return b'{"x": ' + b"[" * n + b"]" * n + b"}", None
    if kind == "bom":  # a BOM in the middle of a file is not whitespace (at its very start it is dropped)
        return b"\xef\xbb\xbf{}", None
    if kind == "control":  # a raw control character inside a string: not JSON
        return b'{"x": "a' + bytes([rng.choice([0, 1, 9, 13, 27, 31])]) + b'b"}', False
    if kind == "duplicate_keys":
        return b'{"a": 1, "a": ' + rng.choice([b"2", b"null", b"[]"]) + b"}", None
    base = rng.choice(FIXTURE_LINES) if kind == "mutated_fixture" or rng.random() < 0.3 else \
        json.dumps({fk.rtext(rng, 6): fk.rjson(rng, 1) for _ in range(rng.randrange(1, 5))}).encode()
    if kind == "truncated":  # every generated line ends with the object's closing brace
        return base[: rng.randrange(len(base))] or b"{", False
    return fk.rmutate_bytes(base, rng).replace(b"\n", b" ") or b"{", None  # may or may not still be valid


def r_jsonl_file(rng: random.Random) -> tuple[bytes, list[bytes], bool | int]:
    """A file of valid lines; most files also get one to three broken or odd ones. The third item is True for
    an all-valid file, else the line number the reader must name when that is certain, else False."""
    lines = [r_jsonl_line(rng, GOOD_KINDS) for _ in range(rng.randrange(9))]
    if rng.random() < 0.65:
        for _ in range(rng.randint(1, 3)):
            bad = r_jsonl_line(rng, BAD_KINDS if rng.random() < 0.6 else ODD_KINDS)
            lines.insert(rng.randint(0, len(lines)), bad)
    sep = rng.choice([b"\n", b"\r\n"])
    body = sep.join(line for line, _ in lines) + (sep if rng.random() < 0.5 else b"")
    if rng.random() < 0.1:
        body = b"\xef\xbb\xbf" + body
    oks = [ok for _, ok in lines]
    if all(ok is True for ok in oks):
        return body, [line for line, _ in lines], True
    first = next(i for i, ok in enumerate(oks) if ok is not True)
    return body, [line for line, _ in lines], first + 1 if oks[first] is False else False


def r_jsonl_case(rng: random.Random) -> tuple:
    body, lines, valid = r_jsonl_file(rng)
    return (body, lines, valid, rng.choice(["train.jsonl", "data.json", "x.ndjson"]),
            rng.choice([7, 64, 4096, 4 << 20]), rng.choice([64, 1 << 20, 1 << 20, 1 << 20]))


def test_jsonl_volume():
    fk.run_volume("readers.jsonl.volume", r_jsonl_case, lambda c: check_jsonl(*c), require=("read", "refused"))


def _pack(fmt: str, body: bytes) -> bytes:
    return gzip.compress(body, compresslevel=1) if fmt == "gz" else zstandard.ZstdCompressor(level=1).compress(body)


def r_compressed_case(rng: random.Random) -> tuple:
    body, _, valid = r_jsonl_file(rng)
    fmt = rng.choice(["gz", "zst"])
    how = rng.choice(["intact", "intact", "truncated", "damaged", "garbage", "concatenated", "trailing", "empty"])
    if how == "concatenated" and body and not body.endswith(b"\n"):
        body += b"\n"
    packed = _pack(fmt, body)
    if how == "truncated":
        packed = packed[: rng.randrange(len(packed))]
    elif how == "damaged":
        packed = fk.rmutate_bytes(packed, rng, max_edits=2)
    elif how == "garbage":
        packed = rng.randbytes(rng.randrange(65))
    elif how == "concatenated":  # two members / frames: both must be read
        packed += _pack(fmt, b'{"tail": 1}\n')
        body += b'{"tail": 1}\n'
    elif how == "trailing":  # bytes after the last member / frame
        packed += rng.choice([b"\x00" * rng.randint(1, 8), rng.randbytes(rng.randint(1, 12))])
    elif how == "empty":
        packed = _pack(fmt, b"")
    plain = body if how in ("intact", "concatenated") and valid is True else None
    return fmt, packed, plain, rng.choice([1, 7, 4096, 4 << 20])


def test_compressed_volume():
    fk.run_volume("readers.compressed.volume", r_compressed_case, lambda c: check_compressed(*c),
                  require=("read", "refused"))


def _r_column(rng: random.Random, kind: str, n: int) -> list:
    def one() -> object:
        if rng.random() < 0.15:
            return None
        if kind == "int":
            return rng.choice(fk.EDGE_INTS[:-1]) if rng.random() < 0.3 else rng.randrange(-10**6, 10**6)
        if kind == "float":
            return rng.choice([float("nan"), float("inf"), -0.0, 1e308]) if rng.random() < 0.2 else rng.random()
        if kind == "str":
            return fk.rtext(rng, 16)
        if kind == "bool":
            return rng.random() < 0.5
        if kind == "binary":
            return rng.randbytes(rng.randrange(8))
        if kind == "strlist":
            return [fk.rtext(rng, 5) for _ in range(rng.randrange(4))]
        if kind == "struct":
            return {"a": rng.randrange(9), "b": fk.rtext(rng, 4)}
        return [{"role": rng.choice(["user", "assistant", "tool"]), "content": fk.rtext(rng, 10)}
                for _ in range(rng.randrange(4))]
    return [one() for _ in range(n)]


def r_parquet_case(rng: random.Random) -> tuple[bytes, int | None]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = rng.randrange(7)
    names = rng.sample(["id", "text", "messages", "score", "ok", "tags", "n", "blob", "meta", "é"], rng.randint(1, 4))
    kinds = ["int", "float", "str", "bool", "binary", "strlist", "struct", "messages"]
    table = pa.table({c: _r_column(rng, rng.choice(kinds), n) for c in names})
    buf = io.BytesIO()
    pq.write_table(table, buf, compression=rng.choice(["none", "snappy", "zstd"]),
                   use_dictionary=rng.random() < 0.5, row_group_size=rng.choice([1, 2, 1000]))
    raw = buf.getvalue()
    how = rng.choice(["intact", "intact", "truncated", "damaged", "damaged", "garbage", "empty", "magic_only"])
    if how == "truncated":
        raw = raw[: rng.randrange(len(raw))]
    elif how == "damaged":
        raw = fk.rmutate_bytes(raw, rng)
    elif how == "garbage":
        raw = rng.randbytes(rng.randrange(200))
    elif how == "empty":
        raw = b""
    elif how == "magic_only":
        raw = b"PAR1" + rng.randbytes(rng.randrange(16)) + b"PAR1"
    return raw, n if how == "intact" else None


def test_parquet_volume():
    fk.run_volume("readers.parquet.volume", r_parquet_case, lambda c: check_parquet(*c),
                  require=("read", "refused"))


HF_DIR = Path(tempfile.mkdtemp(dir=WORK))
SPLIT_NAMES = ["train", "test", "validation", "", ".", "..", "../x", "/etc", "a/b", "train\x00", "\u2028", 7, None,
               ["train"], "x" * 300]


def r_hf_dict_case(rng: random.Random) -> bytes:
    r = rng.random()
    if r < 0.2:
        return rng.randbytes(rng.randrange(80))
    if r < 0.4:
        return json.dumps(fk.rjson(rng)).encode()
    splits = [rng.choice(SPLIT_NAMES) if rng.random() < 0.7 else fk.rtext(rng, 8) for _ in range(rng.randrange(4))]
    doc = {"splits": splits} if rng.random() < 0.8 else {"splits": rng.choice([None, "train", {"train": 1}, 3])}
    return fk.rmutate_bytes(json.dumps(doc).encode(), rng, 1) if rng.random() < 0.2 else json.dumps(doc).encode()


def test_hf_dict_volume():
    for name in ("train", "test"):  # two real split directories, so some documents name existing splits
        (HF_DIR / name).mkdir(exist_ok=True)
        (HF_DIR / name / "state.json").write_text("{}")
    fk.run_volume("readers.hf_dict.volume", r_hf_dict_case, lambda raw: check_hf_dict(HF_DIR, raw),
                  require=("read", "refused"))


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
