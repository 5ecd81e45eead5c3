"""No planted personal data or secret reaches a report, an annotation or the database."""

import json
import re

import duckdb
import pytest

from tests.conftest import CONTRACTS, FIXTURES, run_gate


def _field(row, path):
    node = row
    for part in re.findall(r"\w+|\[\d+\]", path):
        node = node[int(part[1:-1])] if part.startswith("[") else node[part]
    return node


@pytest.mark.parametrize("kind", ["triage", "tool-use"])
def test_planted_values_never_leave_the_dataset(tmp_path, kind):
    ds = FIXTURES / f"{kind}-faulty"
    db = tmp_path / "g.duckdb"
    res = run_gate("check", str(ds), "-c", str(CONTRACTS / f"{kind}.yaml"), "-o", str(tmp_path / "rep"),
                   "--db", str(db), env={"GITHUB_ACTIONS": "true"})
    assert res.returncode == 100, res.stderr
    report = json.loads((tmp_path / "rep" / "report.json").read_text())
    rows = {split: (ds / f"{split}.jsonl").read_text().splitlines() for split in ("train", "val", "test")}
    values = set()
    for f in report["findings"]:
        if f["check"] in ("pii", "secret"):
            start, end = map(int, re.search(r"at characters (\d+)-(\d+)", f["message"]).groups())
            text = _field(json.loads(rows[f["split"]][f["row"] - 1]), f["field"])
            values.add(text[start:end])
    assert len(values) >= 12
    con = duckdb.connect(str(db), read_only=True)
    dump = []
    for (table,) in con.execute("SELECT table_name FROM information_schema.tables").fetchall():
        dump += [str(r) for r in con.execute(f'SELECT * FROM "{table}"').fetchall()]
    con.close()
    outputs = {p.name: p.read_text() for p in (tmp_path / "rep").iterdir()}
    outputs["stdout"] = res.stdout + res.stderr
    outputs["duckdb"] = "\n".join(dump)
    for value in values:
        probes = {value, value.strip()} | ({value.replace(" ", "")} if len(value) > 8 else set())
        for name, text in outputs.items():
            for probe in probes:
                assert probe not in text, f"{probe[:3]}… leaked into {name}"
