"""Turning JSON Lines into rows: strict JSON per line, one clear error per bad line naming file and line.

The one JSONL reader of gate: dataset chunks (`parse_chunk`, inside worker processes, so it only depends on the
chunk it is given), and every other JSONL file gate reads (scorecard suites, evaluation sets, production metrics,
probe rows) through `iter_jsonl` / `iter_jsonl_file` / `parse_line`, so a bad line reads the same everywhere.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

from gate.errors import InputError
from gate.io.dataset import Chunk

Row = tuple[int, dict[str, Any]]  # (1-based line or row number, parsed object)
BOM = b"\xef\xbb\xbf"


def _explain_bad_line(line: bytes, file: str, line_no: int) -> InputError:
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return InputError(f"invalid UTF-8 at byte {exc.start} of the line", file=file, line=line_no)
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return InputError(f"malformed JSON: {exc.msg} at column {exc.colno}", file=file, line=line_no)
    except RecursionError:
        return InputError("malformed JSON: nested too deeply", file=file, line=line_no)
    except ValueError:  # e.g. an integer of more than 4,300 digits (Python's int() limit)
        return InputError("malformed JSON: a number is too large", file=file, line=line_no)
    return InputError("malformed JSON (not accepted by the strict parser: e.g. NaN, lone surrogates or "
                      "numbers out of range)", file=file, line=line_no)


def _kind(value: object) -> str:
    return {list: "an array", str: "a string", int: "a number", float: "a number", bool: "a boolean",
            type(None): "null"}.get(type(value), type(value).__name__)


@functools.lru_cache(maxsize=8)
def _projector(fields: tuple[str, ...]) -> Any:
    import msgspec

    row = msgspec.defstruct("Row", [(f, Any, msgspec.UNSET) for f in fields])
    return msgspec.json.Decoder(row)


def _projected(chunk: Chunk, fields: tuple[str, ...]) -> list[Row] | None:
    """Rows holding only `fields`, decoded by msgspec, which skips the other values without building them (the
    tool schemas of a tool-use row are most of its bytes). A chunk with invalid UTF-8 goes the strict way (None),
    and any line msgspec refuses is parsed strictly, so its error message is the strict one. One difference,
    by design: a number beyond a double's range (1e400) in a key no requested check reads is not an error here.
    RFC 8259 allows any magnitude; the strict parser's refusal is its own limit, and the checks that read whole
    rows (on by default) still report it."""
    import msgspec

    blob = chunk.blob
    assert blob is not None
    if not blob.isascii():
        try:
            blob.decode("utf-8")
        except UnicodeDecodeError:
            return None
    decode = _projector(fields).decode
    unset = msgspec.UNSET
    rows: list[Row] = []
    line_no = chunk.first_row
    for line in blob.split(b"\n"):
        if line.strip():
            try:
                obj = decode(line)
                row = {f: v for f in fields if (v := getattr(obj, f)) is not unset}
            except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
                full = parse_line(line, chunk.file, line_no)
                row = {f: full[f] for f in fields if f in full}
            rows.append((line_no, row))
        line_no += 1
    return rows


def parse_line(line: bytes, file: str, line_no: int) -> dict[str, Any]:
    """One line by the strict parser (orjson): the row, or the one-line error naming file and line.

    A UTF-8 byte order mark before line 1 is dropped (editors on Windows write one; the dataset reader drops it
    too). The caller skips blank lines."""
    if line_no == 1 and line.startswith(BOM):
        line = line[len(BOM):]
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:  # nesting beyond its limit too: explained as "nested too deeply"
        raise _explain_bad_line(line, file, line_no) from None
    if not isinstance(obj, dict):
        raise InputError(f"row is {_kind(obj)}: each line must be a JSON object", file=file, line=line_no)
    return obj


def iter_jsonl(blob: bytes, file: str) -> Iterator[Row]:
    """Every non-blank line of a whole JSONL file's bytes, as (1-based line number, object), parsed lazily: the
    first bad line raises InputError naming `file` and its line."""
    for line_no, line in enumerate(blob.split(b"\n"), 1):
        if line.strip():
            yield line_no, parse_line(line, file, line_no)


def iter_jsonl_file(path: str | Path, *, what: str = "file") -> Iterator[Row]:
    """`iter_jsonl` streamed from a file (for a caller that stops after a few rows of a large file); an unreadable
    file is one InputError ("cannot read {what} (...)")."""
    file = str(path)
    try:
        fh = open(path, "rb")  # closed by the with below; an open error gets its own message
    except OSError as exc:
        raise InputError(f"cannot read {what} ({exc.strerror or exc})", file=file) from None
    with fh:
        for line_no, line in enumerate(fh, 1):
            if line.strip():
                yield line_no, parse_line(line, file, line_no)


def parse_chunk(chunk: Chunk, fields: tuple[str, ...] | None = None) -> list[Row]:
    """Parses every non-blank line (or Arrow row); raises InputError naming file and line for the first bad one.

    `fields`: the only top-level keys the caller's checks read (None: all). Rows then hold just those keys."""
    if fields is not None and chunk.blob is not None:
        rows = _projected(chunk, fields)
        if rows is None:  # the strict way, then the same projection
            rows = [(ln, {f: row[f] for f in fields if f in row}) for ln, row in parse_chunk(chunk)]
        return rows
    if chunk.batch is not None:
        try:
            objs = chunk.batch.to_pylist()
        except UnicodeDecodeError:  # a corrupt Parquet page can hold a string column that is not UTF-8
            raise InputError("a string column holds invalid UTF-8 (corrupt file?)", file=chunk.file,
                             line=chunk.first_row) from None
        return [(chunk.first_row + i, _drop_arrow_nulls(obj)) for i, obj in enumerate(objs)]
    rows: list[Row] = []
    line_no = chunk.first_row
    for line in chunk.blob.split(b"\n"):  # type: ignore[union-attr]
        if line.strip():
            rows.append((line_no, parse_line(line, chunk.file, line_no)))
        line_no += 1
    return rows


def _drop_arrow_nulls(obj: dict[str, Any]) -> dict[str, Any]:
    """Arrow fills absent struct keys with null; drop them inside messages so rows look as they were written."""
    msgs = obj.get("messages")
    if isinstance(msgs, list):
        obj["messages"] = [
            {k: v for k, v in m.items() if v is not None or k == "content"} if isinstance(m, dict) else m
            for m in msgs
        ]
        for m in obj["messages"]:
            if isinstance(m, dict) and isinstance(m.get("tool_calls"), list):
                m["tool_calls"] = [
                    {k: v for k, v in c.items() if v is not None} if isinstance(c, dict) else c
                    for c in m["tool_calls"]
                ]
    return obj


def iter_dataset(dataset: str, splits: Callable[[str], bool] | None = None
                 ) -> Iterator[tuple[str, int, dict[str, Any], Any]]:
    """(split, line, row, the split's stats) of every split of a dataset (or those `splits` keeps, the others not
    read), in file order: the one reader of parsed rows for the use cases that walk a dataset themselves (export,
    review), with the checks' limits and errors."""
    from gate.io.dataset import SplitStats, discover, iter_chunks

    for src in discover(dataset):
        if splits is not None and not splits(src.split):
            continue
        stats = SplitStats(src.split, src.display, src.format)
        for chunk in iter_chunks(src, stats):
            for line, row in parse_chunk(chunk):
                yield src.split, line, row, stats
