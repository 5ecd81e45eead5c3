"""Per-batch dedup texts and their digests, computed once and shared by every check that needs them.

`exact_duplicate`, `near_duplicate` and `leakage` all read the same user + assistant text of each row and the
digest of its normal form; in one `gate check` the batch cache makes that one pass instead of three.
"""

from __future__ import annotations

from gate.contract import Contract
from gate.data.base import Batch
from gate.data.text import normalize, row_text
from gate.io.digest import text_digest


def dedup_texts(batch: Batch, contract: Contract) -> tuple[list[str], list[bytes]]:
    """(text, `text_digest` of its normal form) for every row of the batch, in row order."""
    roles, tools = contract.text_roles, contract.include_tool_calls
    key = f"dedup_texts:{roles}:{tools}"
    hit = batch.cache.get(key)
    if hit is None:
        texts = [row_text(row, roles, tools) for _, row in batch.rows]
        digests = [text_digest(normalize(t)) for t in texts]
        hit = batch.cache[key] = (texts, digests)
    return hit
