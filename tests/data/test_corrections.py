"""Corrections with their reason: `corrections.jsonl` validation (file:line errors, nothing written), `gate apply`
(atomic copy with a manifest, input untouched, a re-run is a no-op), the DuckDB record, and the planted conflict
gone after its correction."""

import hashlib
import json
import re

import pytest
import yaml

from gate.contract import load_contract
from gate.data.corrections import apply_corrections, load_corrections
from gate.data.runner import run_checks
from gate.errors import GateError
from tests.conftest import CONTRACTS, FIXTURES, gate_inprocess, triage_row, write_jsonl

RULES = {"outage-escalates": "A service down for everyone is escalated to engineering."}


def _contract(tmp_path):
    raw = yaml.safe_load((CONTRACTS / "triage.yaml").read_text())
    raw["rules"] = RULES
    raw["evaluation_sets"] = [str((CONTRACTS / e).resolve()) for e in raw.get("evaluation_sets") or []]
    path = tmp_path / "triage.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def _fix(rid="tri-000002", **kw):
    row = {"id": rid, "field": "answer.severity", "old": "medium", "new": "high", "reason": "rule:outage-escalates",
           "reviewer": "ana", "time": "2026-12-05T04:00:00Z"}
    row.update(kw)
    return row


def _data(tmp_path):
    return write_jsonl(tmp_path / "data" / "train.jsonl", [triage_row(i) for i in (1, 2, 3)]).parent


