"""Figures for the report: a histogram of token lengths, saved as a PNG next to report.md.

Checks describe a figure as data (`details["plots"]`: file name, bin edges, counts per series) so report.json
and the DuckDB record stay small; the report writer calls `save_plot`, which needs matplotlib (imported here,
lazily) and writes nothing without it.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

SPARK = "▁▂▃▄▅▆▇█"


def sparkline(counts: list[int]) -> str:
    """Counts as a row of block characters (empty bins as spaces), for Markdown and terminals."""
    top = max(counts) if counts else 0
    if not top:
        return ""
    return "".join(" " if c == 0 else SPARK[min(len(SPARK) - 1, (c * len(SPARK) - 1) // top)] for c in counts)


def histogram_spec(file: str, title: str, xlabel: str, edges: list[float], series: dict[str, list[int]],
                   lines: dict[str, float] | None = None) -> dict[str, Any]:
    return {"kind": "histogram", "file": file, "title": title, "xlabel": xlabel, "edges": edges,
            "series": series, "lines": lines or {}}


def render_png(spec: dict[str, Any]) -> bytes | None:
    """The PNG bytes of a histogram spec; None without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg", force=False)
        from matplotlib.figure import Figure
    except ImportError:
        return None
    edges = spec["edges"]
    fig = Figure(figsize=(7, 3.2), dpi=100)
    ax = fig.add_subplot(1, 1, 1)
    bottom = [0] * (len(edges) - 1)
    widths = [b - a for a, b in zip(edges[:-1], edges[1:], strict=True)]
    for name, counts in spec["series"].items():
        ax.bar(edges[:-1], counts, width=widths, bottom=bottom, align="edge", label=name, edgecolor="white",
               linewidth=0.3)
        bottom = [b + c for b, c in zip(bottom, counts, strict=True)]
    for label, x in spec.get("lines", {}).items():
        ax.axvline(x, color="black", linestyle="--", linewidth=1)
        ax.annotate(label, (x, max(bottom) if bottom else 0), fontsize=7, ha="right", va="top", rotation=90)
    ax.set_title(spec["title"], fontsize=9)
    ax.set_xlabel(spec["xlabel"], fontsize=8)
    ax.set_ylabel("rows", fontsize=8)
    ax.tick_params(labelsize=7)
    if len(spec["series"]) > 1:
        ax.legend(fontsize=7)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()


def save_plot(spec: dict[str, Any], path: Path) -> bool:
    png = render_png(spec)
    if png is None:
        return False
    Path(path).write_bytes(png)
    return True
