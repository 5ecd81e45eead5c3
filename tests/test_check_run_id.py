"""`gate check` prints the run id with its verdict line, quiet or not (issue 18 item 10): it is what
`gate release create --data-check RUN` needs, and nothing else printed it."""

from __future__ import annotations

import re

import duckdb
import pytest

from tests.conftest import CONTRACTS, gate_inprocess, triage_row, write_jsonl

# the CLI calls run the entry point in-process, in run_gate's environment (CI=true, no GITHUB_ACTIONS)
pytestmark = pytest.mark.usefixtures("run_gate_env")


def test_the_verdict_line_names_the_recorded_run_in_quiet_and_normal_mode(tmp_path):
    write_jsonl(tmp_path / "data" / "train.jsonl", [triage_row(i, f"ticket {i} about widget {i}") for i in range(5)])
    db = tmp_path / "gate.duckdb"
    ids = []
    for quiet in (["-q"], []):
        res = gate_inprocess("check", str(tmp_path / "data"), "-c", str(CONTRACTS / "triage.yaml"), "--checks",
                             "contract,exact_duplicate", "--db", str(db), "-o", str(tmp_path / "rep"), *quiet,
                             split=True)
        assert res.returncode == 0, res.stderr
        verdict = [ln for ln in res.stdout.splitlines() if ln.startswith("PASS ")]
        assert len(verdict) == 1, res.stdout
        m = re.search(r", run ([0-9a-f]{16}) → ", verdict[0])
        assert m, verdict[0]
        ids.append(m.group(1))
    with duckdb.connect(str(db), read_only=True) as con:
        recorded = {r for (r,) in con.execute("SELECT run_id FROM runs WHERE kind = 'check'").fetchall()}
    assert set(ids) == recorded and len(recorded) == 2
    res = gate_inprocess("check", str(tmp_path / "data"), "-c", str(CONTRACTS / "triage.yaml"), "--checks", "contract",
                         "--no-db", "-q", "-o", str(tmp_path / "rep"), split=True)
    assert re.search(r", run [0-9a-f]{16} \(not recorded\) → ", res.stdout), res.stdout
