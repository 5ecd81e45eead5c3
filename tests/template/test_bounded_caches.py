"""Per-process caches of loaded tokenizers and auditors are bounded (issue 28 item 11): a long-lived service worker
checks with many contracts, and a plain module dict kept every tokenizer and compiled template it ever loaded."""

from __future__ import annotations

import dataclasses

from gate.io.lru import LRU


def test_lru_keeps_the_most_recent_and_rebuilds_the_evicted():
    built: list[int] = []
    cache: LRU[int] = LRU(2)
    for k in (1, 2, 1, 3, 2):
        cache.get_or_build(k, lambda k=k: built.append(k) or k)
    assert built == [1, 2, 3, 2] and len(cache) == 2  # 1 was reused once, 2 evicted by 3 and rebuilt


def test_auditors_stay_bounded_over_many_contracts(tool_contract):
    from gate.template import batch
    from tests.template.conftest import ref

    batch._AUDITORS.clear()
    for i in range(12):
        contract = dataclasses.replace(tool_contract, tokenizer=ref("chatml-tiny"), sha256=f"{i:064x}")
        batch.auditor_for(contract)
    assert len(batch._AUDITORS) == batch._AUDITORS.size < 12
