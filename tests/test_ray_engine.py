"""The Ray engine against the local engine: identical findings on every fixture, on a real local Ray cluster.

One Ray head (127.0.0.1, two worker CPUs) serves the whole module; the CLI test joins it by address, as a user
joins an existing cluster.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import CONTRACTS, FIXTURES, run_gate

ray = pytest.importorskip("ray")

CASES = [("triage-clean", "triage.yaml"), ("triage-faulty", "triage.yaml"),
         ("tool-use-clean", "tool-use.yaml"), ("tool-use-faulty", "tool-use.yaml")]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    temp = Path("/tmp") / f"gate-ray-{os.getpid()}"  # short: Ray's socket paths must fit in 107 bytes
    ctx = ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1", _temp_dir=str(temp),
                   log_to_driver=False, logging_level="ERROR")
    try:
        yield ctx.address_info["gcs_address"]
    finally:
        ray.shutdown()
        shutil.rmtree(temp, ignore_errors=True)


def _compare(local, remote) -> None:
    assert [r.name for r in remote.results] == [r.name for r in local.results]
    for a, b in zip(local.results, remote.results, strict=True):
        assert b.status == a.status, a.name
        assert b.findings == a.findings, a.name
        assert b.counts == a.counts, a.name
        assert b.summary == a.summary, a.name
    assert remote.fingerprint == local.fingerprint
    assert [(s.split, s.rows, s.sha256) for s in remote.splits] == [(s.split, s.rows, s.sha256) for s in local.splits]


@pytest.mark.parametrize(("dataset", "contract_file"), CASES)
def test_ray_findings_equal_local(cluster, dataset, contract_file):
    from gate.contract import load_contract
    from gate.data.runner import run_checks

    contract = load_contract(CONTRACTS / contract_file)
    # small chunks: every split is cut into several tasks, so both Ray workers map parts of each split
    local = run_checks(str(FIXTURES / dataset), contract, progress=False, workers=1)
    remote = run_checks(str(FIXTURES / dataset), contract, progress=False, engine="ray", chunk_bytes=32 << 10)
    assert remote.options["engine"] == "ray" and remote.options["workers"] == 2
    assert "ray_startup" in remote.timings
    if dataset.endswith("faulty"):
        assert sum(len(r.findings) for r in local.results) > 20  # the comparison is not vacuous
    _compare(local, remote)


def test_cli_joins_cluster_by_address(cluster, tmp_path):
    out = tmp_path / "report"
    res = run_gate("check", str(FIXTURES / "triage-faulty"), "-c", str(CONTRACTS / "triage.yaml"),
                   "--checks", "contract,exact_duplicate,near_duplicate,leakage", "--engine", "ray",
                   "--address", cluster, "-o", str(out), "--no-db", "-q")
    assert res.returncode == 100, res.stderr
    assert "Traceback" not in res.stderr
    report = json.loads((out / "report.json").read_text())
    found = json.dumps(report)
    assert "exact_duplicate" in found and "leakage" in found


def test_bad_line_is_one_clear_error(cluster, tmp_path):
    from gate.contract import load_contract
    from gate.data.runner import run_checks
    from gate.errors import InputError

    src = (FIXTURES / "triage-clean" / "train.jsonl").read_text().splitlines()
    src[40] = src[40][:-5]  # truncated JSON on line 41
    data = tmp_path / "train.jsonl"
    data.write_text("\n".join(src) + "\n")
    before = data.read_bytes()
    with pytest.raises(InputError) as err:
        run_checks(str(data), load_contract(CONTRACTS / "triage.yaml"), checks=["contract"], progress=False,
                   engine="ray", chunk_bytes=16 << 10)
    assert str(err.value).startswith(f"{data}:41: malformed JSON")
    assert "\n" not in str(err.value)
    assert data.read_bytes() == before


@pytest.mark.parametrize(("name", "value", "says"), [
    ("GATE_RAY_MAX_RETRIES", "-1", "GATE_RAY_MAX_RETRIES must be a whole number of at least 0, not '-1'"),
    ("GATE_RAY_CAPACITY_WAIT_S", "soon", "GATE_RAY_CAPACITY_WAIT_S must be a positive number of seconds, not 'soon'"),
])
def test_bad_retry_setting_is_one_line_before_any_cluster(monkeypatch, name, value, says):
    """A typo in a site setting ends the run at once with one line, before gate joins a cluster (the address is
    one nobody listens on: joining it first would fail with another line)."""
    from gate.contract import load_contract
    from gate.data.runner import run_checks
    from gate.errors import GateError

    monkeypatch.setenv(name, value)
    with pytest.raises(GateError) as err:
        run_checks(str(FIXTURES / "triage-clean"), load_contract(CONTRACTS / "triage.yaml"), checks=["contract"],
                   progress=False, engine="ray", address="127.0.0.1:1")
    assert str(err.value) == says
