"""One audit per batch, shared by the `template` and `length` checks in the same process.

Both checks need the rendered, tokenized, masked rows; the runner calls every check's `map` on the same batch
object one after the other, so the first caller audits it into the batch's own `cache` and the second reads it
there (no module global: the audit lives and dies with its batch). The auditor itself
(tokenizer, compiled template, caches) is built once per process: in the parent before the workers fork, so
they inherit it.
"""

from __future__ import annotations

from typing import Any

from gate.contract.model import Contract
from gate.io.lru import LRU
from gate.template.audit import Auditor, RowAudit
from gate.template.options import TemplateOptions

#: the auditors of the contracts this process checks with, the most recent few (bounded: a service worker lives long)
_AUDITORS: LRU[Auditor] = LRU(8)


def auditor_for(contract: Contract) -> Auditor:
    """The auditor for the contract's tokenizer and template options (raises GateError if it cannot load)."""
    from gate.template.tokenizer import load_chat_tokenizer

    assert contract.tokenizer is not None
    opts = TemplateOptions.from_mapping(contract.options("template"))
    key = (contract.tokenizer, opts.key(), contract.sha256)
    tok = contract.tokenizer
    return _AUDITORS.get_or_build(key, lambda: Auditor(load_chat_tokenizer(tok), opts, contract))


def audit_batch(batch: Any, contract: Contract) -> list[RowAudit]:
    """The audit of `batch.rows`, computed once for all the checks that ask about the same batch."""
    a = auditor_for(contract)
    # keyed by what the audit depends on, not the auditor's id: an evicted auditor's id can be reused
    key = ("template.audit", contract.tokenizer, a.opts.key(), contract.sha256)
    res = batch.cache.get(key)
    if res is None:
        res = batch.cache[key] = a.audit(batch.rows)
    return res
