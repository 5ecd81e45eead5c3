"""Plotly figures for the dashboard, returned as JSON strings that plotly.js draws in the browser.

Why figures are plotly.js figure specs shipped as JSON: the same figure renders in the live dashboard and in the
static release report, the plotly.js that draws it is the one bundled with the Python package (no CDN), and the
browser does the drawing, so the server only pays for one serialisation per page (which the page cache then keeps
until the record changes).
"""

from __future__ import annotations

from collections import defaultdict
from functools import lru_cache
from pathlib import Path
from typing import Any

from gate import install_hint
from gate.errors import GateError

PASS_COLOR = "#1a7f37"
FAIL_COLOR = "#cf222e"
SKIP_COLOR = "#8c959f"
GRID = "#eaeef2"
COLORWAY = ["#0969da", "#bf3989", "#1a7f37", "#9a6700", "#8250df", "#cf222e", "#1b7c83", "#57606a"]
DIFF_RULES = {"superiority", "non_inferiority", "noninferiority", "non-inferiority"}


@lru_cache(maxsize=1)
def plotly_js_path() -> Path:
    """The plotly.min.js shipped inside the plotly Python package."""
    import importlib.util

    spec = importlib.util.find_spec("plotly")
    if spec is None or not spec.submodule_search_locations:
        raise GateError(f"plotly is not installed ({install_hint('service')})")
    path = Path(next(iter(spec.submodule_search_locations))) / "package_data" / "plotly.min.js"
    if not path.is_file():
        raise GateError("the plotly package has no bundled plotly.min.js", file=str(path))
    return path


def _to_json(fig: dict[str, Any]) -> str:
    import orjson

    text = orjson.dumps(fig, option=orjson.OPT_SERIALIZE_NUMPY).decode()
    return text.replace("</", "<\\/")  # the JSON sits inside a <script> element


def _r(x: Any) -> Any:
    """Four decimals are what a reader can see; seventeen triple the page."""
    return round(x, 5) if isinstance(x, float) else x


def _err(rows: list[dict[str, Any]], value: str = "observed") -> dict[str, Any] | None:
    plus, minus, any_ci = [], [], False
    for r in rows:
        v, lo, hi = r.get(value), r.get("ci_low"), r.get("ci_high")
        if v is None or lo is None or hi is None:
            plus.append(None)
            minus.append(None)
            continue
        any_ci = True
        plus.append(_r(max(hi - v, 0.0)))
        minus.append(_r(max(v - lo, 0.0)))
    if not any_ci:
        return None
    return {"type": "data", "symmetric": False, "array": plus, "arrayminus": minus, "thickness": 1, "width": 2}


def _verdict_color(v: str | None) -> str:
    return {"pass": PASS_COLOR, "fail": FAIL_COLOR}.get((v or "").lower(), SKIP_COLOR)


def _axis(**kw: Any) -> dict[str, Any]:
    return {"gridcolor": GRID, "zerolinecolor": GRID, "automargin": True, **kw}


def _layout(title: str, height: int, **kw: Any) -> dict[str, Any]:
    return {"title": {"text": title, "x": 0, "font": {"size": 15}}, "height": height,
            "margin": {"l": 50, "r": 20, "t": 60, "b": 40}, "paper_bgcolor": "#fff", "plot_bgcolor": "#fff",
            "font": {"family": "system-ui, sans-serif", "size": 12}, "colorway": COLORWAY,
            "legend": {"orientation": "h", "y": -0.15}, "hovermode": "closest", **kw}


MIN_PAD_S = 12 * 3600  # half a day either side of a lone release (nothing to fit; no millisecond autorange)
MIN_SPAN_PAD_S = 10  # either side of releases a span apart: the axis fits the span, never sub-second ticks


def _time_range(columns: list[list[Any]]) -> dict[str, Any]:
    """An explicit x range that fits the releases' times: their span padded by 5% of it (at least `MIN_SPAN_PAD_S`
    either side), or a day around a single release.

    Why: plotly's autorange over one release zooms to milliseconds and shows sub-second ticks that say nothing;
    but a fixed day-wide floor put two releases 10 s apart on one line. So only a lone time (no span to fit) gets
    the day; any span gets an axis of its own size, with ticks in seconds, minutes or days to match (never below
    a second: the padding keeps the range at least 20 s wide).
    """
    from datetime import datetime, timedelta

    times = [datetime.fromisoformat(str(t).replace("Z", "+00:00")) for col in columns for t in col if t]
    if not times:
        return {}
    lo, hi = min(times), max(times)
    span = (hi - lo).total_seconds()
    pad = timedelta(seconds=MIN_PAD_S if span == 0 else max(span * 0.05, MIN_SPAN_PAD_S))
    fmt = "%Y-%m-%d %H:%M:%S"
    return {"range": [(lo - pad).strftime(fmt), (hi + pad).strftime(fmt)],
            "tickformatstops": [{"dtickrange": [None, 60_000], "value": "%H:%M:%S"},
                                {"dtickrange": [60_000, 86_400_000], "value": "%b %d %H:%M"},
                                {"dtickrange": [86_400_000, None], "value": "%b %d, %Y"}]}


