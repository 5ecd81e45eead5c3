"""Issue 32 items 4 and 8: the contract reference explains `semantic_duplicate` (what each option means, its
default) and contamination's evidence and `answer_only`, not only a table of bare keys."""

from __future__ import annotations

from gate.data.checks.contamination import ANSWER_ONLY, OPTIONS
from gate.data.checks.semantic_duplicate import DEFAULT_THRESHOLD, EXACT_MAX
from tests.conftest import ROOT


def _section(name: str) -> str:
    text = (ROOT / "docs" / "contracts.md").read_text()
    start = text.index(f"### `{name}`")
    return text[start:text.index("\n### ", start + 1)]


def test_semantic_duplicate_options_have_meanings_and_the_defaults_the_check_uses():
    sec = _section("semantic_duplicate")
    for opt, default in (("enabled", "false"), ("threshold", f"{DEFAULT_THRESHOLD:g}"), ("keep", "star"),
                         ("exact_max", str(EXACT_MAX))):
        assert f"- `{opt}` (default `{default}`): " in sec, opt
    assert "MRPC" in sec and "cosine" in sec and "`cluster_size`" in sec


def test_contamination_says_what_the_score_and_answer_only_mean():
    sec = _section("contamination")
    assert f"- `answer_only` (default `{OPTIONS['answer_only']}`)" in sec
    assert all(f"`{v}`" in sec for v in ANSWER_ONLY) and "contamination.answer_only" in sec
    assert "in the answer only" in sec and "share of the item's" in sec
