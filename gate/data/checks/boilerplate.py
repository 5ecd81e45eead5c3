"""`boilerplate`: assistant text dominated by lines and sentences repeated across many rows.

A model trained on a slice where every answer ends in the same signature or disclaimer learns to emit it.
Assistant (loss-bearing) text is cut into lines (the unit of signatures, disclaimers and templates, as in
the duplicate-line filters of C4 and Gopher; `unit: sentence` cuts finer); a segment that occurs in at least
`min_rows` rows (and at least `min_share` of rows) is boilerplate. A row whose assistant text is covered
by boilerplate beyond `max_row_share` is a finding, which quotes (masked) its longest repeated line; the report
lists the share per split and source slice and the most repeated segments (as hashes and redacted snippets).
Structured (JSON) answers are skipped: they repeat by design. Code is not boilerplate: fenced blocks, inline
code and code-shaped lines (`gate.pii.code`) are left out before lines are counted, since every C++ answer
repeats `#include <iostream>` and `int main()` (Code Alpaca rows were flagged for their headers).
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

import numpy as np
import xxhash

from gate.contract import Contract
from gate.contract.file_schema import check_options
from gate.data.base import Batch, Check, CheckResult, Finding
from gate.data.text import normalize
from gate.errors import GateError
from gate.pii.code import blank, code_spans
from gate.pii.redact import value_snippet as snippet

_SPLIT = {"line": re.compile(r"\n+"), "sentence": re.compile(r"(?<=[.!?])\s+|\n+")}
# A row is dominated when repeated segments cover more than `max_row_share` of its assistant text and at
# least `min_row_chars` characters: two stock phrases in a short reply are style, a pasted signature block
# that the model would learn to emit is boilerplate.
DEFAULTS = {"min_rows": 5, "min_share": 0.0, "max_row_share": 0.5, "min_chars": 20, "min_row_chars": 100,
            "unit": "line"}


def segments(text: str, min_chars: int, unit: str = "line") -> list[tuple[int, int, str]]:
    """(hash, length, normalised text) of each prose line (or sentence) long enough to matter; code spans are
    blanked first, so code lines are never segments."""
    spans = code_spans(text)
    if spans:
        text = blank(text, spans, keep=False)
    out = []
    for seg in _SPLIT[unit].split(text):
        norm = normalize(seg)
        if len(norm) >= min_chars:
            out.append((xxhash.xxh3_64_intdigest(norm.encode("utf-8", "surrogatepass")), len(seg.strip()), norm))
    return out


class BoilerplateCheck(Check):
    name = "boilerplate"
    rules = ("boilerplate",)
    order = 120
    incremental = "full"
    version = "1"
    options_schema = check_options({  # defaults in DEFAULTS above
        "min_rows": {"type": "integer", "minimum": 1, "description":
                     "A segment repeated in at least this many rows is boilerplate."},
        "min_share": {"type": "number", "minimum": 0, "maximum": 1, "description":
                      "... and in at least this share of the rows."},
        "max_row_share": {"type": "number", "minimum": 0, "maximum": 1, "description":
                          "A row whose assistant text is more than this share boilerplate is flagged."},
        "min_chars": {"type": "integer", "minimum": 0, "description":
                      "Shorter segments are never boilerplate (greetings, list markers)."},
        "min_row_chars": {"type": "integer", "minimum": 0, "description":
                          "Shorter assistant texts are never flagged."},
        "unit": {"enum": sorted(_SPLIT), "description": "Segments are lines, or sentences."},
        "force": {"type": "boolean", "default": False, "description":
                  "Scan structured (JSON) answers too (skipped by default: they repeat by design)."},
    })

    @classmethod
    def skip_reason(cls, contract: Contract) -> str | None:
        if contract.output_format == "json" and not contract.options("boilerplate").get("force"):
            return "structured (JSON) answers repeat by design; boilerplate is not measured"
        return None

    def __init__(self, contract: Contract) -> None:
        super().__init__(contract)
        self.opts = {**DEFAULTS, **contract.options("boilerplate")}
        if self.opts["unit"] not in _SPLIT:
            raise GateError(f"checks.boilerplate.unit must be one of {sorted(_SPLIT)}", file=contract.path)
        self._skip = self.skip_reason(contract) is not None
        self._rows: list[tuple[str, int, str | None, str, int, np.ndarray, np.ndarray]] = []
        self._examples: dict[int, str] = {}

    def map(self, batch: Batch) -> Any:
        if self._skip:
            return batch.split, []
        out = []
        min_chars = int(self.opts["min_chars"])
        unit = str(self.opts["unit"])
        for line, row in batch.rows:
            msgs = row.get("messages")
            if not isinstance(msgs, list):
                continue
            text = "\n".join(m["content"] for m in msgs if isinstance(m, dict) and m.get("role") == "assistant"
                             and isinstance(m.get("content"), str))
            total = len(text.strip())
            segs = segments(text, min_chars, unit) if total else []
            rid = row.get("id") if isinstance(row.get("id"), str) else None
            source = row.get("source") if isinstance(row.get("source"), str) else "(none)"
            out.append((line, rid, source, total, np.asarray([h for h, _, _ in segs], dtype=np.uint64),
                        np.asarray([n for _, n, _ in segs], dtype=np.int64),
                        {h: t for h, _, t in segs}))
        return batch.split, out

    def reduce(self, partial: Any) -> None:
        split, rows = partial
        for line, rid, source, total, hashes, lengths, texts in rows:
            self.counts["scanned"] += 1
            self._rows.append((split, line, rid, source, total, hashes, lengths))
            for h, t in texts.items():
                self._examples.setdefault(h, t)

    def finish(self) -> None:
        if self._skip or not self._rows:
            return
        n_rows = len(self._rows)
        all_hashes = np.concatenate([np.unique(r[5]) for r in self._rows]) if self._rows else np.empty(0, np.uint64)
        uniq, df = np.unique(all_hashes, return_counts=True)
        need = max(int(self.opts["min_rows"]), int(np.ceil(float(self.opts["min_share"]) * n_rows)))
        boiler = set(uniq[df >= need].tolist())
        df_of = dict(zip(uniq.tolist(), df.tolist(), strict=True))
        slices: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
        limit = float(self.opts["max_row_share"])
        for split, line, rid, source, total, hashes, lengths in self._rows:
            covered = int(sum(n for h, n in zip(hashes.tolist(), lengths.tolist(), strict=True) if h in boiler))
            covered = min(covered, total)
            slices[(split, source)][0] += covered
            slices[(split, source)][1] += total
            if total and covered / total > limit and covered >= int(self.opts["min_row_chars"]):
                self.counts["dominated_rows"] += 1
                # the row's longest repeated line, quoted masked (as the report's top segments are)
                _, h = max((n, h) for h, n in zip(hashes.tolist(), lengths.tolist(), strict=True) if h in boiler)
                self.findings.append(Finding("boilerplate", split, line, "messages", "boilerplate", "error",
                                             f"{covered / total:.0%} of the assistant text is boilerplate repeated "
                                             f"across rows (limit {limit:.0%}); its longest repeated line is in "
                                             f"{df_of[h]} rows", snippet(self._examples[h], 60, words=True), rid))
        self.counts["boilerplate_segments"] = len(boiler)
        top = sorted(boiler, key=lambda h: -df_of[h])[:5]
        self._details = {
            "slices": [{"split": sp, "source": so, "boilerplate_share": round(c / t, 4) if t else 0.0,
                        "assistant_chars": t} for (sp, so), (c, t) in sorted(slices.items())],
            "top_segments": [{"rows": int(df_of[h]), "snippet": snippet(self._examples[h], 60, words=True)}
                             for h in top],
            "options": self.opts,
        }
        self._rows.clear()

    def details(self) -> dict[str, Any]:
        return getattr(self, "_details", {"options": self.opts})

    def result(self) -> CheckResult:
        res = super().result()
        if self._skip:
            res.status = "skipped"
            res.summary = self.skip_reason(self.contract) or ""
        else:
            res.summary = (f"{self.counts['dominated_rows']} row(s) dominated by boilerplate; "
                           f"{self.counts['boilerplate_segments']} repeated segment(s)")
        return res
