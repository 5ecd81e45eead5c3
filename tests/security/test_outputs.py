"""Issue 27 items 9-11: nothing injected, nothing raw, nothing half-written.

A pull request controls its file names, row ids and contract field names. None of them may inject a GitHub
workflow command into the log (a line starting with `::`), break a line of report.md or the step summary, or
show personal data or a secret in any output; and a run that fails leaves no report.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import duckdb
import pytest

from tests.conftest import gate_inprocess, write_jsonl

EVIL = "train\n::add-mask::hunter2\n::error file=README.md,line=1::pwn\nx"
EMAIL_ID = "jane.roe.leak@example.org"
AWS_ID = "AKIAIOSFODNN7EXAMPLE"
# the hostile split names are mapped (issue 33 item 5: an unmapped file name is refused before it reaches a report)
CONTRACT = """name: sec
version: 1
splits: {train: ["train*"], val: ["val*"]}
messages:
  roles: [user, assistant]
fields:
  id: {type: string, required: true}
  "contact.jane.roe@example.org": {type: string, required: true}
checks:
  pii:
    use_ner: false
"""


def _row(rid: str, text: str, **extra: str) -> dict:
    return {"id": rid, "messages": [{"role": "user", "content": text}, {"role": "assistant", "content": "ok"}],
            **extra}


@pytest.fixture
def gh_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    summary = tmp_path / "step_summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    return summary


def _commands(text: str) -> list[str]:
    """The lines the GitHub runner reads as workflow commands (it trims the line first)."""
    return [line.strip() for line in text.splitlines() if line.strip().startswith("::")]


def _check(tmp_path: Path, *extra: str) -> tuple[int, str, Path, Path]:
    out, db = tmp_path / "out", tmp_path / "g.duckdb"
    (tmp_path / "c.yaml").write_text(CONTRACT)
    code, text = gate_inprocess("check", str(tmp_path / "ds"), "-c", str(tmp_path / "c.yaml"), "-o", str(out),
                                "--db", str(db), "--checks", "contract,pii", *extra)
    return code, text, out, db


def test_a_file_name_with_workflow_commands_injects_nothing(tmp_path: Path, gh_env: Path) -> None:
    write_jsonl(tmp_path / "ds" / f"{EVIL}.jsonl",
                [_row("r1", "mail me at noor.haddad41@example.com", **{"contact.jane.roe@example.org": "x"})])
    code, text, out, _ = _check(tmp_path)
    assert code == 100, text
    # only gate's own annotations are commands, and the file name inside them is escaped
    assert _commands(text) and all(c.startswith(("::error file=", "::warning file=")) for c in _commands(text))
    assert not any("::add-mask::" in c or "::error file=README.md" in c for c in _commands(text)), text
    assert str(tmp_path) in text  # a path is no opaque token: the terminal names the dataset as given
    for name, content in [("report.md", (out / "report.md").read_text()), ("summary", gh_env.read_text()),
                          ("junit.xml", (out / "junit.xml").read_text())]:
        assert _commands(content) == [], (name, _commands(content))
    split = json.loads((out / "report.json").read_text())["dataset"]["splits"][0]
    assert "\n" not in split["split"] and "\n" not in split["file"] and "::add-mask::" in split["split"]


def test_a_file_name_with_workflow_commands_in_an_error_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "ds").mkdir()
    (tmp_path / "ds" / f"{EVIL}.jsonl").write_text(json.dumps(_row("r1", "hi")) + "\nnot json\n")
    code, text, out, _ = _check(tmp_path)
    assert code == 1 and len(text.strip().splitlines()) == 1, text
    assert text.startswith("gate: error: ") and ":2: malformed JSON" in text and _commands(text) == []
    assert not out.exists()


def test_identifiers_that_look_like_personal_data_or_secrets_are_masked(tmp_path: Path, gh_env: Path) -> None:
    """A row id that is an e-mail or an AWS key, a split file named after an e-mail, a contract field name holding
    one: masked in report.md/json, junit.xml, the step summary, annotations, the terminal and DuckDB."""
    write_jsonl(tmp_path / "ds" / "train.jsonl", [_row(EMAIL_ID, "call me on 0044 20 7946 0958"),
                                                  _row(AWS_ID, "my mail is a.b@example.com")])
    write_jsonl(tmp_path / "ds" / "val-jane.doe@example.com.jsonl", [_row("v1", "hello")])
    code, text, out, db = _check(tmp_path)
    assert code == 100, text
    con = duckdb.connect(str(db), read_only=True)
    try:
        record = json.dumps([con.execute(f"SELECT * FROM {t}").fetchall()
                             for t in ("findings", "dataset_versions", "runs", "check_results")], default=str)
        row_ids = {r[0] for r in con.execute("SELECT row_id FROM findings").fetchall()}
    finally:
        con.close()
    assert "j***@e***.org" in row_ids and "AKIA***" in row_ids
    outputs = {p.name: p.read_text() for p in out.iterdir()} | {"summary": gh_env.read_text(), "terminal": text,
                                                                "duckdb": record}
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from gate.dashboard.app import create_dashboard_app
    from gate.service.auth import create_token

    run_id = json.loads((out / "report.json").read_text())["run_id"]
    client = TestClient(create_dashboard_app(str(db)),
                        headers={"Authorization": f"Bearer {create_token(str(db), 'viewer-sec', 'viewer')}"})
    for page in ("/checks", f"/checks/{run_id}", f"/checks/{run_id}?check=pii", f"/checks/{run_id}?check=contract"):
        got = client.get(page)
        assert got.status_code == 200, page
        outputs[f"dashboard {page}"] = got.text
    assert "j***@e***.org" in outputs[f"dashboard /checks/{run_id}?check=contract"]  # the page lists the ids
    for name, content in outputs.items():
        for raw in (EMAIL_ID, AWS_ID, "jane.doe@example.com", "jane.roe@example.org", "a.b@example.com"):
            assert raw not in content, (raw, name)


def test_a_run_that_cannot_be_recorded_leaves_no_report(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "ds" / "train.jsonl", [_row("r1", "hello", **{"contact.jane.roe@example.org": "x"})])
    (tmp_path / "c.yaml").write_text(CONTRACT)
    code, text = gate_inprocess("check", str(tmp_path / "ds"), "-c", str(tmp_path / "c.yaml"), "-o",
                                str(tmp_path / "out"), "--db", str(tmp_path / "missing" / "x.duckdb"),
                                "--checks", "contract")
    assert code == 1 and "cannot open the gate database" in text and len(text.strip().splitlines()) == 1, text
    assert not (tmp_path / "out").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out")]  # no temporary sibling either


def test_a_failed_record_keeps_the_older_report_and_writes_no_new_one(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The record fails after the checks ran (a full disk, a lock): the reports of this run are not written."""
    import gate.store.db as store

    write_jsonl(tmp_path / "ds" / "train.jsonl", [_row("r1", "hello", **{"contact.jane.roe@example.org": "x"})])
    code, text, out, _ = _check(tmp_path)
    assert code == 0, text
    before = (out / "report.json").read_text()

    def broken(*_a: object, **_k: object) -> None:
        from gate.errors import GateError

        raise GateError("disk full", file="g.duckdb")

    monkeypatch.setattr(store, "record_check_run", broken)
    write_jsonl(tmp_path / "ds" / "train.jsonl", [_row("r2", "hello", **{"contact.jane.roe@example.org": "y"})])
    code, text, out, _ = _check(tmp_path)
    assert code == 1 and "disk full" in text, text
    assert (out / "report.json").read_text() == before
    assert os.listdir(tmp_path).count("out") == 1 and not [p for p in os.listdir(tmp_path) if p.startswith(".out")]


