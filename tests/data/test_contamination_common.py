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


def _answer_row(i: int, prompt: str, answer: str) -> dict:
    row = triage_row(i, prompt)
    row["messages"][2]["content"] = answer
    return row


def _sided(tmp_path, **opts):
    from tests.data.test_dedup_checks import results

    item = {"id": "q-1", "prompt": _words(900, 30)}  # 30 words: 18 distinct 13-grams
    words = item["prompt"].split()
    train = [_answer_row(i, _words(2000 + i, 30), _words(3000 + i, 30)) for i in range(10)]
    train[1] = _answer_row(1, _words(5000, 20) + " " + item["prompt"], _words(5001, 30))  # the whole item, asked
    train[3] = _answer_row(3, _words(5002, 30), _words(5003, 20) + " " + " ".join(words[:13]))  # one 13-gram, answer
    train[5] = _answer_row(5, " ".join(words[:21]) + " " + _words(5004, 10), _words(5005, 30))  # 9 of 18, asked
    write_jsonl(tmp_path / "ds" / "train.jsonl", train)
    return results(tmp_path / "ds", _contract_with(tmp_path, [item], **opts), ["contamination"])["contamination"]


def test_a_finding_says_which_turns_matched_and_scores_the_share_of_the_item_found(tmp_path):
    """Issue 32 item 4: one 13-gram shared through the worked answer read "(1 shared 13-gram(s))" with score 1.0, the
    same as a verbatim copy. The finding names the turns that matched; the score is the share of the item's
    informative 13-grams the row holds."""
    res = _sided(tmp_path)
    by_row = {f.row: f for f in res.findings}
    assert set(by_row) == {2, 4, 6}
    copy, answer, half = by_row[2], by_row[4], by_row[6]
    assert copy.score == 1.0 and copy.rule == "contamination"
    assert "(in the prompt: 18 shared 13-gram(s) of the item's 18" in copy.message, copy.message
    assert answer.score == round(1 / 18, 6) and answer.rule == "contamination.answer_only"
    assert "(in the answer only: 1 shared 13-gram(s) of the item's 18" in answer.message, answer.message
    assert answer.severity == "error" and res.status == "fail"  # the default keeps every match an error
    assert half.score == 0.5 and "in the prompt: 9 shared" in half.message
    assert copy.score > half.score > answer.score


def test_answer_only_matches_can_be_warnings_or_ignored(tmp_path):
    warned = _sided(tmp_path, answer_only="warning")
    assert [(f.row, f.severity) for f in warned.findings] == [(2, "error"), (4, "warning"), (6, "error")]
    assert warned.counts["answer_only"] == 1 and warned.counts["errors"] == 2
    ignored = _sided(tmp_path, answer_only="ignore")
    assert [f.row for f in ignored.findings] == [2, 6] and ignored.counts["answer_only_ignored"] == 1
    assert {d["id"] for d in ignored.details["contaminated_items"]} == {"q-1"}


def test_training_ngrams_are_read_a_chunk_at_a_time_with_the_same_evidence(tmp_path, monkeypatch) -> None:
    """The full door at scale (bench/results/full_door.md): contamination shingled every training message at once
    and held all their n-grams (~5 KB per row, 434 MB against 178 MB for exact_duplicate on 50k triage rows). It
    reads them a chunk at a time now and keeps only n-grams an item holds; the findings are the same."""
    from gate.data.checks import contamination

    items = _dataset(tmp_path)
    contract = _contract_with(tmp_path, items)
    whole = results(tmp_path / "ds", contract, ["contamination"])["contamination"]
    sizes: list[int] = []
    real = contamination._grams

    def spy(parts, owners, cfg, ns):
        sizes.append(len(parts))
        return real(parts, owners, cfg, ns)
    monkeypatch.setattr(contamination, "TRAIN_CHUNK", 7)
    monkeypatch.setattr(contamination, "_grams", spy)
    chunked = results(tmp_path / "ds", contract, ["contamination"])["contamination"]
    assert max(sizes) <= 7 < sum(sizes)  # no call saw more than a chunk of messages
    assert [(f.row, f.message, f.score) for f in chunked.findings] == \
        [(f.row, f.message, f.score) for f in whole.findings] and chunked.findings
