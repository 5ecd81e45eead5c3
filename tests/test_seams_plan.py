"""Issue 28 item 7: one function decides what runs (gate.data.registry.plan); `gate contract lint` and the runner
both take their "runs" / "skipped" from it, and lint fails where the run would (a missing evaluation set)."""

from __future__ import annotations

import yaml

from gate.contract import load_contract
from gate.contract.lint import uses
from gate.data.runner import run_checks
from tests.conftest import CONTRACTS, gate_inprocess, triage_row, write_jsonl

#: the checks a contract alone can switch off (PII and secrets are left out: spaCy costs seconds to load)
SWITCHABLE = ["contract", "semantic_duplicate", "group_split", "template", "boilerplate", "exact_duplicate"]


def _contract(tmp_path, drop: tuple[str, ...] = (), **changes):
    raw = yaml.safe_load((CONTRACTS / "triage.yaml").read_text())
    for key in ("evaluation_sets", *drop):
        raw.pop(key, None)
    raw.update(changes)
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def test_lint_and_the_run_agree_on_what_runs(tmp_path):
    write_jsonl(tmp_path / "ds" / "train.jsonl", [triage_row(i) for i in range(4)])
    for path in (_contract(tmp_path), _contract(tmp_path, drop=("group_key",), output={"format": "text"})):
        contract = load_contract(path)
        said = {name: status for name, (status, _) in uses(contract).items()}
        run = run_checks(str(tmp_path / "ds"), contract, checks=SWITCHABLE, progress=False, workers=1)
        ran = {r.name: "skipped" if r.status == "skipped" else "runs" for r in run.results}
        assert {n: said[n] for n in SWITCHABLE} == ran, (path.read_text(), said, ran)
        # semantic_duplicate is opt-in: lint said "runs" where the run skipped it as not enabled
        assert said["semantic_duplicate"] == "skipped"
        from gate.data.registry import plan

        assert {n: plan(contract)[n] is None for n in SWITCHABLE} == {n: s == "runs" for n, s in ran.items()}


def test_lint_fails_on_a_missing_evaluation_set_at_its_line(tmp_path):
    path = _contract(tmp_path, evaluation_sets=["suites/none.jsonl"])
    code, out = gate_inprocess("contract", "lint", str(path))
    line = next(i for i, t in enumerate(path.read_text().splitlines(), 1) if "none.jsonl" in t)
    assert code == 1 and f"{path}:{line}" in out and "evaluation set not found" in out, out
    assert "Traceback" not in out and len(out.strip().splitlines()) == 1, out


def test_gate_schema_says_which_checks_a_bare_contract_skips():
    from gate.schema import build

    checks = build("contract")["properties"]["checks"]["properties"]
    assert "Skipped unless" in checks["semantic_duplicate"]["description"]
    assert "not enabled" in checks["semantic_duplicate"]["description"]
    assert "no group_key" in checks["group_split"]["description"]
    assert "Skipped" not in checks["near_duplicate"]["description"]