def _sha(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_apply_writes_a_corrected_copy_with_a_manifest_and_a_rerun_is_a_noop(tmp_path):
    data, contract = _data(tmp_path), load_contract(_contract(tmp_path))
    before = _sha(data / "train.jsonl")
    corr = write_jsonl(tmp_path / "c.jsonl", [_fix(), _fix("tri-000003", field="language", old="en", new="de",
                                                              reason="the ticket is written in German")])
    out = tmp_path / "out"
    res = apply_corrections(str(data), str(corr), str(out), contract)
    assert not res.noop and _sha(data / "train.jsonl") == before  # the input is never changed
    rows = [json.loads(x) for x in (out / "train.jsonl").read_text().splitlines()]
    assert json.loads(rows[1]["messages"][2]["content"])["severity"] == "high" and rows[2]["language"] == "de"
    assert (out / "train.jsonl").read_text().splitlines()[0] == (data / "train.jsonl").read_text().splitlines()[0]
    m = json.loads((out / "MANIFEST.json").read_text())
    assert m["inputs"] == {"train:train.jsonl": before} and m["outputs"] == {"train.jsonl": _sha(out / "train.jsonl")}
    assert m["by_reason"] == {"free text": 1, "rule:outage-escalates": 1} and m["rows_corrected"] == 2
    mtime = (out / "train.jsonl").stat().st_mtime_ns
    again = apply_corrections(str(data), str(corr), str(out), contract)
    assert again.noop and (out / "train.jsonl").stat().st_mtime_ns == mtime


@pytest.mark.parametrize(("fix", "where", "says"), [
    ({"reason": None}, "reason", "missing"),
    ({"old": "low"}, "old", "does not match the data"),
    ({"id": "tri-999999"}, "id", "no row with id"),
    ({"reason": "rule:made-up"}, "reason", "unknown rule 'made-up'"),
    ({"field": "answer.colour"}, "field", "has no key 'colour'"),
    ({"time": "yesterday"}, "time", "not an ISO 8601 time"),
])
def test_a_bad_correction_is_one_error_naming_file_line_and_field_and_nothing_is_written(tmp_path, fix, where,
                                                                                        says):
    data, contract = _data(tmp_path), load_contract(_contract(tmp_path))
    bad = {k: v for k, v in _fix(**fix).items() if v is not None}
    corr = write_jsonl(tmp_path / "c.jsonl", [_fix("tri-000001", old="medium", new="low"), bad])
    with pytest.raises(GateError) as err:
        apply_corrections(str(data), str(corr), str(tmp_path / "out"), contract)
    assert str(err.value).startswith(f"{corr}:2: {where}: ") and says in str(err.value)
    assert not (tmp_path / "out").exists()


def test_the_same_field_corrected_twice_is_refused(tmp_path):
    data = _data(tmp_path)
    corr = write_jsonl(tmp_path / "c.jsonl", [_fix(reason="x"), _fix(reason="y")])
    with pytest.raises(GateError, match=r"c\.jsonl:2: field: .*already corrected on line 1"):
        load_corrections(str(corr), str(data))


def test_cli_apply_records_once_and_a_bad_file_exits_1_with_one_line(tmp_path):
    data, contract = _data(tmp_path), _contract(tmp_path)
    corr = write_jsonl(tmp_path / "c.jsonl", [_fix()])
    db = str(tmp_path / "g.duckdb")
    args = ("apply", str(data), str(corr), "-o", str(tmp_path / "out"), "-c", str(contract), "--db", db)
    code, text = gate_inprocess(*args)
    assert code == 0 and "1 correction(s) applied to 1 row(s) (rule:outage-escalates 1)" in text
    assert gate_inprocess(*args)[0] == 0  # a no-op, not recorded twice
    from gate.store.corrections import corrections_by_rule

    assert corrections_by_rule(db) == [("outage-escalates", 1, 1)]
    bad = write_jsonl(tmp_path / "bad.jsonl", [_fix(old="critical")])
    res = gate_inprocess("apply", str(data), str(bad), "-o", str(tmp_path / "out2"), "-c", str(contract),
                         "--no-db", split=True)
    assert res.returncode == 1 and res.stderr.strip().count("\n") == 0
    assert f"{bad}:1: old:" in res.stderr and not (tmp_path / "out2").exists()


def test_the_planted_conflict_is_gone_after_its_correction(tmp_path):
    """triage-faulty train row 172 (tri copy of row 83) says reply_with_kb where row 83 escalates."""
    contract = load_contract(_contract(tmp_path))
    rows = (FIXTURES / "triage-faulty" / "train.jsonl").read_text().splitlines()
    rid = json.loads(rows[171])["id"]
    corr = write_jsonl(tmp_path / "c.jsonl", [_fix(rid, field="answer.next_action", old="reply_with_kb",
                                                   new="escalate_engineering")])
    out = tmp_path / "out"
    apply_corrections(str(FIXTURES / "triage-faulty"), str(corr), str(out), contract)
    run = run_checks(str(out), contract, checks=["conflicting_answers"], progress=False, workers=1)
    assert run.results[0].findings == []


def test_an_output_that_is_or_holds_the_input_is_refused(tmp_path):
    data = _data(tmp_path)
    corr = write_jsonl(tmp_path / "c.jsonl", [_fix(reason="checked by hand")])
    before = _sha(data / "train.jsonl")
    for out in (data, tmp_path):  # `-o` the dataset itself, or a folder holding it: replacing it would lose it
        with pytest.raises(GateError, match="must not be or contain the input"):
            apply_corrections(str(data), str(corr), str(out))
    assert _sha(data / "train.jsonl") == before


def test_the_corrected_copy_is_found_by_its_check_fingerprint(tmp_path):
    """A release cites its data by `gate check` fingerprints: the recorded output fingerprint is that very value."""
    from gate.store.corrections import corrections_of, record_apply

    data, contract = _data(tmp_path), load_contract(_contract(tmp_path))
    corr = write_jsonl(tmp_path / "c.jsonl", [_fix(), _fix("tri-000003", reason="free words")])
    m = apply_corrections(str(data), str(corr), str(tmp_path / "out"), contract).manifest
    db = str(tmp_path / "g.duckdb")
    assert record_apply(m, str(tmp_path / "out"), db) == 2 and record_apply(m, str(tmp_path / "out"), db) == 0
    run = run_checks(str(tmp_path / "out"), contract, checks=["length"], progress=False, workers=1)
    assert run.fingerprint == m["output_fingerprint"]
    assert run_checks(str(data), contract, checks=["length"], progress=False,
                      workers=1).fingerprint == m["input_fingerprint"]
    assert corrections_of([run.fingerprint], db) == {"free text": 1, "outage-escalates": 1}


def test_the_release_page_shows_how_many_rows_of_its_data_were_corrected_by_rule(tmp_path):
    from gate.dashboard import pages
    from gate.store.corrections import record_apply
    from tests.dashboard_seed import seed_small

    db = str(tmp_path / "g.duckdb")
    info = seed_small(db, scorecards=("triage",), releases=1)  # its data check run has fingerprint fp-triage-1
    empty = pages.release(db, info["releases"][0])
    assert "no recorded corrections" in empty
    applied = [{"id": f"tri-{i:06d}", "split": "train", "row": i, "field": "answer.severity", "old": "low",
                "new": "high", "reason": "rule:outage-escalates" if i < 3 else "typo", "reviewer": "ana",
                "time": "2026-12-05T04:00:00Z", "rule": "outage-escalates" if i < 3 else None} for i in (1, 2, 3)]
    record_apply({"key": "k1", "dataset": "d", "inputs": {}, "outputs": {}, "input_fingerprint": "fp-in",
                  "output_fingerprint": "fp-triage-1", "corrections_sha256": "c", "applied": applied}, "out", db)
    page = pages.release(db, info["releases"][0])
    assert "<td>outage-escalates</td><td class=\"num\">2</td>" in page and "<td>free text</td>" in page


def test_the_record_holds_masked_values_never_the_personal_data_a_correction_carries(tmp_path):
    """The record is shared (dashboard, service): a correction of a user turn that names a customer and her e-mail
    put both, raw, in DuckDB's `corrections.old`/`new` (and a free-text reason that names her too)."""
    import duckdb

    data = _data(tmp_path)
    old = json.loads((data / "train.jsonl").read_text().splitlines()[1])["messages"][1]["content"]
    new = "Hi, this is Ingrid Wexford-Lamb, reach me at ingrid.wexford@gmail.com about the double charge"
    corr = write_jsonl(tmp_path / "c.jsonl", [_fix(field="messages[1].content", old=old, new=new,
                                                   reason="Ingrid Wexford-Lamb asked for her contact to be kept")])
    db = str(tmp_path / "g.duckdb")
    code, text = gate_inprocess("apply", str(data), str(corr), "-o", str(tmp_path / "out"), "--db", db)
    assert code == 0, text
    with duckdb.connect(db, read_only=True) as con:
        (row,) = con.execute("SELECT old, new, reason, field, row_id FROM corrections").fetchall()
    stored = " ".join(str(v) for v in row)
    for secret in ("Ingrid", "Wexford", "ingrid.wexford@gmail.com", "gmail"):
        assert secret not in stored, stored
    assert row[3] == "messages[1].content" and row[4] == "tri-000002"
    assert json.loads((tmp_path / "out" / "train.jsonl").read_text().splitlines()[1])["messages"][1]["content"] == new


def test_the_dashboard_lists_corrections_by_rule_with_masked_reasons(tmp_path):
    """Issue 34 part 3: "the dashboard lists corrections by rule, so evaluators read the same rules"."""
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from gate.dashboard.app import create_dashboard_app
    from gate.service.auth import create_token

    data, contract = _data(tmp_path), _contract(tmp_path)
    db = str(tmp_path / "g.duckdb")
    corr = write_jsonl(tmp_path / "c.jsonl", [
        _fix(), _fix("tri-000003", reviewer="bo"),
        _fix("tri-000001", reason="Ingrid Wexford-Lamb says outages escalate", reviewer="bo")])
    code, text = gate_inprocess("apply", str(data), str(corr), "-o", str(tmp_path / "out"), "-c", str(contract),
                                "--db", db)
    assert code == 0, text
    token = create_token(db, "viewer-1", "viewer")
    client = TestClient(create_dashboard_app(db), headers={"Authorization": f"Bearer {token}"})
    html = client.get("/corrections").text
    by_rule = html.split('id="corrections-by-rule"', 1)[1].split("</table>", 1)[0]
    rows = re.findall(r"<tr><td>(.*?)</td><td class=\"num\">(\d+)</td><td class=\"num\">(\d+)</td>"
                      r"\s*<td class=\"num\">(\d+)</td>", by_rule)
    assert rows == [("outage-escalates", "2", "2", "2"), ("free text", "1", "1", "1")], by_rule
    assert "Wexford" not in html and "Ingrid" not in html and 'id="free-text-reasons"' in html
    assert '<a href="/corrections">Corrections</a>' in client.get("/checks").text
    empty = str(tmp_path / "empty.duckdb")
    token = create_token(empty, "viewer-2", "viewer")
    page = TestClient(create_dashboard_app(empty), headers={"Authorization": f"Bearer {token}"}).get("/corrections")
    assert page.status_code == 200 and "no corrections recorded yet" in page.text
