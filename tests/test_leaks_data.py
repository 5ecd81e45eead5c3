"""No leaks, data side: after `gate check`, `gate scrub`, `gate split` and `gate export` on the faulty fixtures,
no planted personal value or secret is in any report, manifest, log line (stdout/stderr, GitHub annotations)
or DuckDB column; and the scrubbed copy holds none either. The scanner is tests/leakscan.py.

`gate score` is not run here: it never reads a training dataset (its inputs are scorecards and suites, which
hold no planted values). tests/test_no_leaks.py scans a demo-like record (the data door, score runs, releases)
through every page of the dashboard, every read of the service and the static report, reusing `leakscan.scan`.
"""

from __future__ import annotations

import pytest

from tests.conftest import CONTRACTS, FIXTURES, run_gate
from tests.leakscan import planted_values, scan

KINDS = ["triage", "tool-use"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Every data command on both faulty fixtures, into one work directory and one DuckDB file."""
    work = tmp_path_factory.mktemp("leaks")
    db = work / "gate.duckdb"
    logs: dict[str, str] = {}
    for kind in KINDS:
        ds, contract = FIXTURES / f"{kind}-faulty", CONTRACTS / f"{kind}.yaml"
        commands = {
            "check": ["check", str(ds), "-c", str(contract), "-o", str(work / f"{kind}-report"), "--db", str(db)],
            "scrub": ["scrub", str(ds), "-c", str(contract), "-o", str(work / f"{kind}-scrubbed")],
            "split": ["split", str(ds), "-c", str(contract), "-o", str(work / f"{kind}-split"), "--drop-ungrouped"],
            "export": ["export", str(ds), "-f", "ms-swift", "-o", str(work / f"{kind}-export"), "--skip-invalid"],
        }
        for name, args in commands.items():
            res = run_gate(*args, env={"GITHUB_ACTIONS": "true"}, cwd=work)
            assert res.returncode in (0, 100), f"{name} {kind}: {res.stderr[-500:]}"
            logs[f"{kind} {name} stdout"] = res.stdout
            logs[f"{kind} {name} stderr"] = res.stderr
    return work, db, logs


@pytest.mark.parametrize("kind", KINDS)
def test_scanner_finds_every_planted_value_in_the_raw_dataset(kind):
    """The positive control: pointed at the faulty dataset itself, the scanner finds all of them."""
    planted = planted_values(FIXTURES / f"{kind}-faulty")
    assert len(planted) >= 16
    found = {(leak.kind, leak.planted_at) for leak in scan(planted, paths=[FIXTURES / f"{kind}-faulty"])}
    assert found == {(p.kind, p.where) for p in planted}


def test_no_planted_value_in_reports_manifests_logs_or_duckdb(runs):
    work, db, logs = runs
    planted = [p for kind in KINDS for p in planted_values(FIXTURES / f"{kind}-faulty")]
    # split and export copy the rows on purpose (they do not scrub): only their manifests count here
    paths = [p for p in work.iterdir() if p.is_dir() and not p.name.endswith(("-split", "-export", "-scrubbed"))]
    paths += [work / f"{kind}-{step}" / "MANIFEST.json" for kind in KINDS for step in ("split", "export", "scrubbed")]
    assert db.is_file()
    leaks = scan(planted, paths=paths, duckdb_files=[db], texts=logs)
    assert not leaks, "\n".join(map(str, leaks))


def test_scrubbed_copy_holds_no_planted_secret_or_pattern_pii(runs):
    """What scrub writes is the training set: none of the planted secrets and pattern-found PII may survive."""
    work, _, _ = runs
    planted = [p for kind in KINDS for p in planted_values(FIXTURES / f"{kind}-faulty")]
    leaks = scan(planted, paths=[work / f"{kind}-scrubbed" for kind in KINDS])
    assert not leaks, "\n".join(map(str, leaks))
