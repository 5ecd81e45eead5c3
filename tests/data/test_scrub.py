import hashlib
import json

import pytest
import yaml

from gate.contract import load_contract
from gate.data.runner import run_checks
from gate.data.scrub import scrub_dataset
from gate.errors import GateError
from tests.conftest import CONTRACTS, FIXTURES, triage_row, write_jsonl

CLEAN_AFTER = ["pii", "secret", "near_duplicate", "exact_duplicate", "leakage"]


def _digests(path):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(path.iterdir())}


@pytest.mark.parametrize("kind", ["triage", "tool-use"])
def test_scrubbed_fixture_passes_pii_secret_and_dedup(tmp_path, kind):
    src = FIXTURES / f"{kind}-faulty"
    before = _digests(src)
    contract = load_contract(CONTRACTS / f"{kind}.yaml")
    out = scrub_dataset(str(src), contract, str(tmp_path / "out"))
    assert _digests(src) == before  # the input is never touched
    run = run_checks(str(tmp_path / "out"), contract, checks=CLEAN_AFTER, progress=False)
    assert {r.name: len(r.findings) for r in run.results} == dict.fromkeys(CLEAN_AFTER, 0)
    faults = json.loads((src / "FAULTS.json").read_text())
    planted = {c: sum(f["check"] == c and "reworded copy" not in f["note"] for f in faults)  # semantic: off
               for c in ("exact_duplicate", "near_duplicate", "leakage")}
    by_check = {c: sum(n for rule, n in out.dropped.items() if rule.split(".")[0] == c) for c in planted}
    assert by_check == planted
    assert out.rows_out == out.rows_in - sum(out.dropped.values())
    manifest = json.loads((tmp_path / "out" / "MANIFEST.json").read_text())
    assert manifest["rows"] == {"in": out.rows_in, "out": out.rows_out}
    assert manifest["contract"]["sha256"] == contract.sha256
    assert sum(f["rows"] for f in manifest["files"]) == out.rows_out
    assert manifest["entities_rewritten"].get("SECRET", 0) >= sum(f["check"] == "secret" for f in faults)
    # no planted value survives: every secret/PII fault row's user text changed
    text = "".join(p.read_text() for p in (tmp_path / "out").glob("*.jsonl"))
    assert "sk-proj-" not in text and "ghp_" not in text and "BEGIN RSA PRIVATE KEY" not in text


def test_drop_row_operator_and_hash_salt(tmp_path, monkeypatch):
    raw = yaml.safe_load((CONTRACTS / "triage.yaml").read_text())
    raw["evaluation_sets"] = []
    raw["scrub"] = {"operators": {"CREDIT_CARD": "drop_row", "EMAIL_ADDRESS": "hash"}}
    cpath = tmp_path / "c.yaml"
    cpath.write_text(yaml.safe_dump(raw))
    contract = load_contract(cpath)
    rows = [triage_row(1, "My card 4111 1111 1111 1111 was charged twice for the annual plan renewal"),
            triage_row(2, "Please send the invoice copy to jane.roe@example.org, the dashboard export is broken"),
            triage_row(3, "The mobile app crashes on start since the last update of the release channel")]
    write_jsonl(tmp_path / "ds" / "train.jsonl", rows)
    monkeypatch.delenv("GATE_SCRUB_SALT", raising=False)
    with pytest.raises(GateError, match="salt"):
        scrub_dataset(str(tmp_path / "ds"), contract, str(tmp_path / "o"))
    assert not (tmp_path / "o").exists()
    monkeypatch.setenv("GATE_SCRUB_SALT", "a-salt-of-sixteen-bytes-or-more")
    out = scrub_dataset(str(tmp_path / "ds"), contract, str(tmp_path / "o"))
    assert out.dropped["pii.CREDIT_CARD"] == 1 and out.rows_out == 2
    lines = [json.loads(x) for x in (tmp_path / "o" / "train.jsonl").read_text().splitlines()]
    assert [r["id"] for r in lines] == ["tri-000002", "tri-000003"]
    assert "jane.roe" not in lines[0]["messages"][1]["content"]
    assert "a-salt" not in (tmp_path / "o" / "MANIFEST.json").read_text()


def test_missing_pii_engine_is_a_clear_gate_error(monkeypatch, triage_contract):
    import gate.pii.presidio_engine as engine
    from gate.data.base import RunContext
    from gate.data.pii_scan import RowScanner

    def missing(config):
        raise ImportError("presidio-analyzer is not installed; install the PII extra: "
                          "pip install 'finetune-gate[pii]'")

    monkeypatch.setattr(engine, "_engine", missing)
    with pytest.raises(GateError, match=r"gate\[pii\].*--checks"):
        RowScanner(triage_contract).scan([{"messages": [{"role": "user", "content": "hello there"}]}], RunContext())
