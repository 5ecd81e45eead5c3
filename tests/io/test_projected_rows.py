"""Rows decoded for dedup-only runs (only the keys the checks read) accept and refuse exactly what the strict
parser does, with its messages, and hold the same values for those keys."""

import orjson
import pytest

from gate.errors import InputError
from gate.io.dataset import Chunk
from gate.io.rows import parse_chunk
from tests.conftest import FIXTURES

FIELDS = ("id", "messages")


def _chunk(blob: bytes) -> Chunk:
    return Chunk("train", "t.jsonl", 1, blob=blob)


@pytest.mark.parametrize("fixture", ["tool-use-faulty", "triage-faulty"])
def test_projection_holds_the_same_values(fixture):
    blob = (FIXTURES / fixture / "train.jsonl").read_bytes()
    full = parse_chunk(_chunk(blob))
    proj = parse_chunk(_chunk(blob), FIELDS)
    assert [ln for ln, _ in proj] == [ln for ln, _ in full]
    assert proj == [(ln, {k: row[k] for k in FIELDS if k in row}) for ln, row in full]


GOOD = b'{"id": "a", "messages": [{"role": "user", "content": "hi"}], "tools": [{"x": 1}]}'


@pytest.mark.parametrize("bad", [
    b'{"id": "a", "tools": "\xff"}',              # invalid UTF-8 in a key no check reads
    b'{"id": "a", "tools": "\\udc00"}',            # lone surrogate
    b'{"id": "a", "tools": [1,2,}',
    b'[1, 2]',
    b'"a string"',
    b'{"id": "a", "tools": ' + b"[" * 5000 + b"]" * 5000 + b"}",
    b'{"id": "a"} trailing',
])
def test_projection_refuses_what_the_strict_parser_refuses(bad):
    blob = GOOD + b"\n" + bad + b"\n" + GOOD + b"\n"
    with pytest.raises(InputError) as strict:
        parse_chunk(_chunk(blob))
    with pytest.raises(InputError) as proj:
        parse_chunk(_chunk(blob), FIELDS)
    assert str(proj.value) == str(strict.value)
    assert ":2" in str(proj.value) or "line 2" in str(proj.value)


def test_projection_keeps_odd_but_valid_values():
    rows = [{"id": 7, "messages": "not a list"}, {"messages": None}, {"id": "x", "id2": 1e300},
            {"id": "dup", "messages": [], "id": "last"}]  # noqa: F601 - orjson keeps the last duplicate key too
    blob = b"\n".join(orjson.dumps(r) for r in rows[:3]) + b'\n{"id": "dup", "messages": [], "id": "last"}\n'
    proj = parse_chunk(_chunk(blob), FIELDS)
    assert [r for _, r in proj] == [{"id": 7, "messages": "not a list"}, {"messages": None}, {"id": "x"},
                                    {"id": "last", "messages": []}]


def test_out_of_range_numbers_in_unread_keys_are_left_to_the_full_checks():
    """By design (see `_projected`): RFC 8259 allows any magnitude; only the strict parser refuses them, and a run
    whose checks read whole rows (the default) still does."""
    for bad in (b'{"id": "a", "tools": 1e400}', b'{"id": "a", "tools": [1, ' + b"9" * 400 + b"]}"):
        blob = GOOD + b"\n" + bad + b"\n"
        with pytest.raises(InputError):
            parse_chunk(_chunk(blob))
        assert parse_chunk(_chunk(blob), FIELDS)[1] == (2, {"id": "a"})
    with pytest.raises(InputError, match="2"):  # in a key the checks read, msgspec's inf is refused strictly
        parse_chunk(_chunk(GOOD + b'\n{"id": 1e400}\n'), FIELDS)
