"""contamination: n-grams many training rows share are not evidence (issue 29: every Toolformer row was flagged
through the tool description it shares with the evaluation items)."""

from __future__ import annotations

import random

from tests.conftest import triage_row, write_jsonl
from tests.data.test_dedup_checks import _contract_with, results

VOCAB = [f"v{i}" for i in range(5000)]


def _words(seed: int, n: int) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(VOCAB) for _ in range(n))


TOOLS = _words(1, 40)  # the tool description every row and every item starts with


def _dataset(tmp_path):
    items = [{"id": f"tool-{k}", "prompt": f"{TOOLS}\n{_words(100 + k, 40)}"} for k in range(5)]
    train = [triage_row(i, f"{TOOLS}\n{_words(1000 + i, 40)}") for i in range(50)]
    train.append(triage_row(50, items[3]["prompt"]))  # a real copy of one item
    write_jsonl(tmp_path / "ds" / "train.jsonl", train)
    return items


def test_a_shared_tool_description_is_no_evidence_but_a_copied_item_is(tmp_path) -> None:
    items = _dataset(tmp_path)
    res = results(tmp_path / "ds", _contract_with(tmp_path, items), ["contamination"])["contamination"]
    assert [f.row for f in res.findings] == [51], [(f.row, f.message) for f in res.findings[:3]]
    assert "suite#tool-3" in res.findings[0].message or "tool-3" in res.findings[0].message
    assert "each in at most 20 training rows" in res.findings[0].message, res.findings[0].message
    assert res.counts["common_ngrams_ignored"] >= 28  # the 40-word description's 13-grams
    assert res.details["options"]["common_ngram_rows"] == 20


def test_common_ngram_rows_is_honoured(tmp_path) -> None:
    items = _dataset(tmp_path)
    res = results(tmp_path / "ds", _contract_with(tmp_path, items, common_ngram_rows=100),
                  ["contamination"])["contamination"]
    assert len(res.findings) == 51  # with the limit above 51 rows the shared description counts again
