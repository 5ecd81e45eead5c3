"""`gate contract init` and `gate contract lint` (issue 18 item 13): a first contract inferred from the data passes
`gate check` on that data; lint validates without data and lists what every check will use."""

import json
import random

import pytest
import yaml

from gate.contract import load_contract
from gate.contract.init import infer
from gate.names import CHECK_NAMES
from tests.conftest import ROOT, gate_inprocess, write_jsonl

FIXTURES = ROOT / "fixtures" / "datasets"


def _gate(*args):
    """The real entry point in this process (stdout and stderr apart, as a subprocess gave them): every test here
    asserts exit codes, messages and files, nothing about the process."""
    return gate_inprocess(*map(str, args), split=True)


def _sql_rows(n, seed, start=0, dbs=range(40)):
    """A SQL-assistant chat set of the kind a new user brings: a schema in the system prompt, a question, a query."""
    rng = random.Random(seed)
    tables = ["orders", "invoices", "shipments", "products", "tickets"]
    rows = []
    for i in range(n):
        table, col = rng.choice(tables), rng.choice(["status", "total", "created_at", "region"])
        dialect = rng.choice(["postgres", "sqlite", "duckdb"])
        rows.append({
            "id": f"sql-{start + i:05d}", "db_id": f"db-{rng.choice(dbs):03d}", "dialect": dialect,
            "difficulty": rng.choice([1, 2, 3]),
            "messages": [
                {"role": "system", "content": f"you write one {dialect} query per question, nothing else"},
                {"role": "user", "content": f"How many rows of {table} have {col} value number {i} "
                                            f"and amount above {rng.randrange(10, 900)}?"},
                {"role": "assistant", "content": f"SELECT count(*) FROM {table} WHERE {col} = {i} "
                                                 f"AND amount > {rng.randrange(10, 900)};"},
            ]})
    return rows


def test_init_on_a_sql_assistant_set_infers_and_passes_gate_check(tmp_path):
    data = tmp_path / "sql"
    data.mkdir()
    write_jsonl(data / "train.jsonl", _sql_rows(120, 1))
    write_jsonl(data / "test.jsonl", _sql_rows(30, 2, start=50000, dbs=range(900, 905)))  # other databases
    out = tmp_path / "contract.yaml"
    res = _gate("contract", "init", data, "-o", out)
    assert res.returncode == 0, res.stderr
    assert "contract check on the dataset: PASS" in res.stderr
    text = out.read_text()
    assert "# rows sharing this value stay in one split" in text  # every rule says where it came from
    c = yaml.safe_load(text)
    assert c["fields"]["id"] == {"type": "string", "required": True, "unique": True, "pattern": "^sql-[0-9]{5}$"}
    assert c["fields"]["dialect"]["allowed"] == ["duckdb", "postgres", "sqlite"]
    assert c["fields"]["difficulty"] == {"type": "integer", "required": True, "allowed": [1, 2, 3]}
    assert c["group_key"] == "db_id"
    assert c["messages"] == {"roles": ["system", "user", "assistant"], "system_prompt": "required",
                             "min_messages": 3, "max_messages": 3, "final_role": "assistant"}
    assert "output" not in c  # SQL text, not JSON
    assert c["limits"]["max_row_chars"] >= max(sum(len(m["content"]) for m in r["messages"])
                                               for r in _sql_rows(120, 1))
    res = _gate("check", data, "-c", out, "--no-db", "-o", tmp_path / "rep", "-q")
    assert res.returncode == 0, res.stdout + res.stderr
    # the inferred rules bite: a new dialect and an unknown role are findings
    bad = _sql_rows(3, 3)
    bad[0]["dialect"] = "oracle"
    bad[1]["messages"][1]["role"] = "robot"
    write_jsonl(data / "train.jsonl", _sql_rows(120, 1) + bad)
    res = _gate("check", data, "-c", out, "--no-db", "-o", tmp_path / "rep2", "--checks", "contract", "-q")
    assert res.returncode == 100, res.stdout + res.stderr


@pytest.mark.parametrize("fixture", ["triage-clean", "tool-use-clean"])
def test_init_on_the_fixtures_passes_the_contract_check(tmp_path, fixture):
    out = tmp_path / "c.yaml"
    res = _gate("contract", "init", FIXTURES / fixture, "-o", out)
    assert res.returncode == 0 and "contract check on the dataset: PASS" in res.stderr, res.stderr
    c = load_contract(out)
    assert c.group_key == "customer" and c.sources is not None and c.languages == ("en",)
    if fixture == "tool-use-clean":
        shipped = load_contract(ROOT / "contracts" / "tool-use.yaml")
        assert {t.name for t in c.tools} == {t.name for t in shipped.tools}
    else:
        assert c.output_format == "json" and set(c.output_schema["required"]) == {"product", "severity",
                                                                                 "next_action"}


