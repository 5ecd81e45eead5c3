"""The CLI as users and CI see it: exit codes, one-line errors, untouched inputs, no partial reports."""

import hashlib
import json
import subprocess
import sys

import pytest

from tests.conftest import CONTRACTS, gate_inprocess, run_gate, triage_row, write_jsonl

# What run_gate gave its subprocess (CI=true, no GITHUB_ACTIONS), for the tests that call the entry point in-process;
# the ones about the process itself (imports of --help, one bad input end to end) still start `python -m gate`.
pytestmark = pytest.mark.usefixtures("run_gate_env")


def _digest(path):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(path.iterdir()) if p.is_file()}


def test_help_does_not_import_heavy_libraries():
    heavy = ("great_expectations", "pandas", "torch", "presidio_analyzer", "transformers", "datasets", "duckdb",
             "pyarrow", "vllm", "ray")
    code = f"import sys; import gate.cli; print([m for m in {heavy!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    res = run_gate("--help")
    assert res.returncode == 0 and "check" in res.stdout


def test_check_pass_and_fail_exit_codes_reports_and_record(tmp_path):
    good = tmp_path / "good"
    write_jsonl(good / "train.jsonl", [triage_row(i, f"ticket {i} about a broken {i} widget") for i in range(20)])
    db = tmp_path / "g.duckdb"
    only = ("--checks", "contract,exact_duplicate")
    res = gate_inprocess("check", str(good), "--contract", str(CONTRACTS / "triage.yaml"), "--report-dir",
                         str(tmp_path / "rep"), "--db", str(db), *only, split=True)
    assert res.returncode == 0, res.stderr
    assert "PASS" in res.stdout
    report = json.loads((tmp_path / "rep" / "report.json").read_text())
    assert report["verdict"] == "pass" and report["schema"] == "gate.check.report/1"
    assert {c["name"] for c in report["checks"]} >= {"contract", "exact_duplicate"}

    bad = tmp_path / "bad"
    rows = [triage_row(i, f"ticket {i} about a broken {i} widget") for i in range(20)]
    rows[4]["source"] = "carrier-pigeon"
    rows[9] = {**rows[2], "id": "tri-000099"}
    write_jsonl(bad / "train.jsonl", rows)
    res = gate_inprocess("check", str(bad), "-c", str(CONTRACTS / "triage.yaml"), "-o", str(tmp_path / "rep2"),
                         "--db", str(db), *only, split=True)
    assert res.returncode == 100, res.stderr
    report = json.loads((tmp_path / "rep2" / "report.json").read_text())
    assert report["verdict"] == "fail"
    got = {(f["check"], f["split"], f["row"], f["rule"]) for f in report["findings"]}
    assert got == {("contract", "train", 5, "source.allowed"), ("exact_duplicate", "train", 10, "exact_duplicate")}
    md = (tmp_path / "rep2" / "report.md").read_text()
    assert md.startswith("## gate check: ❌ FAIL")
    assert "| `contract` | ❌ fail |" in md

    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    runs = con.execute("SELECT verdict, exit_code, rows FROM runs ORDER BY started_at").fetchall()
    assert runs == [("pass", 0, 20), ("fail", 100, 20)]
    assert con.execute('SELECT count(*) FROM findings WHERE "check" = \'exact_duplicate\'').fetchall() == [(1,)]
    assert con.execute("SELECT count(DISTINCT fingerprint) FROM dataset_versions").fetchall() == [(2,)]
    con.close()


def test_junit_and_github_annotations(tmp_path, monkeypatch):
    import xml.etree.ElementTree as ET

    bad = tmp_path / "bad"
    rows = [triage_row(i, f"ticket {i} about a broken {i} widget") for i in range(5)]
    rows[1]["language"] = "fr"
    write_jsonl(bad / "train.jsonl", rows)
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    res = gate_inprocess("check", str(bad), "-c", str(CONTRACTS / "triage.yaml"), "-o", str(tmp_path / "rep"),
                         "--no-db", "--checks", "contract,exact_duplicate", split=True)
    assert res.returncode == 100
    assert f"::error file={bad / 'train.jsonl'},line=2,title=gate contract::language: language.allowed" in res.stdout
    assert summary.read_text().startswith("## gate check")
    root = ET.parse(tmp_path / "rep" / "junit.xml").getroot()
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert cases["contract"].find("failure") is not None
    assert cases["exact_duplicate"].find("failure") is None


