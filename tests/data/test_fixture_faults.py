"""The gate finds exactly the planted faults of the fixtures, and nothing on the clean sets.

Every registered check is held to FAULTS.json: each planted fault of that check is found at its split and
row, and the check reports no other row. As later checks register, they are held to it automatically.
"""

import json

import pytest

from gate.contract import load_contract
from gate.data.registry import CHECKS
from gate.data.runner import run_checks
from tests.conftest import CONTRACTS, FIXTURES

CASES = [("triage", "triage.yaml"), ("tool-use", "tool-use.yaml")]


@pytest.fixture(scope="module", params=CASES, ids=[c[0] for c in CASES])
def faulty_run(request):
    kind, contract = request.param
    run = run_checks(str(FIXTURES / f"{kind}-faulty"), load_contract(CONTRACTS / contract), progress=False)
    faults = json.loads((FIXTURES / f"{kind}-faulty" / "FAULTS.json").read_text())
    return run, faults


@pytest.mark.parametrize("check", list(CHECKS))
def test_faulty_fixture_findings_equal_planted_faults(faulty_run, check):
    run, faults = faulty_run
    result = next(r for r in run.results if r.name == check)
    expected = {(f["split"], f["row"]) for f in faults if f["check"] == check}
    if result.status == "skipped":
        assert not expected, f"{check} skipped but faults are planted"
        return
    got = {(f.split, f.row) for f in result.findings if f.severity == "error"}
    assert got == expected, f"missing {sorted(expected - got)}, unexpected {sorted(got - expected)}"
    assert all(f.severity == "error" for f in result.findings), "no warnings expected on the fixtures"


def test_contract_rules_match_the_planted_rules(faulty_run):
    run, faults = faulty_run
    result = next(r for r in run.results if r.name == "contract")
    by_row: dict[tuple[str, int], set[str]] = {}
    for f in result.findings:
        by_row.setdefault((f.split, f.row), set()).add(f.rule)
    for fault in (f for f in faults if f["check"] == "contract"):
        assert fault["rule"] in by_row[(fault["split"], fault["row"])], fault


def test_faulty_datasets_fail(faulty_run):
    run, _ = faulty_run
    assert run.verdict == "fail"


@pytest.mark.parametrize(("kind", "contract"), CASES)
def test_clean_fixtures_pass_every_check(kind, contract):
    run = run_checks(str(FIXTURES / f"{kind}-clean"), load_contract(CONTRACTS / contract), progress=False)
    assert [(f.check, f.split, f.row, f.rule) for r in run.results for f in r.findings] == []
    assert run.verdict == "pass"
