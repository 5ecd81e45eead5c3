"""Issue 28 item 8: row checks share one base class (`RowCheck`: the runner does the loop, the counts and the place
of every finding), every check reports scanned/kept/dropped/flagged, a check declares its drop action so `gate scrub`
applies any check, a plugin's too, and a `scrub.operators` key that names nothing fails lint, check and scrub in one
line. The plugin is docs/examples/gate_turns, installed as `pip install` leaves it (a *.dist-info)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import yaml

from gate.contract import load_contract
from gate.data.base import Batch, RowCheck, RowFinding
from gate.data.runner import run_checks
from tests.conftest import ROOT, gate_inprocess, run_gate, write_jsonl

EXAMPLE = ROOT / "docs" / "examples" / "gate_turns"
#: a second plugin that declares its drop action: scrub drops its rows with no operator named
UNANSWERED = '''
from gate.contract.file_schema import NO_OPTIONS
from gate.data.base import RowCheck, RowFinding


class Unanswered(RowCheck):
    name = "unanswered"
    rules = ("unanswered",)
    drop_action = "drop_row"
    options_schema = NO_OPTIONS

    def check_row(self, row):
        return [RowFinding("unanswered", "no answer")] if row["messages"][-1]["role"] != "assistant" else []
'''


def install_example(root: Path) -> dict[str, str]:
    """docs/examples/gate_turns as an installed distribution with its entry points; the environment to find it."""
    site = root / "site"
    shutil.copytree(EXAMPLE, site / "gate_turns")
    dist = site / "gate_turns-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: gate-turns\nVersion: 0.1\n")
    (site / "gate_turns" / "unanswered.py").write_text(UNANSWERED)
    (dist / "entry_points.txt").write_text((EXAMPLE.parent / "entry_points.txt").read_text().replace(
        "[gate.checks]\n", "[gate.checks]\nunanswered = gate_turns.unanswered:Unanswered\n"))
    return {"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}


def _chat(i: int, user_turns: int) -> dict:
    msgs = []
    for t in range(user_turns):
        msgs += [{"role": "user", "content": f"ticket {i} question {t} about the invoice"},
                 {"role": "assistant", "content": f"answer {t} to ticket {i}"}]
    return {"id": f"c{i}", "messages": msgs}


def _contract(root: Path, scrub: dict | None = None, **extra: object) -> Path:
    raw = {"name": "turns", "version": 1, "checks": {"pii": {"use_ner": False}}, **extra}
    if scrub is not None:
        raw["scrub"] = scrub
    path = root / "contract.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def test_a_plugin_scrub_rule_drops_the_rows_the_plugin_flags(tmp_path):
    """`too_many_turns` drops by the contract's operator, `unanswered` by its own declaration."""
    env = install_example(tmp_path)
    rows = [_chat(i, 3 if i in (1, 4) else 1) for i in range(7)]
    rows[6]["messages"].pop()  # c6 ends with the user
    write_jsonl(tmp_path / "data" / "train.jsonl", rows)
    contract = _contract(tmp_path, {"operators": {"too_many_turns": "drop_row"}},
                         checks={"pii": {"use_ner": False}, "too_many_turns": {"max_user_turns": 2}})
    res = run_gate("scrub", str(tmp_path / "data"), "-c", str(contract), "-o", str(tmp_path / "out"), env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    kept = [json.loads(x)["id"] for x in (tmp_path / "out" / "train.jsonl").read_text().splitlines()]
    assert kept == ["c0", "c2", "c3", "c5"]
    manifest = json.loads((tmp_path / "out" / "MANIFEST.json").read_text())
    assert [e["row"] for e in manifest["by_rule"]["too_many_turns"]["dropped"]] == [2, 5]
    assert [e["id"] for e in manifest["by_rule"]["unanswered"]["dropped"]] == ["c6"]


def test_an_operator_key_that_names_nothing_fails_lint_check_and_scrub_in_one_line(tmp_path):
    write_jsonl(tmp_path / "data" / "train.jsonl", [_chat(i, 1) for i in range(3)])
    contract = _contract(tmp_path, {"operators": {"URL": "keep", "EMAIL_ADRESS": "drop_row"}})
    line = next(i for i, t in enumerate(contract.read_text().splitlines(), 1) if "EMAIL_ADRESS" in t)
    for args in (("contract", "lint", str(contract)),
                 ("scrub", str(tmp_path / "data"), "-c", str(contract), "-o", str(tmp_path / "out")),
                 ("check", str(tmp_path / "data"), "-c", str(contract), "--checks", "contract", "--no-db", "-q",
                  "-o", str(tmp_path / "rep"))):
        res = gate_inprocess(*args, split=True)
        lines = res.stderr.strip().splitlines()
        assert res.returncode == 1 and len(lines) == 1 and "Traceback" not in res.stderr, (args, res.stderr)
        assert f"{contract}:{line}" in lines[0] and "'EMAIL_ADRESS'" in lines[0], lines
        assert "did you mean 'EMAIL_ADDRESS'" in lines[0], lines
    assert not (tmp_path / "out").exists()
    # what a key may name: entities, pii rules, secret kinds, rules, rule families, checks
    good = _contract(tmp_path, {"operators": {"EMAIL_ADDRESS": "hash", "pii.URL": "keep", "jwt": "keep",
                                              "secret.github_token": "drop_row", "messages.empty": "keep",
                                              "contract.refusal": "drop_row", "field": "drop_row",
                                              "near_duplicate": "keep", "leakage": "keep"}})
    assert load_contract(good).raw["scrub"]["operators"]["field"] == "drop_row"


def test_every_check_counts_scanned_kept_dropped_flagged_the_contract_check_too(tmp_path, triage_contract):
    rows = [{"id": "e1", "messages": [{"role": "user", "content": ""}, {"role": "assistant", "content": "{}"}]},
            {"id": "e2", "messages": [{"role": "user", "content": "hello there"}]},
            {"id": "ok", "messages": [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "{}"}]}]
    write_jsonl(tmp_path / "d" / "train.jsonl", rows)
    run = run_checks(str(tmp_path / "d"), triage_contract, checks=["contract", "exact_duplicate", "length"],
                     workers=1, progress=False)
    for res in run.results:
        assert {"scanned", "kept", "dropped", "flagged_rows"} <= set(res.counts), (res.name, res.counts)
    counts = next(r for r in run.results if r.name == "contract").counts
    # row 1 has an empty user turn (scrub drops it: `messages.empty`); every row breaks some rule of triage.yaml
    assert counts["scanned"] == 3 and counts["dropped"] == 1 and counts["kept"] == 2
    assert counts["flagged_rows"] == 3


class _Long(RowCheck):
    name = "long_user"
    options_schema = {"type": "object"}

    def check_row(self, row):
        text = row["messages"][0]["content"]
        return [RowFinding("long_user", "long", "messages[0].content")] if len(text) > 5 else []


def test_a_row_check_returns_what_it_found_and_the_runner_places_it(triage_contract):
    check = _Long(triage_contract)
    rows = [(3, {"id": 7, "messages": [{"role": "user", "content": "a long question"}]}),
            (4, {"id": "x", "messages": [{"role": "user", "content": "hi"}]}),
            (9, {"messages": [{"role": "user", "content": "another long one"}]})]
    check.reduce(check.map(Batch("val", "val.jsonl", rows)))
    res = check.result()
    assert [(f.check, f.split, f.row, f.row_id, f.field) for f in res.findings] == [
        ("long_user", "val", 3, "7", "messages[0].content"), ("long_user", "val", 9, None, "messages[0].content")]
    assert res.counts["scanned"] == 3 and res.counts["flagged_rows"] == 2 and res.counts["dropped"] == 0
    assert res.counts["kept"] == 3 and _Long.incremental == "per_row"
