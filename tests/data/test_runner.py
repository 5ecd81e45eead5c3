import json

import pytest

from gate.data.runner import run_checks
from gate.errors import GateError, InputError
from tests.conftest import triage_row, write_jsonl


def _dataset(tmp_path):
    rows = [triage_row(i, f"ticket {i} the export button in the dashboard fails on {i % 7} days") for i in range(400)]
    for i in range(0, 400, 37):
        rows[i]["source"] = "fax"
    for i in range(5, 400, 41):
        rows[i]["messages"][1]["content"] = rows[i - 3]["messages"][1]["content"].upper()
    write_jsonl(tmp_path / "train.jsonl", rows[:300])
    write_jsonl(tmp_path / "test.jsonl", rows[300:])
    return tmp_path


def _key(run):
    return [(r.name, r.status, [f.to_dict() for f in r.findings]) for r in run.results]


@pytest.mark.forks
def test_parallel_workers_give_exactly_the_serial_findings(tmp_path, triage_contract):
    ds = _dataset(tmp_path)
    serial = run_checks(str(ds), triage_contract, workers=1, progress=False, chunk_bytes=2048)
    parallel = run_checks(str(ds), triage_contract, workers=2, progress=False, chunk_bytes=2048,
                          min_parallel_bytes=0)
    assert parallel.options["workers"] == 2
    assert _key(serial) == _key(parallel)
    assert serial.fingerprint == parallel.fingerprint
    assert [s.rows for s in serial.splits] == [300, 100]
    dup = next(r for r in serial.results if r.name == "exact_duplicate")
    assert dup.counts["dropped_duplicate"] == 10
    src = next(r for r in serial.results if r.name == "contract")
    assert {f.row for f in src.findings if f.split == "train"} == {i + 1 for i in range(0, 300, 37)}


@pytest.mark.forks
def test_bad_line_in_a_worker_surfaces_as_input_error(tmp_path, triage_contract):
    ds = _dataset(tmp_path)
    with open(ds / "test.jsonl", "a") as fh:
        fh.write('{"id": "tri-999999", "messages": [}\n')
    with pytest.raises(InputError) as err:
        run_checks(str(ds), triage_contract, workers=2, progress=False, chunk_bytes=2048, min_parallel_bytes=0)
    assert err.value.line == 101 and err.value.file.endswith("test.jsonl")


def test_fingerprint_changes_with_content(tmp_path, triage_contract):
    ds = _dataset(tmp_path)
    a = run_checks(str(ds), triage_contract, checks=["length"], progress=False).fingerprint
    with open(ds / "test.jsonl", "a") as fh:
        fh.write(json.dumps(triage_row(1000)) + "\n")
    assert run_checks(str(ds), triage_contract, checks=["length"], progress=False).fingerprint != a


def test_unknown_check_name(tmp_path, triage_contract):
    with pytest.raises(GateError, match="unknown check"):
        run_checks(str(_dataset(tmp_path)), triage_contract, checks=["contrakt"])
