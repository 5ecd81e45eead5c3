"""What fails the gate comes first wherever findings are capped or read top down.

A real instruction set gives a check hundreds of warnings (a story's character, a placeholder e-mail) and a few
errors. In file order, report.md's ten examples, junit's failure text, the 20 pull-request annotations and the
dashboard's first page of a check were all warnings, and the error that failed the gate was in none of them; every
annotation of a failed check was an `::error` on the diff, the placeholders too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import gate_inprocess, write_jsonl

N_WARN = 30


def _rows() -> list[dict]:
    # placeholders first (warnings: "a stock placeholder value"), the one personal address last (an error)
    rows = [{"id": f"w{i:02d}", "messages": [
        {"role": "user", "content": f"Send reminder {i} to john.doe@example.com please."},
        {"role": "assistant", "content": "Done."}]} for i in range(N_WARN)]
    rows.append({"id": "err", "messages": [
        {"role": "user", "content": "Please write to maria.gonzalez84@gmail.com about my invoice."},
        {"role": "assistant", "content": "Done."}]})
    return rows


@pytest.fixture
def checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_gate_env: None) -> tuple[Path, str]:
    data = write_jsonl(tmp_path / "data" / "train.jsonl", _rows()).parent
    contract = tmp_path / "c.yaml"
    contract.write_text("name: c\nversion: 1\nchecks:\n  pii:\n    use_ner: false\n")
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    res = gate_inprocess("check", str(data), "-c", str(contract), "--checks", "pii", "-o", str(tmp_path / "rep"),
                         "--db", str(tmp_path / "g.duckdb"), "--limit", "max_report_findings=3", "-q", split=True)
    assert res.returncode == 100, res.stdout + res.stderr
    return tmp_path, res.stdout


def test_the_error_that_failed_the_gate_leads_every_capped_view(checked: tuple[Path, str]) -> None:
    tmp, stdout = checked
    report = json.loads((tmp / "rep" / "report.json").read_text())  # capped at 3 of the 31 findings
    assert [(f["row_id"], f["severity"]) for f in report["findings"]] == [
        ("err", "error"), ("w00", "warning"), ("w01", "warning")]
    assert report["findings_omitted"]["by_check"] == {"pii": N_WARN + 1 - 3}

    md = (tmp / "rep" / "report.md").read_text()
    examples = [line for line in md.splitlines() if line.startswith("| train |") and "pii." in line]
    assert len(examples) == 10 and "| err |" in examples[0] and "EMAIL_ADDRESS" in examples[0]

    junit = (tmp / "rep" / "junit.xml").read_text()
    body = junit[junit.index("<failure"):]
    assert body.index("train:31 ") < body.index("train:1 ")

    # the verdict line says how many of the findings fail the gate
    assert f"{N_WARN + 1} finding(s) (1 error(s))," in stdout, stdout

    ann = [line for line in stdout.splitlines() if line.startswith("::")]
    assert len(ann) == 20  # capped per check
    assert ann[0].startswith("::error ") and "line=31," in ann[0]
    assert all(line.startswith("::warning ") for line in ann[1:])  # a placeholder is never an ::error on the diff


def test_the_record_pages_and_the_api_show_errors_first(checked: tuple[Path, str]) -> None:
    tmp, _ = checked
    from gate.store import service, views
    from gate.store.db import connect

    db = str(tmp / "g.duckdb")
    with connect(db, read_only=True) as con:
        run_id = con.execute("SELECT run_id FROM runs").fetchall()[0][0]
        static = views.check_run(con, run_id, per_check=5)
        paged = views.check_run(con, run_id, limit=4)
    assert [f["severity"] for f in static["findings"]] == ["error"] + ["warning"] * 4
    assert static["findings"][0]["row_id"] == paged["findings"][0]["row_id"] == "err"
    assert [f["row_id"] for f in service.api_findings(db, run_id, 2)] == ["err", "w00"]


def test_an_error_the_threshold_allows_is_annotated_as_a_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  run_gate_env: None) -> None:
    data = write_jsonl(tmp_path / "data" / "train.jsonl", _rows()).parent
    contract = tmp_path / "c.yaml"
    contract.write_text("name: c\nversion: 1\nthresholds: {max_findings: {pii: 1}}\n"
                        "checks:\n  pii:\n    use_ner: false\n")
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    res = gate_inprocess("check", str(data), "-c", str(contract), "--checks", "pii", "--no-db",
                         "-o", str(tmp_path / "rep"), "-q", split=True)
    assert res.returncode == 0, res.stdout + res.stderr
    ann = [line for line in res.stdout.splitlines() if line.startswith("::")]
    assert ann and all(line.startswith("::warning ") for line in ann) and "line=31," in ann[0]

