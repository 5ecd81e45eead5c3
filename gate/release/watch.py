"""Production watch: the scorecard's rollback triggers evaluated on what production reports about one release.

The same file that gated the release says when to undo it, so the thresholds that let a model in and the ones that
take it out are reviewed together. Two sources, both read the same way once or, with `--follow`, again and again:

- a JSONL file of rows `{"metric": "latency_ms", "value": 812.0, "ts": "2026-12-01T10:00:00Z", "release": "rel-3"}`
  (`ts`: ISO 8601 with a time zone, or Unix seconds; `release` optional). Rows about another release are left out,
  so metrics about rel-1 can never roll back rel-3. A row that is not that ends the run with one line naming file,
  line and field.
- a Prometheus text endpoint (`http(s)://host:port/metrics`: vLLM's and SGLang's servers), parsed by the real
  `prometheus_client` parser. A trigger names a family (`vllm:e2e_request_latency_seconds`) or a sample
  (`vllm:request_success_total`), optionally with label matchers (`{finished_reason="abort"}`): histograms give
  quantiles (interpolated in the buckets, as Prometheus's `histogram_quantile` does), mean, count and sum; counters
  their increase (`sum`; a restart that resets them is detected); gauges any aggregate over the scrapes in the window
  (without one: the newest scrape).

A trigger with `window: 15m` counts only the last 15 minutes: for rows, those whose `ts` is within the window before
the newest row's `ts` (data time, so a replayed file gives the same answer as the live one); for an endpoint, the
difference between the newest scrape and the newest one at least the window older (cumulative counters make one
scrape meaningless for a window). Without a window, everything read counts (an endpoint: since the server started).

The sources live apart (gate.release.metrics_jsonl, gate.release.metrics_prometheus); this module holds what both
share: the sample, the trigger windows and the one verdict per trigger.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from gate.errors import GateError, InputError

_WINDOW = re.compile(r"^([1-9][0-9]*)(s|m|h|d)$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}


class Sample(NamedTuple):
    """One JSONL row: `ts` in Unix seconds (None when the row has none), `line` for the one-line errors."""

    metric: str
    value: float
    ts: float | None
    release: str | None
    line: int


def window_seconds(trigger: dict[str, Any]) -> float | None:
    """`window: 15m` -> 900.0; None when the trigger counts everything read."""
    w = trigger.get("window")
    if w is None:
        return None
    m = _WINDOW.match(str(w))
    if not m:  # the scorecard schema refuses this already; kept for callers that build triggers by hand
        raise GateError(f"window {w!r} is not a duration like 30s, 15m, 2h or 1d", field="window")
    return float(int(m.group(1)) * _UNIT_S[m.group(2)])


def values_in_window(rows: Sequence[Sample], trigger: dict[str, Any], *, file: str) -> tuple[list[float], str]:
    """The values a trigger judges, and a note on the window ('' without one)."""
    mine = [r for r in rows if r.metric == trigger["metric"]]
    span = window_seconds(trigger)
    if span is None:
        return [r.value for r in mine], ""
    for r in mine:
        if r.ts is None:
            raise InputError(f"row has no ts, and trigger '{trigger['name']}' counts only the last "
                             f"{trigger['window']}", file=file, line=r.line, field="ts")
    stamped = [r.ts for r in rows if r.ts is not None]
    if not mine or not stamped:
        return [], ""
    end = max(stamped)
    return [r.value for r in mine if end - span < r.ts <= end], f" (last {trigger['window']})"  # type: ignore[operator]


def _row(t: dict[str, Any], *, observed: float | None, n: int, fired: bool, note: str) -> dict[str, Any]:
    op, threshold = (">", float(t["above"])) if "above" in t else ("<", float(t["below"]))
    return {"trigger": t["name"], "metric": t["metric"], "aggregate": t.get("aggregate", "mean"), "op": op,
            "threshold": threshold, "observed": observed, "n": n, "fired": bool(fired), "note": note}


def judge(t: dict[str, Any], observed: float | None, n: int, *, why_unmeasured: str = "no rows for this metric",
          suffix: str = "") -> dict[str, Any]:
    """One trigger's verdict from its observed aggregate and sample count (the one place `min_samples` applies)."""
    agg = t.get("aggregate", "mean")
    op, threshold = (">", float(t["above"])) if "above" in t else ("<", float(t["below"]))
    need = int(t.get("min_samples", 1))
    if observed is None or (isinstance(observed, float) and math.isnan(observed)):
        return _row(t, observed=None, n=n, fired=False, note=f"not measured: {why_unmeasured}")
    if n < need:
        return _row(t, observed=observed, n=n, fired=False,
                    note=f"insufficient data: {n} of {need} samples needed{suffix}")
    fired = observed > threshold if op == ">" else observed < threshold
    note = f"{agg} {observed:.4g} {op} {threshold:g}" if fired else f"{agg} {observed:.4g} within limit"
    return _row(t, observed=observed, n=n, fired=fired, note=note + suffix)


def evaluate_triggers(triggers: Iterable[dict[str, Any]], rows: Sequence[Sample], *,
                      file: str = "metrics") -> list[dict[str, Any]]:
    """One row per trigger over JSONL samples: observed aggregate, threshold, whether it fired and why not."""
    import numpy as np

    from gate.decide.stats import percentile

    out = []
    for t in triggers:
        values, suffix = values_in_window(rows, t, file=file)
        agg = t.get("aggregate", "mean")
        observed = percentile(np.asarray(values, dtype=np.float64), agg) if values or agg == "count" else None
        out.append(judge(t, observed, len(values), suffix=suffix))
    return out


