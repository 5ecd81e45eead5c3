"""Production watch: the scorecard's rollback triggers evaluated on metrics fed in as JSONL.

The same file that gated the release says when to undo it, so the thresholds that let a model in and the ones that
take it out are reviewed together. Rows are `{"metric": "latency_ms", "value": 812.0}` (extra fields such as `ts`
or `release` are kept out of the way); any row that is not that ends the run with one line naming file, line, field.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

from gate.errors import InputError


def read_metrics(path: str) -> tuple[dict[str, list[float]], str]:
    """metric -> values in file order, and the file's sha256."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise InputError("metrics file not found", file=path) from None
    except OSError as exc:
        raise InputError(f"cannot read metrics file ({exc.strerror or exc})", file=path) from None
    out: dict[str, list[float]] = {}
    for no, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except UnicodeDecodeError:
            raise InputError("row is not UTF-8", file=path, line=no) from None
        except ValueError as exc:
            raise InputError(f"malformed JSON: {exc.args[0].split(':')[0]}", file=path, line=no) from None
        if not isinstance(row, dict):
            raise InputError("a metrics row must be a JSON object", file=path, line=no)
        metric = row.get("metric")
        if not isinstance(metric, str) or not metric.strip():
            raise InputError("missing or empty metric name", file=path, line=no, field="metric")
        value = row.get("value")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InputError(f"value must be a number, got {type(value).__name__ if 'value' in row else 'nothing'}",
                             file=path, line=no, field="value")
        if not math.isfinite(value):
            raise InputError("value must be finite", file=path, line=no, field="value")
        out.setdefault(metric, []).append(float(value))
    if not out:
        raise InputError("metrics file has no rows", file=path)
    return out, hashlib.sha256(raw).hexdigest()


def evaluate_triggers(triggers: tuple[dict[str, Any], ...] | list[dict[str, Any]],
                      metrics: dict[str, list[float]]) -> list[dict[str, Any]]:
    """One row per trigger: observed aggregate, threshold, whether it fired and why not when it did not."""
    import numpy as np

    from gate.decide.stats import percentile

    rows = []
    for t in triggers:
        values = metrics.get(t["metric"], [])
        agg = t.get("aggregate", "mean")
        op, threshold = (">", float(t["above"])) if "above" in t else ("<", float(t["below"]))
        need = int(t.get("min_samples", 1))
        observed = percentile(np.asarray(values, dtype=np.float64), agg) if values or agg == "count" else None
        fired = False
        if not values and agg != "count":
            note = "not measured: no rows for this metric"
        elif len(values) < need:
            note = f"insufficient data: {len(values)} of {need} samples needed"
        else:
            fired = observed > threshold if op == ">" else observed < threshold  # type: ignore[operator]
            note = f"{agg} {observed:.4g} {op} {threshold:g}" if fired else f"{agg} {observed:.4g} within limit"
        rows.append({"trigger": t["name"], "metric": t["metric"], "aggregate": agg, "op": op,
                     "threshold": threshold, "observed": observed, "n": len(values), "fired": bool(fired),
                     "note": note})
    return rows
