"""Issue 28 item 9: docs/extending.md's worked examples are real files that work. The example package
(docs/examples/gate_turns) is installed as `pip install` leaves it, its own tests (docs/examples/test_gate_turns.py,
the offline scorer test the page teaches) run as they are, and the page shows exactly those files."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT
from tests.test_seams_row_checks import install_example

DOC = (ROOT / "docs" / "extending.md").read_text(encoding="utf-8")
EXAMPLES = ROOT / "docs" / "examples"


@pytest.mark.parametrize("path", ["gate_turns/too_many_turns.py", "gate_turns/answer_words.py", "entry_points.txt",
                                  "test_gate_turns.py"])
def test_the_page_shows_the_example_files_as_they_are(path):
    text = (EXAMPLES / path).read_text(encoding="utf-8")
    assert f"docs/examples/{path}" in DOC
    assert text.strip() in DOC, f"docs/extending.md shows another {path} than docs/examples/{path}"


def test_the_example_check_and_scorer_pass_their_own_tests(tmp_path):
    """The example's tests in their own pytest process, the package installed (the registry is read per process)."""
    env = {**os.environ, **install_example(tmp_path)}
    res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--basetemp",
                          str(tmp_path / "t"), str(EXAMPLES / "test_gate_turns.py")], env=env, cwd=tmp_path,
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    assert "3 passed" in res.stdout, res.stdout[-2000:]
