"""`gate review`: the CLI face of the hard-case queue (gate.review): build it, write it, record it, print a table.
With GATE_URL set, a job on the shared service instead (gate.service.remote), which records the queue."""

from __future__ import annotations

import os

from rich.table import Table

from gate.errors import ExitCode
from gate.report.console import make_console
from gate.requests import ReviewRequest


def run_review_command(req: ReviewRequest) -> int:
    if os.environ.get("GATE_URL"):  # a shared service is the writer: the queue is built and recorded there
        from gate.service.remote import refuse_unsent, remote_review

        refused = refuse_unsent(req)
        return refused if refused is not None else remote_review(req)
    from gate.review.files import write_review
    from gate.review.queue import build_review

    review = build_review(req)
    out = req.out
    review_id = write_review(review, out)
    if req.record:
        from gate.store.review import record_review

        record_review(review_id, review, req.db)
    console = make_console()
    if not req.quiet:
        table = Table(title=f"gate review · {len(review.cases)} case(s), first to read first", title_justify="left")
        for col in ("#", "reason", "row", "why", "margin"):
            table.add_column(col, overflow="fold")
        for c in review.cases[:20]:
            table.add_row(str(c.rank), c.reason, f"{c.split}:{c.row}" + (f" ({c.row_id})" if c.row_id else ""),
                          c.detail[:90], "" if c.margin is None else f"{c.margin:+.2f}")
        console.print(table)
    if review.model:
        console.print(f"model {review.model}: {review.rows_asked} row(s) asked, {review.rows_agreeing} agree with "
                      f"their gold answer, {len(review.engine_errors)} engine error(s)", markup=False,
                      highlight=False)
        for err in review.engine_errors[:5]:
            console.print(f"  engine error {err}", markup=False, highlight=False)
    console.print(f"{review_id}: {out}/review.html, {out}/review.jsonl", markup=False, highlight=False,
                  soft_wrap=True)
    # incomplete, as `gate score` is when requests failed: the queue lacks those rows, which is not a failed gate
    return int(ExitCode.ERROR if review.engine_errors else ExitCode.PASS)
