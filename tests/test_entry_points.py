"""A third-party check and scorer, each one file in a throwaway package, found through the entry points
`gate.checks` / `gate.scorers` (issue 20 item 1): no gate file is edited to add them.

The package is a directory on PYTHONPATH with a `*.dist-info/entry_points.txt`, which is what `pip install`
leaves behind, so importlib.metadata finds it as it finds any installed distribution. Every run is a real `gate`
process: the registry is read once per process, as in production.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from gate.testing.fake_openai import FakeOpenAI
from tests.conftest import CONTRACTS, run_gate, triage_row, write_jsonl

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def _readme_file(first_line: str) -> str:
    """A file of the README's "Extending gate" section: the plugin tested here is the one the README shows."""
    start = README.index(f"```python\n{first_line}\n") + len("```python\n")
    return README[start:README.index("```", start)]


CHECK = _readme_file("# mypkg/shout.py: flags a user turn written in capitals only")
SCORER = _readme_file("# mypkg/length.py: a scorer; gates may reference only its declared keys")

ENTRY_POINTS = """\
[gate.checks]
shout = mypkg.shout:ShoutCheck

[gate.scorers]
answer_length = mypkg.length:AnswerLength
"""


@pytest.fixture
def fake():
    srv = FakeOpenAI().start()
    yield srv
    srv.kill()


def _plugin(root: Path) -> dict[str, str]:
    pkg = root / "site" / "mypkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "shout.py").write_text(CHECK)
    (pkg / "length.py").write_text(SCORER)
    dist = root / "site" / "gate_plug_demo-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: gate-plug-demo\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(ENTRY_POINTS)
    return {"PYTHONPATH": os.pathsep.join([str(root / "site"), os.environ.get("PYTHONPATH", "")])}


def _contract(root: Path, shout: object) -> Path:
    doc = yaml.safe_load((CONTRACTS / "triage.yaml").read_text())
    doc.setdefault("checks", {})["shout"] = shout
    path = root / "contract.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _rows(shouting: set[int], n: int = 6) -> list[dict]:
    return [triage_row(i, "MY INVOICE IS CHARGED TWICE" if i in shouting else None) for i in range(n)]


def _report(out: Path, check: str) -> tuple[dict, list[int]]:
    """The check's section of report.json and the lines of its findings."""
    doc = json.loads((out / "report.json").read_text())
    section = next(c for c in doc["checks"] if c["name"] == check)
    return section, [f["row"] for f in doc["findings"] if f["check"] == check]


def test_a_third_party_check_runs_in_gate_check_with_its_options_validated(tmp_path):
    env = _plugin(tmp_path)
    data = tmp_path / "data"
    write_jsonl(data / "train.jsonl", _rows({2}))
    names = run_gate("check", "--help", env=env)
    assert "shout" in names.stdout  # the CLI's list of checks comes from the registry
    res = run_gate("check", str(data), "-c", str(_contract(tmp_path, {"min_letters": 3})), "--checks",
                   "contract,shout", "-o", str(tmp_path / "out"), "--no-db", "-q", env=env)
    assert res.returncode == 100, res.stdout + res.stderr
    shout, rows = _report(tmp_path / "out", "shout")
    assert shout["status"] == "fail" and rows == [3]  # the 1-based line of row 2
    # its options schema is the contract loader's: a wrong value is one line naming the file, line and key
    bad = _contract(tmp_path, {"min_letters": "three"})
    res = run_gate("check", str(data), "-c", str(bad), "--checks", "shout", "--no-db", "-q", env=env)
    line = next(i for i, t in enumerate(bad.read_text().splitlines(), 1) if "min_letters" in t)
    assert res.returncode == 1 and "Traceback" not in res.stderr
    assert f"{bad}:{line}" in res.stderr and "'three' is not of type 'integer'" in res.stderr, res.stderr


def test_a_third_party_check_runs_incrementally_against_the_index(tmp_path):
    env = _plugin(tmp_path)
    repo = tmp_path / "repo"
    data = repo / "data"
    write_jsonl(data / "train.jsonl", _rows({1}))

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)

    git("init", "-q")
    git("config", "user.email", "ci@example.org")
    git("config", "user.name", "ci")
    git("add", "-A")
    git("commit", "-qm", "base")
    write_jsonl(data / "train.jsonl", _rows({1, 4}, n=8))  # row 4 shouts now, and two rows are appended
    git("commit", "-qam", "change")
    contract = str(_contract(tmp_path, {}))
    res = run_gate("check", str(data), "-c", contract, "--base", "HEAD~1", "--index", str(tmp_path / "idx"),
                   "--checks", "contract,exact_duplicate,shout", "-o", str(tmp_path / "out"), "--no-db", "-q",
                   env=env)
    assert res.returncode == 100, res.stdout + res.stderr
    shout, rows = _report(tmp_path / "out", "shout")
    # the changed row only: row 1 shouted at the base already (old news), rows 6 and 7 do not shout
    assert rows == [5]
    assert shout["counts"]["changed_rows"] == 3 and shout["counts"]["scanned"] == 3


