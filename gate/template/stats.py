"""Token statistics for the `length` check: what a row costs in the model's tokens, and how long training
sequences must be.

Lengths are of what the trainer feeds (the rendered chat, plus the stop token appended to a final turn) and of
the tokens that carry loss. The recommended sequence length is the shortest that covers `cover` of the rows
(default 99%) of the train split (all rows when there is none), rounded up to `multiple_of`; the rows it would
truncate are listed by id. Rows above `limits.max_tokens` are findings.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from gate.contract import Contract
from gate.data.base import Batch, Finding
from gate.template.plots import histogram_spec, sparkline

PLOT_FILE = "length_tokens.png"
_LISTED = 50


class TokenLengths:
    """The token part of the length check: `map` in workers, `reduce` and `details` in the parent."""

    def __init__(self, contract: Contract) -> None:
        from gate.template.batch import auditor_for

        self.contract = contract
        self.max_tokens = contract.limits.get("max_tokens")
        opts = contract.options("length")
        self.cover = float(opts.get("cover", 0.99))
        self.multiple_of = int(opts.get("multiple_of", 1))
        self.histogram = bool(opts.get("histogram", True))
        auditor_for(contract)  # load the tokenizer in the parent, before workers fork
        self._parts: dict[str, list[tuple[np.ndarray, np.ndarray, np.ndarray, list[str | None]]]] = {}
        self.not_rendered = 0

    def map(self, batch: Batch, findings: list[Finding]) -> Any:
        from gate.template.batch import audit_batch

        lines, toks, loss, ids = [], [], [], []
        skipped = 0
        for r in audit_batch(batch, self.contract):
            if r.status != "ok" or r.n_tokens is None:
                skipped += 1
                continue
            lines.append(r.line)
            toks.append(r.n_tokens)
            loss.append(r.n_loss or 0)
            ids.append(r.rid)
            if self.max_tokens and r.n_tokens > self.max_tokens:
                findings.append(Finding("length", batch.split, r.line, "messages", "length.tokens", "error",
                                        f"{r.n_tokens} tokens as the chat template renders it, limit "
                                        f"{self.max_tokens}", None, r.rid))
        return (np.asarray(lines, dtype=np.int64), np.asarray(toks, dtype=np.int64),
                np.asarray(loss, dtype=np.int64), ids, skipped)

    def reduce(self, split: str, part: Any) -> None:
        lines, toks, loss, ids, skipped = part
        self.not_rendered += skipped
        self._parts.setdefault(split, []).append((lines, toks, loss, ids))

    def details(self) -> dict[str, Any]:
        if not self._parts:
            return {"tokens": {}, "report_lines": []}
        per: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, list[str | None]]] = {}
        for split, parts in self._parts.items():
            per[split] = (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]),
                          np.concatenate([p[2] for p in parts]), [i for p in parts for i in p[3]])
        stats: dict[str, Any] = {}
        for split, (_lines, toks, loss, _ids) in per.items():
            if not len(toks):
                continue
            stats[split] = {"rows": int(len(toks)), **_pct("tokens", toks), **_pct("loss_tokens", loss),
                            "loss_share": round(float(loss.sum()) / max(int(toks.sum()), 1), 4)}
        scope = "train" if "train" in per and len(per["train"][1]) else "all"
        if scope == "train":
            lines, toks, _loss, ids = per["train"]
            where = ["train"] * len(toks)
        else:
            lines = np.concatenate([v[0] for v in per.values()])
            toks = np.concatenate([v[1] for v in per.values()])
            ids = [i for v in per.values() for i in v[3]]
            where = [s for s, v in per.items() for _ in range(len(v[1]))]
        rec: dict[str, Any] = {"scope": scope, "cover": self.cover, "multiple_of": self.multiple_of}
        lines_out: list[str] = []
        if len(toks):
            srt = np.sort(toks)
            need = srt[max(0, math.ceil(self.cover * len(srt)) - 1)]
            seq = int(math.ceil(int(need) / self.multiple_of) * self.multiple_of)
            over = np.nonzero(toks > seq)[0]
            order = over[np.argsort(-toks[over], kind="stable")]
            rec.update(seq_length=seq, rows=int(len(toks)), truncated_rows=int(len(over)),
                       truncated=[{"split": where[k], "row": int(lines[k]), "id": ids[k], "tokens": int(toks[k])}
                                  for k in order[:_LISTED]])
            s = stats.get(scope) or _pct("tokens", toks)
            lines_out.append(f"token lengths ({scope}): p50 {s['tokens_p50']:,} · p90 {s['tokens_p90']:,} · "
                             f"p99 {s['tokens_p99']:,} · max {s['tokens_max']:,}"
                             + (f"; loss tokens p50 {s['loss_tokens_p50']:,}, loss share {s['loss_share']:.1%}"
                                if "loss_share" in s else ""))
            named = ", ".join(str(t["id"] or f"{t['split']}:{t['row']}") for t in rec["truncated"][:10])
            lines_out.append(f"recommended sequence length {seq:,} tokens (covers {self.cover:.0%} of {scope} rows); "
                             + (f"it truncates {len(over)} row(s): {named}" + (" …" if len(over) > 10 else "")
                                if len(over) else "it truncates none"))
            if self.max_tokens and self.max_tokens < seq:
                lines_out.append(f"limits.max_tokens {self.max_tokens:,} is below the recommended length")
        plots = []
        every = np.concatenate([v[1] for v in per.values()])
        if len(every):
            lo = int(every.min())
            # a long tail (pasted logs) would squash every other bin into one: longer rows go to the last bin
            hi = min(int(every.max()), max(int(np.percentile(every, 99.5) * 1.1), rec.get("seq_length", 0)))
            nbins = 30
            step = max(1, math.ceil((hi - lo + 1) / nbins))
            edges = [lo + step * k for k in range(nbins + 1)]
            series = {split: np.histogram(np.minimum(v[1], edges[-1] - 1), bins=edges)[0].astype(int).tolist()
                      for split, v in per.items() if len(v[1])}
            tail = int((every >= edges[-1]).sum())
            total = [sum(c) for c in zip(*series.values(), strict=True)]
            marks = {"recommended": float(rec["seq_length"])} if "seq_length" in rec else {}
            if self.max_tokens:
                marks["max_tokens"] = float(self.max_tokens)
            if self.histogram:
                plots.append(histogram_spec(PLOT_FILE, "tokens per row (chat template applied)", "tokens",
                                            [float(e) for e in edges], series, marks))
            lines_out.append(f"tokens per row {lo:,} `{sparkline(total)}` {edges[-1]:,}"
                             + (f" ({tail} longer row(s) in the last bin)" if tail else "")
                             + (f" · histogram: [{PLOT_FILE}]({PLOT_FILE})" if self.histogram else ""))
        if self.not_rendered:
            lines_out.append(f"{self.not_rendered} row(s) not counted in tokens (not rendered: see `template`)")
        return {"tokens": stats, "sequence_length": rec, "not_rendered": self.not_rendered, "plots": plots,
                "report_lines": lines_out}


def _pct(prefix: str, values: np.ndarray) -> dict[str, int]:
    if not len(values):
        return {}
    p50, p90, p99 = (int(round(x)) for x in np.percentile(values, [50, 90, 99]))
    return {f"{prefix}_p50": p50, f"{prefix}_p90": p90, f"{prefix}_p99": p99, f"{prefix}_max": int(values.max())}