BAD_INPUTS = {
    "malformed": (b'{"id": "tri-000001"}\n{"id": \n', "train.jsonl:2: malformed JSON"),
    "utf8": (b'{"id": "tri-\xc3\x28"}\n', "train.jsonl:1: invalid UTF-8"),
    "not-object": (b"[1, 2, 3]\n", "train.jsonl:1: row is an array"),
    "empty": (b"", "train.jsonl: file is empty"),
}


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_bad_input_is_one_line_exit_1_no_report_input_unchanged(tmp_path, case):
    """In-process for every case but one: "malformed" still runs `python -m gate`, so a real process is seen to
    print the one line and nothing else (no traceback from a thread or a logging handler set up at import)."""
    content, needle = BAD_INPUTS[case]
    ds = tmp_path / "ds"
    ds.mkdir()
    (ds / "train.jsonl").write_bytes(content)
    before = _digest(ds)
    args = ("check", str(ds), "-c", str(CONTRACTS / "triage.yaml"), "-o", str(tmp_path / "rep"),
            "--db", str(tmp_path / "g.duckdb"))
    res = run_gate(*args) if case == "malformed" else gate_inprocess(*args, split=True)
    assert res.returncode == 1
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], res.stderr
    assert "Traceback" not in res.stderr + res.stdout
    assert not (tmp_path / "rep").exists()
    assert not (tmp_path / "g.duckdb").exists()
    assert _digest(ds) == before


def test_old_report_survives_a_failed_run(tmp_path):
    good = tmp_path / "good"
    write_jsonl(good / "train.jsonl", [triage_row(1)])
    rep = tmp_path / "rep"
    args = ("check", str(good), "-c", str(CONTRACTS / "triage.yaml"), "-o", str(rep), "--no-db", "--checks",
            "contract")
    assert gate_inprocess(*args)[0] == 0
    before = (rep / "report.json").read_text()
    (good / "train.jsonl").write_text("{oops\n")
    assert gate_inprocess(*args)[0] == 1
    assert (rep / "report.json").read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["good", "rep"]


def test_missing_file_contract_typo_and_usage(tmp_path):
    res = gate_inprocess("check", str(tmp_path / "nope"), "-c", str(CONTRACTS / "triage.yaml"), "--no-db", split=True)
    assert res.returncode == 1 and "no such file or directory" in res.stderr
    bad = tmp_path / "c.yaml"
    bad.write_text((CONTRACTS / "triage.yaml").read_text().replace("group_key:", "grup_key:"))
    write_jsonl(tmp_path / "ds" / "train.jsonl", [triage_row(1)])
    res = gate_inprocess("check", str(tmp_path / "ds"), "-c", str(bad), "--no-db", split=True)
    assert res.returncode == 1
    assert "unknown key 'grup_key' (did you mean 'group_key'?)" in res.stderr
    assert res.stderr.count("\n") == 1
    res = gate_inprocess("check", str(tmp_path / "ds"), split=True)
    assert res.returncode == 2


def test_a_50_mb_row_is_a_length_finding_not_a_crash(tmp_path):
    row = triage_row(1, "x " * (25 << 20))
    write_jsonl(tmp_path / "ds" / "train.jsonl", [row, triage_row(2)])
    # a real process: this input is over the runner's fork threshold, and forking a pytest-xdist worker (threads
    # running) can deadlock the child
    res = run_gate("check", str(tmp_path / "ds"), "-c", str(CONTRACTS / "triage.yaml"), "-o",
                   str(tmp_path / "rep"), "--no-db", "--checks", "contract,length")
    assert res.returncode == 100, res.stderr
    report = json.loads((tmp_path / "rep" / "report.json").read_text())
    assert [(f["check"], f["row"], f["rule"]) for f in report["findings"]] == [("length", 1, "length.row_chars")]



