"""The run's text-keyed memo (gate.data.memo.TextMemo, owned by RunContext): one per run and key, bounded, keyed
by digest, shared by the checks of a run (the PII scans, the embeddings of leakage and contamination)."""

from __future__ import annotations

from gate.data.base import RunContext
from gate.data.memo import TextMemo
from gate.data.registry import instantiate
from gate.io.digest import text_digest


def test_each_distinct_text_is_computed_once_and_counted() -> None:
    memo: TextMemo[tuple[int, ...]] = TextMemo()
    calls: list[list[str]] = []

    def compute(texts: list[str]) -> list[tuple[int, ...]]:
        calls.append(list(texts))
        return [(len(t),) for t in texts]

    assert memo.get_many(["aa", "b", "aa"], compute) == [(2,), (1,), (2,)]
    assert (memo.misses, memo.hits) == (2, 1)  # a repeat within one call is a hit
    assert memo.get_many(["b", "aa"], compute) == [(1,), (2,)]
    assert memo.get_many([], compute) == []
    assert calls == [["aa", "b"]] and (memo.misses, memo.hits) == (2, 3)


def test_the_memo_is_bounded_and_keeps_no_text() -> None:
    memo: TextMemo[int] = TextMemo(max_entries=2)
    calls: list[list[str]] = []

    def compute(texts: list[str]) -> list[int]:
        calls.append(list(texts))
        return [len(t) for t in texts]

    assert memo.get_many(["aa", "b"], compute) == [2, 1]
    assert memo.get_many(["b"], compute) == [1]  # "b" is now the most recently used
    assert memo.get_many(["ccc"], compute) == [3] and len(memo) == 2
    assert set(memo._values) == {text_digest("b"), text_digest("ccc")}  # digests only; "aa" went first
    assert memo.get_many(["aa"], compute) == [2] and calls[-1] == ["aa"]
    # one call over the bound still answers every text
    assert memo.get_many(["w", "xx", "yyy", "w"], compute) == [1, 2, 3, 1] and len(memo) == 2


def test_one_memo_per_key_and_run_shared_by_the_runs_checks(triage_contract) -> None:
    """The pii and secret checks and leakage/contamination reach the run's memos through the one context their
    run shares; another run starts empty (no module-global memo carries texts from one run into the next)."""
    from gate.data import pii_scan
    from gate.data.checks.semantic_duplicate import embedding_memo
    from gate.embed import encoder

    run = RunContext()
    assert run.memo("k") is run.memo("k", max_entries=5) and run.memo("k").max_entries == 200_000
    assert run.memo("k") is not RunContext().memo("k")
    pii, leakage, contamination = instantiate(["pii", "leakage", "contamination"], triage_contract)
    assert pii.context is leakage.context is contamination.context
    assert embedding_memo(leakage.context) is embedding_memo(contamination.context)
    assert embedding_memo(leakage.context).max_entries == encoder.MEMO_MAX
    again, = instantiate(["leakage"], triage_contract)
    assert embedding_memo(again.context) is not embedding_memo(leakage.context)
    assert not hasattr(pii_scan, "TextCache") and not hasattr(encoder, "_MEMO")
    for module in (pii_scan, encoder):
        assert not [k for k, v in vars(module).items() if isinstance(v, TextMemo)], module
