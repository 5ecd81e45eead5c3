"""Issue 28 item 6: a broken plugin is named in one warning line and left out; a plugin's `order` is honoured; a
plugin named like a built-in is one line, not a raw Python UserWarning. Real `gate` processes (the registry is read
once per process), the plugins installed as `pip install` leaves them (a *.dist-info with entry_points.txt)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import CONTRACTS, run_gate, triage_row, write_jsonl

EARLY = '''
from gate.contract.file_schema import NO_OPTIONS
from gate.data.base import Check


class EarlyCheck(Check):
    name = "early"
    order = 5
    options_schema = NO_OPTIONS

    def map(self, batch):
        return [], {"scanned": len(batch.rows)}
'''
NO_SCHEMA = '''
from gate.data.base import Check


class NoSchema(Check):
    name = "noschema"

    def map(self, batch):
        return [], {}
'''
ENTRY_POINTS = """\
[gate.checks]
early = seamplug.early:EarlyCheck
noschema = seamplug.noschema:NoSchema
contract = seamplug.early:EarlyCheck
"""


def _install(root: Path) -> dict[str, str]:
    pkg = root / "site" / "seamplug"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "early.py").write_text(EARLY)
    (pkg / "noschema.py").write_text(NO_SCHEMA)
    dist = root / "site" / "seamplug-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: seamplug\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(ENTRY_POINTS)
    return {"PYTHONPATH": os.pathsep.join([str(root / "site"), os.environ.get("PYTHONPATH", "")])}


def test_broken_plugin_is_left_out_in_one_line_and_order_is_honoured(tmp_path):
    env = _install(tmp_path)
    write_jsonl(tmp_path / "data" / "train.jsonl", [triage_row(i) for i in range(3)])
    res = run_gate("check", str(tmp_path / "data"), "-c", str(CONTRACTS / "triage.yaml"), "--checks", "contract",
                   "--no-db", "-q", "-o", str(tmp_path / "rep"), env=env)  # never the checkout's gate-report/
    assert res.returncode == 0, res.stdout + res.stderr
    assert "Traceback" not in res.stderr and "Warning:" not in res.stderr, res.stderr
    warnings = [ln for ln in res.stderr.splitlines() if ln.startswith("gate: warning:")]
    assert len(warnings) == 2, res.stderr
    assert any("'noschema'" in w and "options_schema" in w and "left out" in w for w in warnings), warnings
    assert any("gate.checks:contract" in w and "already declared" in w for w in warnings), warnings
    # a run that names the broken plugin fails with its one line
    res = run_gate("check", str(tmp_path / "data"), "-c", str(CONTRACTS / "triage.yaml"), "--checks", "noschema",
                   "--no-db", "-q", "-o", str(tmp_path / "rep"), env=env)
    assert res.returncode == 1 and "Traceback" not in res.stderr
    assert "noschema" in res.stderr.splitlines()[-1] and "options_schema" in res.stderr.splitlines()[-1]
    # `order = 5`: before every built-in check (10 and up), and in the default run's order
    code = ("from gate.data.registry import resolve; from gate.plugins import declarations; "
            "print([(d.name, d.order) for d in declarations('check')][:2]); print(resolve(None)[:2])")
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, **env}, capture_output=True, text=True,
                         timeout=120)
    assert out.stdout.splitlines() == ["[('early', 5), ('contract', 10)]", "['early', 'contract']"], out
