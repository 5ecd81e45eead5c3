"""The static check-run page: one `gate check` run as files a reviewer opens without a server or the internet.

Why it is the dashboard's own check-run page (gate/dashboard/pages.py `check_report`) rather than a second
renderer: the static page and the live one must show the same evidence, redacted the same way (every quoted value
goes through gate.pii.redact on the way out). Like great-expectations' Data Docs, it is a folder: index.html plus
the plotly.min.js the plotly Python package bundles, written atomically (it appears whole or not at all).
"""

from __future__ import annotations

import shutil
from pathlib import Path


def write_check_report(db_path: str, run_id: str, out_dir: str | Path) -> Path:
    """Writes `out_dir/index.html` (verdict, each check's counts, findings with redacted snippets, lengths,
    duplicate clusters) and `out_dir/plotly.min.js`; returns the page's path. Nothing is written for an unknown
    run (GateError)."""
    from gate.dashboard import pages
    from gate.dashboard.charts import plotly_js_path
    from gate.io.atomic import atomic_dir

    text = pages.check_report(db_path, run_id, plotly_src="plotly.min.js", base=".")
    js = plotly_js_path()
    with atomic_dir(out_dir) as tmp:
        (tmp / "index.html").write_text(text, encoding="utf-8")
        shutil.copyfile(js, tmp / "plotly.min.js")
    return Path(out_dir) / "index.html"