# Exit codes each command can return, read off its code (gate/commands/*, gate/errors.ExitCode); 1 and 2 always.
COMMAND_EXITS = {
    "check": {0, 100}, "split": {0, 100}, "scrub": {0}, "apply": {0}, "export": {0}, "score": {0, 100}, "demo": {0},
    "train": {0}, "plan": {0}, "probe": {0, 100}, "decide": {0, 100}, "release create": {0}, "release list": {0},
    "release show": {0}, "promote": {0, 100}, "rollback": {0}, "watch": {0, 100}, "serve": {0},
    "token create": {0}, "token revoke": {0}, "token list": {0}, "report-html": {0}, "dashboard": {0},
    "index build": {0}, "schema": {0}, "contract init": {0}, "contract lint": {0}, "scorecard lint": {0},
    "scorecard power": {0},
    "parity": {0, 100}, "review": {0},
}


def _leaf_commands():
    import typer

    from gate.cli import app

    def walk(group, prefix):
        for name, cmd in sorted(group.commands.items()):
            if hasattr(cmd, "commands"):
                yield from walk(cmd, (*prefix, name))
            else:
                yield (*prefix, name)

    return list(walk(typer.main.get_command(app), ()))


def _stated_exits(text: str) -> dict[int, str]:
    """code -> meaning from every 'Exit codes: ...' statement in a help text (parentheses may hold commas)."""
    import re

    flat = " ".join(text.split())
    out: dict[int, str] = {}
    for stmt in re.findall(r"Exit codes: (.*?\.)(?:\s|$)", flat):
        depth, part, parts = 0, "", []
        for ch in stmt.rstrip("."):
            depth += {"(": 1, ")": -1}.get(ch, 0)
            if ch == "," and depth == 0:
                parts.append(part.strip())
                part = ""
            else:
                part += ch
        parts.append(part.strip())
        for p in parts:
            m = re.match(r"(\d+) (.+)", p)
            assert m, f"unreadable exit code statement: {p!r} in {stmt!r}"
            code = int(m.group(1))
            assert out.get(code, m.group(2)) == m.group(2), f"exit {code} stated twice, differently"
            out[code] = m.group(2)
    return out


def test_every_command_help_states_its_exit_codes_correctly():
    """`gate score --help` said "exit 0 complete, 1 incomplete" while BLOCK returns 100. Every command's help now
    ends with the codes it can return; 100 always means the gate failed (BLOCK, a failed check, a refusal), 1 that
    it could not run, 2 a usage error, and no other sentence of the help names a code outside that set."""
    import re

    from typer.testing import CliRunner

    from gate.cli import app

    leaves = {" ".join(c) for c in _leaf_commands()}
    assert leaves == set(COMMAND_EXITS), leaves ^ set(COMMAND_EXITS)
    runner = CliRunner()
    for name, expected in COMMAND_EXITS.items():
        res = runner.invoke(app, [*name.split(), "--help"], terminal_width=100)
        assert res.exit_code == 0, (name, res.output)
        stated = _stated_exits(res.output)
        assert set(stated) == expected | {1, 2}, (name, stated)
        assert stated[2] == "usage error", (name, stated)
        if name != "demo":  # the demo's 1 is "a step did not behave as designed" (its own design check)
            assert "could not run" in stated[1], (name, stated)
        if 100 in stated:
            assert not stated[100].startswith(("could not", "incomplete")), (name, stated)
        flat = " ".join(res.output.split())
        for m in re.finditer(r"\bexit (\d+)", flat):
            assert int(m.group(1)) in stated, (name, m.group(0))
    root = runner.invoke(app, ["--help"], terminal_width=100)
    assert _stated_exits(root.output) == {0: "pass", 100: "gate failed", 1: "the gate could not run",
                                          2: "usage error"}


def test_score_help_matches_what_score_returns_on_block():
    """The statement is checked against behaviour in tests/test_decide_score.py (BLOCK exits 100); here the help
    names that code for BLOCK and no longer calls 1 the only failure."""
    from typer.testing import CliRunner

    from gate.cli import app

    stated = _stated_exits(CliRunner().invoke(app, ["score", "--help"], terminal_width=100).output)
    assert stated[100].startswith("BLOCK") and "incomplete" in stated[1]