def test_init_on_planted_faults_reports_what_no_rule_accepts(tmp_path):
    res = _gate("contract", "init", FIXTURES / "triage-faulty", "-o", tmp_path / "c.yaml")
    assert res.returncode == 0, res.stderr
    assert "finding(s) no inferred rule can accept" in res.stderr and "row.schema" in res.stderr


def test_init_refuses_to_overwrite_and_writes_nothing_on_bad_input(tmp_path):
    out = tmp_path / "c.yaml"
    out.write_text("keep me")
    res = _gate("contract", "init", FIXTURES / "triage-clean", "-o", out, "--no-verify")
    assert res.returncode == 1 and "exists already (use --force" in res.stderr and out.read_text() == "keep me"
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    res = _gate("contract", "init", empty, "-o", tmp_path / "new.yaml")
    assert res.returncode == 1 and "Traceback" not in res.stderr and not (tmp_path / "new.yaml").exists()


def test_infer_without_messages_or_repeats_leaves_keys_out(tmp_path):
    write_jsonl(tmp_path / "train.jsonl", [{"id": f"r{i}", "messages": [{"role": "user", "content": "hi"},
                                                                         {"role": "assistant", "content": "yo"}]}
                                           for i in range(3)])
    contract, _, notes = infer(str(tmp_path))
    assert "group_key" not in contract and any("no group_key" in n for n in notes)


def test_lint_lists_every_check_and_what_it_uses():
    res = _gate("contract", "lint", ROOT / "contracts" / "triage.yaml")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0].startswith(f"OK {ROOT / 'contracts' / 'triage.yaml'}: contract triage 1.0")
    by_check = {ln.split()[0]: ln for ln in lines[1:]}
    assert set(by_check) == set(CHECK_NAMES)
    assert "group_key customer" in by_check["group_split"]
    assert "skipped" in by_check["template"] and "no tokenizer" in by_check["template"]
    assert "threshold=0.8 (default)" in by_check["near_duplicate"]
    assert "1 evaluation set(s)" in by_check["contamination"] and "NOT FOUND" not in by_check["contamination"]


