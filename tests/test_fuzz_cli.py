"""Fuzzed inputs through the real CLI (`gate check` as a subprocess): a broken dataset or contract ends with exit
code 1 and exactly one stderr line, never a traceback, never a report, never a changed input.

Fewer cases than the in-process fuzzers (each is a process start): GATE_FUZZ_CLI_EXAMPLES, default 6.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.fuzzkit import hypothesis_test
from tests.test_fuzz_readers import compressed, jsonl_files, parquet_files

pytestmark = pytest.mark.fuzz

ROOT = Path(__file__).resolve().parents[1]
GATE = Path(sys.executable).parent / "gate"
WORK = Path(tempfile.mkdtemp(prefix="gate-fuzz-cli-"))
N = int(os.environ.get("GATE_FUZZ_CLI_EXAMPLES", "6"))


@st.composite
def cases(draw: st.DrawFn) -> tuple[str, bytes, str, bytes]:
    """(dataset file name, its bytes, contract file name, its bytes): one of the two is broken."""
    contract = (ROOT / "contracts" / "triage.yaml").read_bytes()
    sample = (ROOT / "fixtures" / "datasets" / "triage-clean" / "train.jsonl").read_bytes().splitlines()[:3]
    what = draw(st.sampled_from(["jsonl", "compressed", "parquet", "contract"]))
    if what == "jsonl":
        body, _, _ = draw(jsonl_files().filter(lambda f: not f[2]))
        return "train.jsonl", body, "c.yaml", contract
    if what == "compressed":
        fmt, packed, _ = draw(compressed().filter(lambda c: c[2] is None))
        return f"train.jsonl.{fmt}", packed, "c.yaml", contract
    if what == "parquet":
        raw, _ = draw(parquet_files().filter(lambda p: p[1] is None))
        return "train.parquet", raw, "c.yaml", contract
    text = contract.decode()
    pos = draw(st.integers(0, len(text)))
    damage = draw(st.sampled_from(["\n  - [", ": : :", "\x00", "\nnme: x\n", "\n\tfields: 1"]))
    broken = text[:pos] + damage + text[pos:]
    return "train.jsonl", b"\n".join(sample) + b"\n", "c.yaml", broken.encode()


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@hypothesis_test("cli.check", examples=N)
@given(cases())
def test_cli_refuses_broken_input_in_one_line(case):
    data_name, data, contract_name, contract = case
    d = Path(tempfile.mkdtemp(dir=WORK))
    (d / data_name).write_bytes(data)
    (d / contract_name).write_bytes(contract)
    before = {p.name: _digest(p) for p in d.iterdir()}
    env = {**os.environ, "CI": "true"}
    env.pop("GATE_DEBUG", None)
    res = subprocess.run([str(GATE), "check", str(d / data_name), "-c", str(d / contract_name), "-o",
                          str(d / "report"), "--no-db", "--checks", "contract", "-q"],
                         capture_output=True, text=True, timeout=300, env=env, cwd=d)
    assert "Traceback" not in res.stderr + res.stdout, res.stderr[-2000:]
    assert "internal error" not in res.stderr, res.stderr
    assert {p.name: _digest(p) for p in d.iterdir() if p.is_file()} == before, "an input changed"
    if res.returncode == 1:
        lines = res.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("gate: error: "), res.stderr
        assert not (d / "report").exists(), "a failed run left a report behind"
    else:  # a mutation that happens to stay valid is checked normally
        assert res.returncode in (0, 100), res.stderr
        assert (d / "report" / "report.json").is_file()
