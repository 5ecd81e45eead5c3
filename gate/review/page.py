"""review.html: the queue as a page a reviewer opens beside the data (no server needed).

Every text in it is already masked by the queue (gate.review.queue.masked); the page escapes it once more as HTML,
so a row that holds markup cannot run in the reviewer's browser."""

from __future__ import annotations

from html import escape
from typing import Any

_STYLE = """body{font:14px system-ui,sans-serif;margin:2rem;color:#1b1f24}table{border-collapse:collapse;width:100%}
th,td{border-bottom:1px solid #d0d7de;padding:.4rem;text-align:left;vertical-align:top}th{background:#f6f8fa}
td.t{font-family:ui-monospace,monospace;font-size:12px;max-width:28rem;word-break:break-word}
.r{white-space:nowrap}caption{text-align:left;font-weight:600;margin:.5rem 0}"""


def _cell(v: Any, cls: str = "") -> str:
    text = "" if v is None else (f"{v:+.3f}" if isinstance(v, float) else str(v))
    return f"<td{f' class={cls}' if cls else ''}>{escape(text)}</td>"


def render_html(review: Any) -> str:
    """One row per case: rank, reason, where (split:row, id, partner), the prompt, gold and model answers, margin."""
    head = ("<tr><th>#</th><th>reason</th><th>row</th><th>why</th><th>prompt</th><th>gold answer</th>"
            "<th>model answer</th><th>margin</th></tr>")
    body = []
    for c in review.cases:
        where = f"{c.split}:{c.row}" + (f" ({c.row_id})" if c.row_id else "")
        if c.partner_row is not None:
            where += f" vs {c.split}:{c.partner_row}" + (f" ({c.partner_id})" if c.partner_id else "")
        body.append("<tr>" + _cell(c.rank, "r") + _cell(c.reason, "r") + _cell(where, "r") + _cell(c.detail)
                    + _cell(c.prompt, "t") + _cell(c.gold, "t") + _cell(c.answer, "t") + _cell(c.margin, "r")
                    + "</tr>")
    counts = ", ".join(f"{k}: {v}" for k, v in sorted(review.by_reason.items())) or "no cases"
    model = (f"model {escape(str(review.model))} ({escape(str(review.engine))}): {review.rows_asked} rows asked, "
             f"{review.rows_agreeing} agree with their gold answer, {len(review.engine_errors)} engine errors"
             if review.model else "no model: check findings only")
    return ("<!doctype html><html lang=en><head><meta charset=utf-8><title>gate review</title>"
            f"<style>{_STYLE}</style></head><body><h1>gate review</h1>"
            f"<p>{escape(review.dataset)} · contract {escape(review.contract)} "
            f"(sha256 {escape(review.contract_sha256[:12])}) · {model}</p><p>{escape(counts)}</p>"
            f"<table><caption>{len(review.cases)} cases, first to read first</caption>{head}{''.join(body)}"
            "</table></body></html>\n")
