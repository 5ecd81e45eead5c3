"""The queue's files, written the same way by the CLI and by the service's worker: review.jsonl, review.html, and
the id the record keeps them under (the hash of the JSONL, so one queue has one id wherever it was built)."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

FILES = ("review.jsonl", "review.html")


def write_review(review: Any, out: str | Path) -> str:
    """Writes both files atomically under `out`; returns the queue's review id."""
    from gate.io.atomic import atomic_write_text
    from gate.review.page import render_html

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    lines = "".join(json.dumps(c.to_dict(), ensure_ascii=False, sort_keys=True) + "\n" for c in review.cases)
    atomic_write_text(out / "review.jsonl", lines)
    atomic_write_text(out / "review.html", render_html(review))
    return "review-" + datetime.now(UTC).strftime("%Y%m%d%H%M%S") + "-" + hashlib.sha256(
        lines.encode()).hexdigest()[:8]