# ---------------------------------------------------------------------------------- item 12: $ref loops, at load

LOOPS = {
    "self": ("    $ref: '#'\n", 8),
    "pair": ("    $defs:\n      a: {$ref: '#/$defs/b'}\n      b: {$ref: '#/$defs/a'}\n"
             "    properties:\n      x: {$ref: '#/$defs/a'}\n", 10),
    "allof": ("    type: object\n    allOf:\n      - $ref: '#'\n", 10),
}


@pytest.mark.parametrize("kind", sorted(LOOPS))
def test_a_ref_loop_is_one_line_with_file_and_line_in_check_and_lint(tmp_path: Path, kind: str) -> None:
    body, line = LOOPS[kind]
    contract = tmp_path / "loop.yaml"
    contract.write_text("name: loop\nversion: 1\nmessages:\n  roles: [user, assistant]\noutput:\n  format: json\n"
                        "  schema:\n" + body)
    write_jsonl(tmp_path / "ds" / "train.jsonl", [_row("r1", "hello") | {"messages": [
        {"role": "user", "content": "hi"}, {"role": "assistant", "content": '{"x": 1}'}]}])
    for args in (("contract", "lint", str(contract)),
                 ("check", str(tmp_path / "ds"), "-c", str(contract), "-o", str(tmp_path / "out"), "--no-db")):
        code, text = gate_inprocess(*args)
        assert code == 1 and len(text.strip().splitlines()) == 1, (args, text)
        assert text.startswith(f"gate: error: {contract}:{line}: ") and "loops back" in text, (args, text)
        assert "RecursionError" not in text
    assert not (tmp_path / "out").exists()


def test_a_recursive_schema_through_properties_is_no_loop(tmp_path: Path) -> None:
    contract = tmp_path / "tree.yaml"
    contract.write_text("name: tree\nversion: 1\nmessages:\n  roles: [user, assistant]\noutput:\n  format: json\n"
                        "  schema:\n    type: object\n    properties:\n      child: {$ref: '#'}\n"
                        "    allOf: [{$ref: '#/$defs/n'}]\n    $defs:\n      n: {required: [child]}\n")
    code, text = gate_inprocess("contract", "lint", str(contract), "-q")
    assert code == 0, text


def test_contract_lint_prints_no_raw_field_name(tmp_path: Path) -> None:
    """Lint lists the contract's fields: a field name with newlines and workflow commands, or an e-mail, prints
    as one escaped, masked line."""
    contract = tmp_path / "c.yaml"
    contract.write_text('name: sec\nversion: 1\nmessages:\n  roles: [user, assistant]\nfields:\n'
                        '  "x\\n::add-mask::hunter2\\n::error file=README.md::pwn": {type: string}\n'
                        '  "jane.roe@example.org": {type: string}\n')
    code, text = gate_inprocess("contract", "lint", str(contract))
    assert code == 0, text
    assert _commands(text) == [] and "jane.roe@example.org" not in text, text


def test_a_report_directory_that_is_a_file_is_refused_before_any_work(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "ds" / "train.jsonl", [_row("r1", "hello", **{"contact.jane.roe@example.org": "x"})])
    (tmp_path / "c.yaml").write_text(CONTRACT)
    (tmp_path / "out").write_text("my notes\n")
    code, text = gate_inprocess("check", str(tmp_path / "ds"), "-c", str(tmp_path / "c.yaml"), "-o",
                                str(tmp_path / "out"), "--db", str(tmp_path / "g.duckdb"), "--checks", "contract")
    assert code == 1 and "report directory is a file" in text and len(text.strip().splitlines()) == 1, text
    assert (tmp_path / "out").read_text() == "my notes\n" and not (tmp_path / "g.duckdb").exists()
