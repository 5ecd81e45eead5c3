"""Every JSONL file gate reads goes through one reader (gate.io.rows): a bad line reads the same in all of them.

Scorecard suites, evaluation sets, production metrics, probe rows, parity prompts and datasets each had their own
loop, with their own wording; invalid UTF-8 in probe rows or parity prompts was a traceback, and a byte order mark
was refused by some and read by others.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gate.data.evalsets import load_eval_items
from gate.engines.parity import read_prompts
from gate.errors import InputError
from gate.io.dataset import SplitStats, discover, iter_chunks
from gate.io.rows import parse_chunk
from gate.probe.batch import read_rows
from gate.release.metrics_jsonl import read_metrics
from gate.score.scorecard import load_suite

#: a row every reader accepts: a suite item, an evaluation item, a metrics row and a probe row at once
GOOD = {"id": "a", "category": "c", "messages": [{"role": "user", "content": "hi"}], "expected": "ok",
        "metric": "latency_ms", "value": 1.0}


def _dataset(p: Path) -> Any:
    src = discover(p)[0]
    return [r for c in iter_chunks(src, SplitStats(src.split, src.display, src.format)) for r in parse_chunk(c)]


READERS: dict[str, Callable[[Path], Any]] = {
    "suite": load_suite,
    "evaluation set": lambda p: load_eval_items((str(p),)),
    "metrics": lambda p: read_metrics(str(p)),
    "probe rows": lambda p: read_rows(p, 10),
    "dataset": _dataset,
    "parity prompts": read_prompts,
}

BAD_SECOND_LINES = {
    "malformed": b'{"id": "b",,}',
    "invalid UTF-8": b'{"id": "b\xff"}',
    "an array": b"[1, 2]",
    "NaN (not JSON)": b'{"id": "b", "value": NaN}',
}


@pytest.mark.parametrize("bad", BAD_SECOND_LINES.values(), ids=BAD_SECOND_LINES.keys())
def test_a_bad_line_is_the_same_one_line_error_in_every_reader(tmp_path: Path, bad: bytes) -> None:
    messages = {}
    for name, read in READERS.items():
        p = tmp_path / f"{name.replace(' ', '_')}.jsonl"
        p.write_bytes(json.dumps(GOOD).encode() + b"\n" + bad + b"\n")
        with pytest.raises(InputError) as exc:
            read(p)
        text = str(exc.value)
        assert text.startswith(f"{p}:2: ") and "\n" not in text, (name, text)
        messages[name] = text[len(f"{p}:2: "):]
    assert len(set(messages.values())) == 1, messages


def test_a_byte_order_mark_before_the_first_line_is_read_by_every_reader(tmp_path: Path) -> None:
    for name, read in READERS.items():
        p = tmp_path / f"{name.replace(' ', '_')}.jsonl"
        p.write_bytes(b"\xef\xbb\xbf" + json.dumps(GOOD).encode() + b"\n")
        assert read(p), name


def test_a_byte_order_mark_inside_the_file_is_an_error(tmp_path: Path) -> None:
    p = tmp_path / "s.jsonl"
    p.write_bytes(json.dumps(GOOD).encode() + b"\n\xef\xbb\xbf" + json.dumps({**GOOD, "id": "b"}).encode() + b"\n")
    with pytest.raises(InputError, match=r":2: malformed JSON"):
        load_suite(p)


def test_probe_rows_stop_reading_after_the_rows_asked_for(tmp_path: Path) -> None:
    """The probe reads the first rows of what may be a whole training set: a bad line after them is never read."""
    p = tmp_path / "train.jsonl"
    p.write_bytes(json.dumps(GOOD).encode() + b"\n" + json.dumps(GOOD).encode() + b"\n{broken\n")
    assert len(read_rows(p, 2)) == 2
    with pytest.raises(InputError, match=r"train.jsonl:3: malformed JSON"):
        read_rows(p, 3)