def test_lint_a_bad_contract_is_one_line_exit_1(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("name: x\nversion: 1\nchecks:\n  near_duplicate: {threshold: 0.9}\nevaluation_sets: [gone.jsonl]\n")
    res = _gate("contract", "lint", p)
    # a missing evaluation set fails `gate check` (exit 1), so lint fails with it, at its line (issue 28 item 7)
    assert res.returncode == 1 and f"{p}:5" in res.stderr and "evaluation set not found" in res.stderr
    p.write_text("name: x\nversion: 1\nchecks:\n  near_duplicate: {threshold: 0.9}\n")
    res = _gate("contract", "lint", p)
    assert res.returncode == 0 and "threshold=0.9;" in res.stdout.replace("0.9,", "0.9;")
    p.write_text("name: x\nversion: 1\nroles: [user]\n")
    res = _gate("contract", "lint", p)
    assert res.returncode == 1 and res.stdout == ""
    assert res.stderr.strip().splitlines() == [
        f"gate: error: {p}:3: roles: unknown key 'roles' here (did you mean 'messages.roles'? it is also read as "
        "text.roles, checks.pii.roles, checks.secret.roles)"]


def _card_and_contract(tmp_path):
    """A contract listing a JSONL suite and, by mistake, a scorecard YAML in `evaluation_sets`."""
    (tmp_path / "ok.jsonl").write_text('{"id": "a", "prompt": "what is the capital of france today"}\n')
    (tmp_path / "card.yaml").write_text("name: card\nversion: '1'\nsuites:\n  - name: s\n    path: suites/s.jsonl\n")
    p = tmp_path / "c.yaml"
    p.write_text("name: x\nversion: 1\nevaluation_sets:\n  - ok.jsonl\n  - card.yaml\n")
    return p


def test_lint_fails_at_the_contract_line_on_every_file_gate_check_cannot_read(tmp_path):
    """Issue 32 item 6: lint said OK (exit 0) for contracts `gate check` fails with exit 1: a scorecard listed as an
    evaluation set, an evaluation set with a bad line, a local tokenizer directory that is not there. One line,
    the contract's file:line and the file."""
    p = _card_and_contract(tmp_path)
    res = _gate("contract", "lint", p)
    assert res.returncode == 1 and res.stdout == "", res.stdout
    (line,) = res.stderr.strip().splitlines()
    assert line.startswith(f"gate: error: {p}:5: evaluation_sets[1]: ") and str(tmp_path / "card.yaml") in line
    (tmp_path / "bad.jsonl").write_text('{"id": "a", "prompt": "x"}\n{"id": \n')
    p.write_text("name: x\nversion: 1\nevaluation_sets: [ok.jsonl, bad.jsonl]\n")
    res = _gate("contract", "lint", p)
    assert res.returncode == 1 and f"{p}:3: evaluation_sets[1]" in res.stderr
    assert f"{tmp_path / 'bad.jsonl'}:2: malformed JSON" in res.stderr
    p.write_text("name: x\nversion: 1\ntokenizer:\n  path: ./no-such-tokenizer\n")
    res = _gate("contract", "lint", p)
    assert res.returncode == 1 and res.stderr.strip().splitlines() == [
        f"gate: error: {p}:4: tokenizer.path: tokenizer not found: {tmp_path / 'no-such-tokenizer'}"]
    p.write_text("name: x\nversion: 1\nevaluation_sets: [ok.jsonl]\n")
    assert _gate("contract", "lint", p).returncode == 0


def test_a_scorecard_in_evaluation_sets_says_sets_are_jsonl_suites(tmp_path):
    """Issue 32 item 7: `gate check` said "card.yaml:1: malformed JSON: Expecting value at column 1"."""
    p = _card_and_contract(tmp_path)
    write_jsonl(tmp_path / "ds" / "train.jsonl", [{"messages": [{"role": "user", "content": "hello there"},
                                                                {"role": "assistant", "content": "hi"}]}])
    res = _gate("check", tmp_path / "ds", "-c", p, "--checks", "contamination", "--no-db", "-o", tmp_path / "rep")
    assert res.returncode == 1
    (line,) = res.stderr.strip().splitlines()
    assert line == (f"gate: error: {tmp_path / 'card.yaml'}:1: evaluation sets are JSONL suites (one JSON object per "
                    "line), found a scorecard (its suites: suites/s.jsonl): list the suite files in evaluation_sets")


def _chat(i, answer, language="en", system=True):
    msgs = [{"role": "user", "content": f"question number {i} about the parcel"},
            {"role": "assistant", "content": answer}]
    if system:
        msgs.insert(0, {"role": "system", "content": "you answer support questions"})
    return {"id": f"c-{i:05d}", "language": language, "messages": msgs}


def test_init_infers_from_the_majority_and_leaves_outliers_as_findings(tmp_path):
    """Issue 33 item 4: 2 empty answers in 400 rows (and 1 row in a stray language, 1 without the system prompt)
    must not make the contract bless them; the comments say from how many rows each rule came."""
    rows = [_chat(i, f"answer {i}", language="de" if i % 4 == 0 else "en") for i in range(400)]
    rows[7]["messages"][-1]["content"] = ""
    rows[9]["messages"][-1]["content"] = "   "
    rows[11]["language"] = "xx"
    rows[13] = _chat(13, "answer 13", system=False)
    data = tmp_path / "d"
    write_jsonl(data / "train.jsonl", rows)
    out = tmp_path / "c.yaml"
    res = _gate("contract", "init", data, "-o", out)
    assert res.returncode == 0, res.stderr
    c = yaml.safe_load(out.read_text())
    assert "allow_empty_assistant" not in c["messages"]
    assert c["messages"]["system_prompt"] == "required" and c["languages"] == ["de", "en"]
    text = " ".join(line[2:] for line in out.read_text().splitlines() if line.startswith("# "))  # the comments
    assert "an empty assistant answer in 2 row(s) (under 1%: not allowed" in text
    assert "system prompt first in 399 (required)" in text and "1 row(s) without the system prompt" in text
    assert "the `language` column names in 400 of 400 rows; 1 rare value(s) in 1 row(s)" in text
    # the outliers are the first check's findings, and the verify line says so
    assert "contract check on the dataset: 4 finding(s)" in res.stderr, res.stderr
    res = _gate("check", data, "-c", out, "--no-db", "-o", tmp_path / "rep", "--checks", "contract", "-q")
    assert res.returncode == 100
    found = json.loads((tmp_path / "rep" / "report.json").read_text())["findings"]
    assert sorted(f["row"] for f in found) == [8, 10, 12, 14]


def test_init_allows_empty_answers_and_many_languages_when_they_are_common(tmp_path):
    langs = [f"l{k}" for k in range(25)]  # more languages than an allowed set holds: still written
    rows = [_chat(i, "" if i % 10 == 0 else f"answer {i}", language=langs[i % 25]) for i in range(200)]
    contract, why, _ = infer(str(_written(tmp_path, rows)))
    assert contract["messages"]["allow_empty_assistant"] is True and "(allow_empty_assistant: true)" in \
        why["messages"]
    assert contract["languages"] == sorted(langs)


def test_init_without_a_language_column_says_why_no_languages(tmp_path):
    contract, _, notes = infer(str(_written(tmp_path, [{k: v for k, v in _chat(i, "a").items() if k != "language"}
                                                       for i in range(3)])))
    assert "languages" not in contract and any("no `language` column" in n for n in notes)


def _written(tmp_path, rows):
    write_jsonl(tmp_path / "w" / "train.jsonl", rows)
    return tmp_path / "w"