def _kind(rule: str | None) -> str:
    return "diff" if (rule or "").lower() in DIFF_RULES else "abs"


def _groups(cols: dict[str, list[Any]]) -> list[tuple[str, str, int, int]]:
    """(scorecard, gate, start, stop) of each contiguous run in columns sorted by scorecard and gate."""
    out: list[tuple[str, str, int, int]] = []
    cards, gates = cols["scorecard"], cols["gate"]
    start = 0
    for i in range(1, len(cards) + 1):
        if i == len(cards) or cards[i] != cards[start] or gates[i] != gates[start]:
            out.append((cards[start], gates[start], start, i))
            start = i
    return out if cards else []


def release_history(cols: dict[str, list[Any]]) -> dict[str, str]:
    """scorecard -> figure: each gated metric of every release over time, with the decision's 95% interval.

    Differences against the baseline (superiority, non-inferiority) go on the upper panel with a zero line;
    absolute metrics on the lower one, so a 0.03 improvement is not flattened by a 0.98 threshold. Figures are
    plotly.js figure dicts built directly from the query's columns: plotly's Python objects validate and deep-copy
    every value, which cost ~0.3 s per figure here; the tests check these dicts with `plotly.graph_objects.Figure`.
    """
    by_card: dict[str, list[tuple[str, int, int]]] = defaultdict(list)
    for card, gate, a, b in _groups(cols):
        by_card[card].append((gate, a, b))
    out: dict[str, str] = {}
    for card, gates in by_card.items():
        kinds = {_kind(cols["rule"][a]) for _, a, _ in gates}
        two = len(kinds) == 2
        traces = []
        for gate, a, b in gates:
            lower = two and _kind(cols["rule"][a]) == "abs"
            col = {k: v[a:b] for k, v in cols.items()}
            trace: dict[str, Any] = {
                "type": "scatter", "mode": "lines+markers", "x": col["created_at"], "y": col["observed"],
                "yaxis": "y2" if lower else "y", "name": f"{gate} ({cols['scorer'][a]}.{cols['metric'][a]})",
                "marker": {"color": [_verdict_color(v) for v in col["gate_verdict"]], "size": 6},
                "line": {"width": 1},
                "customdata": list(map(list, zip(col["release_id"], col["verdict"], col["gate_verdict"],
                                                 col["baseline"], col["candidate"], col["p_holm"], strict=True))),
                "hovertemplate": ("%{customdata[0]} (%{customdata[1]})<br>" + gate + ": %{y:.4f} "
                                  "[gate %{customdata[2]}]<br>baseline %{customdata[3]:.4f} · candidate "
                                  "%{customdata[4]:.4f} · p(Holm) %{customdata[5]:.3g}<extra></extra>"),
                "meta": {"scorecard": card, "gate": gate}}
            if any(v is not None for v in col["err_plus"]):
                trace["error_y"] = {"type": "data", "symmetric": False, "array": col["err_plus"],
                                    "arrayminus": col["err_minus"], "thickness": 1, "width": 2}
            traces.append(trace)
        layout = _layout(f"{card}: gated metrics per release", 420 if two else 320,
                         xaxis=_axis(type="date", **_time_range([cols["created_at"][a:b] for _, a, b in gates])))
        if two:
            layout["xaxis"]["anchor"] = "y2"  # dates under the lower panel; both panels share the time axis
            layout["yaxis"] = _axis(domain=[0.55, 1.0], title={"text": "Δ vs baseline (95% CI)"})
            layout["yaxis2"] = _axis(domain=[0.0, 0.42], title={"text": "value (95% CI)"})
        else:
            kind = next(iter(kinds))
            layout["yaxis"] = _axis(title={"text": "Δ vs baseline (95% CI)" if kind == "diff" else "value"})
        if "diff" in kinds:
            layout["shapes"] = [{"type": "line", "xref": "paper", "x0": 0, "x1": 1, "yref": "y", "y0": 0, "y1": 0,
                                 "line": {"dash": "dot", "color": "#57606a", "width": 1}}]
        out[card] = _to_json({"data": traces, "layout": layout})
    return out


