"""Issue 27 item 7: bounded work on any input. Small files that ask for unbounded work (decompression bombs, long
lines, many rows, a huge YAML, a flood of findings, patterns that backtrack without bound) are refused with one
line, exit 1, in seconds; the ceilings have documented defaults and `--limit` / GATE_LIMIT_* overrides."""

from __future__ import annotations

import gzip
import json
import time
from pathlib import Path

import pytest
import yaml

from gate.errors import GateError
from tests.conftest import CONTRACTS, gate_inprocess, triage_row, write_jsonl


def _contract(tmp_path: Path, **changes: object) -> Path:
    raw = yaml.safe_load((CONTRACTS / "triage.yaml").read_text())
    raw["evaluation_sets"] = []
    raw.update(changes)
    p = tmp_path / "c.yaml"
    p.write_text(yaml.safe_dump(raw))
    return p


def _check(tmp_path: Path, data: Path, *extra: str, contract: Path | None = None) -> tuple[int, str, float]:
    t0 = time.monotonic()
    code, text = gate_inprocess("check", str(data), "-c", str(contract or _contract(tmp_path)), "--checks",
                                "contract", "--no-db", "-o", str(tmp_path / "rep"), "-q", "-j", "1", *extra)
    return code, text, time.monotonic() - t0


def _one_line_refusal(code: int, text: str, seconds: float, *needles: str) -> None:
    lines = text.strip().splitlines()
    assert code == 1 and len(lines) == 1 and lines[0].startswith("gate: error: "), (code, text[:500])
    for n in needles:
        assert n in lines[0], lines[0]
    assert seconds < 10, seconds


def test_gzip_bomb_of_a_million_empty_rows_is_refused(tmp_path: Path) -> None:
    """The issue's 2,957-byte `.jsonl.gz` of 1M `{}` rows (8.4 GB and a MemoryError after 312 s before)."""
    bomb = tmp_path / "ds" / "train.jsonl.gz"
    bomb.parent.mkdir()
    bomb.write_bytes(gzip.compress(b"{}\n" * 1_000_000, 9))
    assert bomb.stat().st_size < 5000
    code, text, s = _check(tmp_path, bomb.parent)
    _one_line_refusal(code, text, s, "train.jsonl.gz", "max_compression_ratio")
    assert not (tmp_path / "rep").exists()


def test_zstd_bomb_of_newlines_is_refused(tmp_path: Path) -> None:
    zstandard = pytest.importorskip("zstandard")
    bomb = tmp_path / "ds" / "train.jsonl.zst"
    bomb.parent.mkdir()
    bomb.write_bytes(zstandard.ZstdCompressor(level=19).compress(b"\n" * (32 << 20)))
    code, text, s = _check(tmp_path, bomb.parent)
    _one_line_refusal(code, text, s, "train.jsonl.zst", "max_compression_ratio")


def test_decompressed_bytes_cap_overridable(tmp_path: Path) -> None:
    rows = b"".join(json.dumps(triage_row(i)).encode() + b"\n" for i in range(200))
    (tmp_path / "ds").mkdir()
    (tmp_path / "ds" / "train.jsonl.gz").write_bytes(gzip.compress(rows))
    code, text, s = _check(tmp_path, tmp_path / "ds", "--limit", "max_decompressed_bytes=10000")
    _one_line_refusal(code, text, s, "max_decompressed_bytes")


def test_long_line_default_cap_and_override(tmp_path: Path) -> None:
    """One line over the default (64 MiB; it was 256 MiB, so a 200 MB line ran for minutes in GBs)."""
    from gate.io.limits import Limits

    assert Limits().max_line_bytes <= 64 << 20
    data = tmp_path / "ds" / "train.jsonl"
    data.parent.mkdir()
    data.write_bytes(b'{"id": "' + b"x" * ((64 << 20) + 10) + b'"}\n')
    code, text, s = _check(tmp_path, data.parent)
    _one_line_refusal(code, text, s, "train.jsonl:1", "max_line_bytes")
    write_jsonl(tmp_path / "ds2" / "train.jsonl", [triage_row(0, text="y" * 5000)])
    code, text, s = _check(tmp_path, tmp_path / "ds2", "--limit", "max_line_bytes=1000")
    _one_line_refusal(code, text, s, "train.jsonl:1", "max_line_bytes")


