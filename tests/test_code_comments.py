"""Comments and docstrings in gate/ say why, not which issue asked (issue 28 item 11): an issue number means
nothing to a reader without the tracker, and history belongs in git log."""

from __future__ import annotations

import re
from pathlib import Path

GATE = Path(__file__).resolve().parents[1] / "gate"


def test_no_comment_in_gate_cites_an_issue_number():
    cited = [f"{p.relative_to(GATE.parent)}:{n}" for p in sorted(GATE.rglob("*.py"))
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if re.search(r"\b[Ii]ssue \d+", line)]
    assert cited == []