def category_breakdown(comparisons: list[dict[str, Any]]) -> str | None:
    """Per-category paired difference of every compared metric, with its interval ('all' first, as the
    reference); None when no metric was broken down by category."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for c in comparisons:
        groups[f"{c['suite']} · {c['scorer']}.{c['key']}"].append(c)
    traces = []
    for name, rows in groups.items():
        if not any(r["category"] != "all" for r in rows):
            continue
        trace = {"type": "bar", "x": [r["category"] for r in rows], "y": [_r(r.get("delta")) for r in rows],
                 "name": name, "error_y": _err(rows, "delta"),
                 "customdata": [[_r(r.get("baseline")), _r(r.get("candidate")), r.get("n_pairs"),
                                 _r(r.get("p_value"))] for r in rows],
                 "hovertemplate": ("%{x}: Δ %{y:.4f}<br>baseline %{customdata[0]:.4f} · candidate "
                                   "%{customdata[1]:.4f}<br>n %{customdata[2]} · p %{customdata[3]:.3g}<extra>"
                                   + name + "</extra>")}
        if trace["error_y"] is None:
            del trace["error_y"]
        traces.append(trace)
    if not traces:
        return None
    layout = _layout("Δ candidate − baseline per category (95% CI)", 380, barmode="group",
                     xaxis=_axis(type="category"), yaxis=_axis(title={"text": "Δ"}))
    layout["legend"]["y"] = -0.2
    return _to_json({"data": traces, "layout": layout})


def release_diff(a_id: str, b_id: str, rows: list[dict[str, Any]]) -> str | None:
    """Side-by-side paired differences (95% CI) of the metrics two releases share, category 'all'."""
    if not rows:
        return None
    traces = []
    for side, rid in (("a", a_id), ("b", b_id)):
        sub = [{"delta": r.get(f"{side}_delta"), "ci_low": r.get(f"{side}_ci_low"),
                "ci_high": r.get(f"{side}_ci_high")} for r in rows]
        trace = {"type": "bar", "x": [r["metric"] for r in rows], "y": [_r(s["delta"]) for s in sub], "name": rid,
                 "error_y": _err(sub, "delta")}
        if trace["error_y"] is None:
            del trace["error_y"]
        traces.append(trace)
    layout = _layout("Δ vs baseline, side by side (95% CI)", 360, barmode="group", xaxis=_axis(type="category"),
                     yaxis=_axis(title={"text": "Δ"}))
    layout["margin"]["b"] = 80
    layout["legend"]["y"] = -0.3
    return _to_json({"data": traces, "layout": layout})


def length_chart(details: dict[str, Any]) -> str | None:
    """The `length` check's picture: its token histogram (stacked per split, with the recommended length and the
    limit as lines) when the contract names a tokenizer, else each split's character-length percentiles with the
    contract's row limit. None when the check did not run.

    Why the fallback is percentiles, not a histogram: without a tokenizer the check stores p50/p90/p99/max per
    split, not per-row lengths, and the page draws what the record holds rather than re-reading the dataset.
    """
    hist = next((p for p in details.get("plots") or [] if p.get("kind") == "histogram"), None)
    if hist:
        edges = hist["edges"]
        mids = [(a + b) / 2 for a, b in zip(edges[:-1], edges[1:], strict=True)]
        widths = [b - a for a, b in zip(edges[:-1], edges[1:], strict=True)]
        traces: list[dict[str, Any]] = [{"type": "bar", "x": mids, "y": counts, "width": widths, "name": split}
                                        for split, counts in hist["series"].items()]
        shapes = [{"type": "line", "xref": "x", "yref": "paper", "x0": x, "x1": x, "y0": 0, "y1": 1,
                   "line": {"dash": "dash", "color": "#24292f", "width": 1}} for x in hist.get("lines", {}).values()]
        notes = [{"x": x, "y": 1, "xref": "x", "yref": "paper", "text": name, "showarrow": False,
                  "yanchor": "bottom"} for name, x in hist.get("lines", {}).items()]
        layout = _layout(hist.get("title") or "tokens per row", 340, barmode="stack", bargap=0,
                         xaxis=_axis(title={"text": hist.get("xlabel") or "tokens"}),
                         yaxis=_axis(title={"text": "rows"}), shapes=shapes, annotations=notes)
        return _to_json({"data": traces, "layout": layout})
    splits = details.get("splits") or {}
    if not splits:
        return None
    stats = ["chars_p50", "chars_p90", "chars_p99", "chars_max"]
    traces = [{"type": "bar", "x": [s.removeprefix("chars_") for s in stats], "y": [v.get(s) for s in stats],
               "name": f"{split} ({v.get('rows')} rows)"} for split, v in splits.items()]
    limit = (details.get("limits") or {}).get("max_row_chars")
    layout = _layout("characters per row, by split (percentiles)", 320, barmode="group",
                     xaxis=_axis(type="category"), yaxis=_axis(title={"text": "characters"}))
    if limit:
        layout["shapes"] = [{"type": "line", "xref": "paper", "x0": 0, "x1": 1, "yref": "y", "y0": limit,
                             "y1": limit, "line": {"dash": "dash", "color": FAIL_COLOR, "width": 1}}]
        layout["annotations"] = [{"xref": "paper", "x": 1, "y": limit, "yref": "y", "text": f"max_row_chars {limit}",
                                  "showarrow": False, "xanchor": "right", "yanchor": "bottom"}]
    return _to_json({"data": traces, "layout": layout})

