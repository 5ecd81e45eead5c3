"""Turning chunks into rows: strict JSON per line, one clear error per bad line.

Runs inside worker processes, so it only depends on the chunk it is given.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

from gate.errors import InputError
from gate.io.dataset import Chunk

Row = tuple[int, dict[str, Any]]  # (1-based line or row number, parsed object)


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


def parse_chunk(chunk: Chunk) -> list[Row]:
    """Parses every non-blank line (or Arrow row); raises InputError naming file and line for the first bad one."""
    if chunk.batch is not None:
        try:
            objs = chunk.batch.to_pylist()
        except UnicodeDecodeError:  # a corrupt Parquet page can hold a string column that is not UTF-8
            raise InputError("a string column holds invalid UTF-8 (corrupt file?)", file=chunk.file,
                             line=chunk.first_row) from None
        return [(chunk.first_row + i, _drop_arrow_nulls(obj)) for i, obj in enumerate(objs)]
    rows: list[Row] = []
    line_no = chunk.first_row
    loads = orjson.loads
    for line in chunk.blob.split(b"\n"):  # type: ignore[union-attr]
        if line.strip():
            try:
                obj = loads(line)
            except orjson.JSONDecodeError:
                raise _explain_bad_line(line, chunk.file, line_no) from None
            if not isinstance(obj, dict):
                raise InputError(f"row is {_kind(obj)}, expected a JSON object", file=chunk.file, line=line_no)
            rows.append((line_no, obj))
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
