"""Issue 33 item 10: report.md says, per failing check, what to do next (the scrub command, the contract key, the
doc section), and the scrub command it prints runs as printed."""

from __future__ import annotations

import re
import shlex

from tests.conftest import gate_inprocess, triage_row, write_jsonl


def test_report_md_names_the_next_step_of_each_failing_check_and_its_scrub_command_runs(tmp_path):
    rows = [triage_row(i, f"my parcel number {i} never arrived at the depot in the town of {i}") for i in range(6)]
    data = write_jsonl(tmp_path / "my data" / "train.jsonl", [*rows, {**rows[1], "id": "tri-000099"}]).parent
    contract = tmp_path / "c.yaml"
    contract.write_text("name: c\nversion: 1\nlimits: {max_row_chars: 150}\n")
    res = gate_inprocess("check", str(data), "-c", str(contract), "--checks", "exact_duplicate,length,secret",
                         "--no-db", "-o", str(tmp_path / "rep"), "-q", split=True)
    assert res.returncode == 100, res.stdout + res.stderr
    md = (tmp_path / "rep" / "report.md").read_text()
    steps = md[md.index("**Next steps**"):].split("\n\n")[1].splitlines()
    assert [s.split(":")[0] for s in steps] == ["- `exact_duplicate`", "- `length`"]  # failing checks only
    assert "`limits.max_row_chars`" in steps[1] and "docs/contracts.md, `length`" in steps[1]
    assert "docs/contracts.md, `exact_duplicate`" in steps[0]
    [command] = re.findall(r"`(gate scrub [^`]+)`", steps[0])
    assert command == f"gate scrub '{data}' -c {contract} -o '{data}'-scrubbed"
    res = gate_inprocess(*shlex.split(command)[1:], split=True)
    assert res.returncode == 0, res.stdout + res.stderr
    assert len((tmp_path / "my data-scrubbed" / "train.jsonl").read_text().splitlines()) == 6


def test_every_check_that_can_fail_has_its_own_next_step():
    """A failing check without an entry got "see docs/contracts.md" and nothing to run (`conflicting_answers` did,
    where the next step is a review, not a scrub)."""
    from gate.plugins import declarations
    from gate.report.check_report import NEXT_STEPS

    builtin = {d.name for d in declarations("check") if d.origin == "built-in"}
    assert "conflicting_answers" in builtin and builtin - set(NEXT_STEPS) == set()
    assert "gate review" in NEXT_STEPS["conflicting_answers"].format(review="gate review D -c C", scrub="", split="")
