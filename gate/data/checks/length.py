"""`length`: rows and messages longer than the contract allows, and the length statistics of every split.

Counts characters; with a tokenizer configured, also the tokens of each row as its chat template renders it and
the tokens that carry loss, the recommended training sequence length and a histogram (gate/template/stats.py).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from gate.contract import Contract
from gate.contract.file_schema import check_options
from gate.data.base import Batch, Check, Finding
from gate.data.text import row_chars


class LengthCheck(Check):
    name = "length"
    rules = ("length.row_chars", "length.message_chars", "length.tokens")
    order = 110
    incremental = "per_row"
    version = "1"
    # read by gate/template/stats.py (the token statistics, with a tokenizer); character limits are in `limits:`
    options_schema = check_options({
        "cover": {"type": "number", "exclusiveMinimum": 0, "maximum": 1, "default": 0.99, "description":
                  "The recommended sequence length covers this share of rows (with a tokenizer)."},
        "multiple_of": {"type": "integer", "minimum": 1, "default": 1, "description":
                        "Round the recommended sequence length up to a multiple of this."},
        "histogram": {"type": "boolean", "default": True, "description":
                      "Show the histogram of token lengths in the report (with a tokenizer)."},
    })

    def __init__(self, contract: Contract) -> None:
        super().__init__(contract)
        self._max_row = contract.limits.get("max_row_chars")
        self._max_msg = contract.limits.get("max_message_chars")
        self._chars: dict[str, list[np.ndarray]] = {}
        self._msgs: dict[str, list[np.ndarray]] = {}
        self._tokens = None
        if contract.tokenizer is not None:
            from gate.template.stats import TokenLengths

            self._tokens = TokenLengths(contract)

    def map(self, batch: Batch) -> Any:
        findings = []
        chars = np.empty(len(batch.rows), dtype=np.int64)
        nmsgs = np.empty(len(batch.rows), dtype=np.int32)
        for k, (line, row) in enumerate(batch.rows):
            total, longest = row_chars(row)
            chars[k] = total
            msgs = row.get("messages")
            nmsgs[k] = len(msgs) if isinstance(msgs, list) else 0
            rid = row.get("id") if isinstance(row.get("id"), str) else None
            if self._max_row and total > self._max_row:
                findings.append(Finding("length", batch.split, line, "messages", "length.row_chars", "error",
                                        f"{total} characters, limit {self._max_row}", None, rid))
            elif self._max_msg and longest > self._max_msg:
                findings.append(Finding("length", batch.split, line, "messages", "length.message_chars", "error",
                                        f"a message of {longest} characters, limit {self._max_msg}", None, rid))
        tokens = self._tokens.map(batch, findings) if self._tokens is not None else None
        return batch.split, findings, chars, nmsgs, tokens

    def reduce(self, partial: Any) -> None:
        split, findings, chars, nmsgs, tokens = partial
        if self._tokens is not None:
            self._tokens.reduce(split, tokens)
        self.findings.extend(findings)
        self.counts["scanned"] += len(chars)
        self._chars.setdefault(split, []).append(chars)
        self._msgs.setdefault(split, []).append(nmsgs)

    def finish(self) -> None:
        self.counts.update(Counter(f.rule for f in self.findings))

    def details(self) -> dict[str, Any]:
        stats: dict[str, Any] = {}
        for split, chunks in self._chars.items():
            chars = np.concatenate(chunks)
            msgs = np.concatenate(self._msgs[split])
            p50, p90, p99 = (int(x) for x in np.percentile(chars, [50, 90, 99]))
            stats[split] = {"rows": int(len(chars)), "chars_p50": p50, "chars_p90": p90, "chars_p99": p99,
                            "chars_max": int(chars.max()), "messages_mean": round(float(msgs.mean()), 2)}
        out = {"splits": stats, "limits": dict(self.contract.limits)}
        if self._tokens is not None:
            out.update(self._tokens.details())
        elif self.contract.limits.get("max_tokens"):
            out["report_lines"] = ["limits.max_tokens not checked: no tokenizer configured"]
        return out
