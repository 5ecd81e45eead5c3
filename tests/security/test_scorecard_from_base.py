"""Issue 27 item 1, scorecards: a pull request that loosens a release gate is not judged by its own gates.
`gate decide/score --base REF` refuses a scorecard that loosens its version at REF (one line naming file, line and
key, exit 1, before anything is read from the record); tightenings pass; `--allow-scorecard-change` accepts a
reviewed loosening."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from gate.errors import GateError
from tests.conftest import ROOT, gate_inprocess
from tests.security.conftest import commit_all, git


@pytest.fixture
def card_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "scorecards").mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    shutil.copy(ROOT / "scorecards" / "triage.yaml", repo / "scorecards" / "triage.yaml")
    shutil.copytree(ROOT / "scorecards" / "suites", repo / "scorecards" / "suites")
    commit_all(repo, "base")
    git(repo, "checkout", "-q", "-b", "pr")
    return repo


def _edit(repo: Path, old: str, new: str) -> None:
    p = repo / "scorecards" / "triage.yaml"
    text = p.read_text()
    assert old in text, old
    p.write_text(text.replace(old, new, 1))


LOOSER = [
    ("threshold: 0.95", "threshold: 0.5", "gates.format-floor.threshold"),  # a higher_is_better floor lowered
    ("margin: 0.01", "margin: 0.3", "gates.no-under-refusal-regression.margin"),
    ("    alpha: 0.05\n  - name: format-no", "    alpha: 0.5\n  - name: format-no",
     "gates.task-success-improves.alpha"),
    ("  - name: format-floor\n", "  - name: format-floor\n    severity: warn\n", "gates.format-floor.severity"),
    ("  - name: task-success-improves\n    scorer: task_success\n    metric: strict\n    rule: superiority\n"
     "    test: mcnemar\n    alpha: 0.05\n", "", "gates.task-success-improves"),  # a removed gate
]


@pytest.mark.parametrize(("old", "new", "key"), LOOSER, ids=[k for _, _, k in LOOSER])
def test_decide_refuses_a_loosened_scorecard(card_repo: Path, old: str, new: str, key: str) -> None:
    _edit(card_repo, old, new)
    commit_all(card_repo, "pr: easier gates")
    cwd = os.getcwd()
    os.chdir(card_repo)
    try:
        code, out = gate_inprocess("decide", "-s", "scorecards/triage.yaml", "--base", "main", "--db",
                                   str(card_repo / "none.duckdb"))
    finally:
        os.chdir(cwd)
    assert code == 1, out
    assert out.strip().count("\n") == 0 and "scorecards/triage.yaml:" in out and key in out
    assert "--allow-scorecard-change" in out
    assert not (card_repo / "none.duckdb").exists()


def test_tightening_passes_and_a_reviewed_loosening_needs_the_flag(card_repo: Path) -> None:
    from gate.score.trust import check_scorecard_change

    card = str(card_repo / "scorecards" / "triage.yaml")
    _edit(card_repo, "threshold: 0.95", "threshold: 0.99")  # stricter floor
    commit_all(card_repo, "pr: a stricter floor")
    changes = check_scorecard_change(card, "main")
    assert [c.direction for c in changes] == ["tightening"]
    _edit(card_repo, "margin: 0.02", "margin: 0.2")
    with pytest.raises(GateError):
        check_scorecard_change(card, "main")
    assert any(c.direction == "loosening" for c in check_scorecard_change(card, "main", allow=True))


def test_a_suite_that_loses_items_is_a_loosening(card_repo: Path) -> None:
    from gate.score.trust import check_scorecard_change

    suite = card_repo / "scorecards" / "suites" / "triage-heldout.jsonl"
    suite.write_text("".join(suite.read_text().splitlines(keepends=True)[5:]))
    with pytest.raises(GateError, match="lost items"):
        check_scorecard_change(str(card_repo / "scorecards" / "triage.yaml"), "main")