def test_a_third_party_scorer_scores_a_scorecard_and_its_keys_bind_gates(tmp_path, fake):
    env = _plugin(tmp_path)
    write_jsonl(tmp_path / "suite.jsonl", [{"id": f"q{i}", "messages": [{"role": "user", "content": f"q {i}"}],
                                            "category": "c", "expected": "x"} for i in range(3)])
    card = {"name": "plug", "version": "1", "suites": [{"name": "s", "path": "suite.jsonl"}],
            "decoding": {"temperature": 0.0, "max_tokens": 8},
            "scorers": [{"name": "len", "type": "answer_length", "options": {"max_chars": 1000}}]}
    path = tmp_path / "card.yaml"
    path.write_text(yaml.safe_dump(card))
    res = run_gate("score", "tiny", "--scorecard", str(path), "--engine", "url", "--base-url", fake.url,
                   "--model-hash", "h", "--db", str(tmp_path / "g.duckdb"), "--out", str(tmp_path / "o"), env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    text = "".join(p.read_text(errors="replace") for p in (tmp_path / "o").rglob("*.json"))
    assert '"short"' in text and '"chars"' in text  # its metrics are in the outcome
    # a gate may reference only the keys the scorer declares
    card["gates"] = [{"name": "g", "scorer": "len", "metric": "long", "rule": "absolute", "threshold": 0.5}]
    path.write_text(yaml.safe_dump(card))
    res = run_gate("score", "tiny", "--scorecard", str(path), "--engine", "url", "--base-url", fake.url,
                   "--model-hash", "h", "--db", str(tmp_path / "g.duckdb"), "--out", str(tmp_path / "o2"), env=env)
    assert res.returncode == 1 and "Traceback" not in res.stderr
    assert "has no metric 'long' (it has chars, short)" in res.stderr, res.stderr


FLAKY = """\
from gate.score.types import Score


class Flaky:
    type = "flaky"
    keys = ("ok",)
    primary = "ok"
    options_schema = {"type": "object", "additionalProperties": False, "properties": {}}

    def score(self, item, response):
        if item.id in ("q1", "q3"):
            raise TypeError("flaky on " + item.id)
        return Score({"ok": 1.0}, None, "fine")
"""


def test_a_scorer_that_raises_is_counted_on_the_console_line_of_its_run(tmp_path, fake):
    """`gate score` printed "6 items, 0 cached" for a run whose scorer raised on two items: the errors were only in
    scores.md and the decision. The run's console line says them."""
    env = _plugin(tmp_path)
    (tmp_path / "site" / "mypkg" / "flaky.py").write_text(FLAKY)
    eps = tmp_path / "site" / "gate_plug_demo-0.1.dist-info" / "entry_points.txt"
    eps.write_text(ENTRY_POINTS + "flaky = mypkg.flaky:Flaky\n")
    write_jsonl(tmp_path / "suite.jsonl", [{"id": f"q{i}", "messages": [{"role": "user", "content": f"q {i}"}],
                                            "category": "c", "expected": "x"} for i in range(5)])
    card = {"name": "plug", "version": "1", "suites": [{"name": "s", "path": "suite.jsonl"}],
            "decoding": {"temperature": 0.0, "max_tokens": 8}, "scorers": [{"name": "f", "type": "flaky"}]}
    (tmp_path / "card.yaml").write_text(yaml.safe_dump(card))
    res = run_gate("score", "tiny", "--scorecard", str(tmp_path / "card.yaml"), "--engine", "url", "--base-url",
                   fake.url, "--model-hash", "h", "--db", str(tmp_path / "g.duckdb"), "--out", str(tmp_path / "o"),
                   env=env)
    line = next((ln for ln in res.stdout.splitlines() if " items, " in ln), "")
    assert "5 items" in line and "2 scorer error(s)" in line, res.stdout + res.stderr
