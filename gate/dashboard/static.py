"""The static release report: one release page as files a reviewer can open without a server or the internet.

Why plotly.min.js is copied next to the page rather than loaded from a CDN: release evidence gets archived and
opened years later, often behind a firewall; the report must draw its charts from what is in its own folder. The
folder is written atomically (gate/io/atomic.py): it appears whole or not at all.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from gate.dashboard import pages
from gate.dashboard.charts import plotly_js_path
from gate.io.atomic import atomic_dir


def write_release_report(db_path: str, release_id: str, out_dir: str | Path, *,
                         scorecard: str | None = None) -> Path:
    """Writes `out_dir/index.html` (the release page: gates, history, per-category breakdown, data checks, pins),
    `out_dir/items.html` (per-item answers, baseline vs candidate; with the prompts when `scorecard` names the
    scorecard file the decision used) and `out_dir/plotly.min.js` (the plotly Python package's bundled copy);
    returns the release page's path."""
    text = pages.report(db_path, release_id, plotly_src="plotly.min.js", base=".")
    prompts = pages.scorecard_prompts(scorecard) if scorecard else None
    items = pages.items(db_path, release_id, prompts=prompts, plotly_src="plotly.min.js", base=".", links=False,
                        subtitle="static release report")
    js = plotly_js_path()
    with atomic_dir(out_dir) as tmp:
        (tmp / "index.html").write_text(text, encoding="utf-8")
        (tmp / "items.html").write_text(items, encoding="utf-8")
        shutil.copyfile(js, tmp / "plotly.min.js")
    return Path(out_dir) / "index.html"
