"""One audit per batch, shared by the `template` and `length` checks in the same process.

Both checks need the rendered, tokenized, masked rows; the runner calls every check's `map` on the same batch
object one after the other, so the first caller audits it and the second reads the result. The auditor itself
(tokenizer, compiled template, caches) is built once per process: in the parent before the workers fork, so
they inherit it.
"""

from __future__ import annotations

from typing import Any

from gate.contract.model import Contract
from gate.template.audit import Auditor, RowAudit
from gate.template.options import TemplateOptions

_AUDITORS: dict[tuple[Any, ...], Auditor] = {}
_LAST: tuple[Any, Any, list[RowAudit]] | None = None


def auditor_for(contract: Contract) -> Auditor:
    """The auditor for the contract's tokenizer and template options (raises GateError if it cannot load)."""
    from gate.template.tokenizer import load_chat_tokenizer

    assert contract.tokenizer is not None
    opts = TemplateOptions.from_mapping(contract.options("template"))
    key = (contract.tokenizer, opts.key(), contract.sha256)
    a = _AUDITORS.get(key)
    if a is None:
        a = _AUDITORS[key] = Auditor(load_chat_tokenizer(contract.tokenizer), opts, contract)
    return a


def audit_batch(batch: Any, contract: Contract) -> list[RowAudit]:
    """The audit of `batch.rows`, computed once for all the checks that ask about the same batch."""
    global _LAST
    a = auditor_for(contract)
    if _LAST is not None and _LAST[0] is batch and _LAST[1] is a:
        return _LAST[2]
    res = a.audit(batch.rows)
    _LAST = (batch, a, res)
    return res


def release() -> None:
    """Drops the last batch (its rows) once the checks are done with it."""
    global _LAST
    _LAST = None