def test_rows_per_file_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_jsonl(tmp_path / "ds" / "train.jsonl", [triage_row(i) for i in range(30)])
    monkeypatch.setenv("GATE_LIMIT_MAX_ROWS_PER_FILE", "10")
    code, text, s = _check(tmp_path, tmp_path / "ds")
    _one_line_refusal(code, text, s, "train.jsonl", "max_rows_per_file")


def test_bad_limit_is_one_line(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "ds" / "train.jsonl", [triage_row(0)])
    code, text, s = _check(tmp_path, tmp_path / "ds", "--limit", "max_lines=3")
    _one_line_refusal(code, text, s, "--limit")


def test_huge_yaml_is_refused_before_parsing(tmp_path: Path) -> None:
    """A contract past `max_yaml_bytes` (4 MiB) is refused unread (a 60 MB YAML of 3M keys ran for minutes)."""
    from gate.contract import load_contract

    p = _contract(tmp_path)
    with open(p, "a") as fh:
        fh.write("x_keys:\n" + "".join(f"  k{i}: {i}\n" for i in range(400_000)))
    assert p.stat().st_size > 4 << 20
    t0 = time.monotonic()
    with pytest.raises(GateError, match="max_yaml_bytes") as exc:
        load_contract(p)
    assert time.monotonic() - t0 < 2 and str(p) in str(exc.value)


def test_report_keeps_capped_findings_and_duckdb_keeps_all(tmp_path: Path) -> None:
    duckdb = pytest.importorskip("duckdb")
    write_jsonl(tmp_path / "ds" / "train.jsonl", [{**triage_row(i), "source": 5} for i in range(40)])
    db = tmp_path / "g.duckdb"
    code, text = gate_inprocess("check", str(tmp_path / "ds"), "-c", str(_contract(tmp_path)), "--checks",
                                "contract", "--db", str(db), "-o", str(tmp_path / "rep"), "-q", "-j", "1",
                                "--limit", "max_report_findings=5")
    assert code == 100, text
    report = json.loads((tmp_path / "rep" / "report.json").read_text())
    assert len(report["findings"]) == 5
    assert report["findings_omitted"]["by_check"] == {"contract": 35}
    con = duckdb.connect(str(db), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM findings").fetchone()[0] == 40
    finally:
        con.close()


# patterns that backtrack without bound: tests/security/test_re2_patterns.py (every user pattern runs on RE2)


def test_safe_patterns_still_load(tmp_path: Path) -> None:
    from gate.contract import load_contract

    raw = yaml.safe_load((CONTRACTS / "triage.yaml").read_text())
    raw["refusal"]["when_user_matches"] = [r"\b(password|credit card)\b", r"^[a-z]+(-[a-z0-9]+)*$"]
    raw["fields"]["customer"]["pattern"] = r"^cus-[0-9]{5}$"
    load_contract(_contract(tmp_path, **raw))


def test_index_readers_refuse_the_bomb_too(tmp_path: Path) -> None:
    """`--base` / `--changed-since` read splits through gate.index.lines: the same ceilings apply there."""
    from gate.errors import InputError
    from gate.index.lines import current_lines, line_blocks
    from gate.io.dataset import discover

    bomb = tmp_path / "ds" / "train.jsonl.gz"
    bomb.parent.mkdir()
    bomb.write_bytes(gzip.compress(b"{}\n" * 1_000_000, 9))
    src = discover(bomb.parent)[0]
    for read in (lambda: current_lines(src), lambda: list(line_blocks(src))):
        t0 = time.monotonic()
        with pytest.raises(InputError, match="max_compression_ratio"):
            read()
        assert time.monotonic() - t0 < 5
