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
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

from gate.errors import GateError, InputError
from gate.io.rows import parse_line

_WINDOW = re.compile(r"^([1-9][0-9]*)(s|m|h|d)$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_SELECTOR = re.compile(r'^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})?$')
_MATCHER = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(?:,|$)')


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


def parse_ts(value: Any, *, file: str, line: int) -> float:
    """ISO 8601 with a time zone, or Unix seconds: a naive time would be read in whatever zone this machine is in."""
    if isinstance(value, bool):
        raise InputError("ts must be an ISO 8601 time or Unix seconds, got bool", file=file, line=line, field="ts")
    if isinstance(value, (int, float)):
        if not math.isfinite(value):
            raise InputError("ts must be finite", file=file, line=line, field="ts")
        return float(value)
    if not isinstance(value, str):
        raise InputError(f"ts must be an ISO 8601 time or Unix seconds, got {type(value).__name__}", file=file,
                         line=line, field="ts")
    try:
        t = datetime.fromisoformat(value)
    except ValueError:
        raise InputError(f"ts {value[:40]!r} is not an ISO 8601 time", file=file, line=line, field="ts") from None
    if t.tzinfo is None:
        raise InputError("ts has no time zone (write Z or +00:00)", file=file, line=line, field="ts")
    return t.timestamp()


def parse_row(raw: bytes, *, file: str, line: int) -> Sample | None:
    """One JSONL line -> Sample (None for a blank line); anything else is one InputError naming file:line: field."""
    if not raw.strip():
        return None
    row = parse_line(raw, file, line)
    metric = row.get("metric")
    if not isinstance(metric, str) or not metric.strip():
        raise InputError("missing or empty metric name", file=file, line=line, field="metric")
    value = row.get("value")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"value must be a number, got {type(value).__name__ if 'value' in row else 'nothing'}",
                         file=file, line=line, field="value")
    if not math.isfinite(value):
        raise InputError("value must be finite", file=file, line=line, field="value")
    ts = parse_ts(row["ts"], file=file, line=line) if row.get("ts") is not None else None
    release = row.get("release")
    if release is not None and (not isinstance(release, str) or not release.strip()):
        raise InputError("release must be a non-empty string", file=file, line=line, field="release")
    return Sample(metric, float(value), ts, release, line)


class JsonlSource:
    """A metrics file read incrementally: each `poll()` returns the complete rows appended since the last one.

    A last line without its newline is kept back until it is complete (a writer may be half-way through it); a file
    that shrank was rotated or truncated and is read again from its start.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.offset = 0
        self.lines = 0
        self.pending = b""
        self.digest = hashlib.sha256()

    @property
    def label(self) -> str:
        return self.path

    def sha256(self) -> str:
        return self.digest.hexdigest()

    def poll(self, *, final: bool = False) -> list[Sample]:
        p = Path(self.path)
        try:
            size = p.stat().st_size
            if size < self.offset:
                self.offset, self.lines, self.pending = 0, 0, b""
            with p.open("rb") as fh:
                fh.seek(self.offset)
                data = fh.read()
        except FileNotFoundError:
            raise InputError("metrics file not found", file=self.path) from None
        except OSError as exc:
            raise InputError(f"cannot read metrics file ({exc.strerror or exc})", file=self.path) from None
        self.offset += len(data)
        self.digest.update(data)
        data = self.pending + data
        parts = data.split(b"\n")
        self.pending = b"" if final else parts.pop()
        out = []
        for part in parts:
            self.lines += 1
            s = parse_row(part, file=self.path, line=self.lines)
            if s is not None:
                out.append(s)
        return out


def read_metrics(path: str) -> tuple[list[Sample], str]:
    """Every row of a metrics file (a last line without newline included) and the file's sha256."""
    src = JsonlSource(path)
    rows = src.poll(final=True)
    if not rows:
        raise InputError("metrics file has no rows", file=path)
    return rows, src.sha256()


def select_release(rows: Sequence[Sample], release_id: str | None, *, file: str) -> tuple[list[Sample], int]:
    """The rows about `release_id` (rows naming no release count for it) and how many were about another one.

    With no release known (no record, no --release), rows that name two releases cannot be judged together."""
    if release_id is None:
        named = sorted({r.release for r in rows if r.release is not None})
        if len(named) > 1:
            raise InputError(f"rows are about several releases ({', '.join(named[:5])}): name one with --release",
                             file=file)
        return list(rows), 0
    kept = [r for r in rows if r.release is None or r.release == release_id]
    return kept, len(rows) - len(kept)


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


# ---- Prometheus text endpoints ----

@dataclass
class Scrape:
    """One read of an endpoint: when (Unix seconds, this machine's clock), the parsed samples, the body's sha256."""

    at: float
    samples: list[tuple[str, dict[str, str], float]]
    types: dict[str, str]  # family name -> counter | gauge | histogram | summary | untyped ...
    sha256: str


def parse_prometheus(text: str, *, at: float, source: str) -> Scrape:
    """The exposition text through prometheus_client's own parser; a body it refuses is one line naming the URL."""
    try:
        from prometheus_client.parser import text_string_to_metric_families
    except ImportError:
        raise GateError("reading a Prometheus endpoint needs prometheus_client (pip install prometheus_client)",
                        file=source) from None

    samples: list[tuple[str, dict[str, str], float]] = []
    types: dict[str, str] = {}
    try:
        for fam in text_string_to_metric_families(text):
            types[fam.name] = fam.type
            for s in fam.samples:
                if fam.type == "histogram" and s.name.endswith("_bucket"):
                    float(s.labels.get("le", "x"))  # a bucket without a numeric bound cannot be interpolated
                types.setdefault(s.name, fam.type)
                samples.append((s.name, dict(s.labels), float(s.value)))
    except (ValueError, TypeError, IndexError) as exc:
        raise InputError(f"not Prometheus text exposition format ({str(exc)[:120]})", file=source) from None
    return Scrape(at=at, samples=samples, types=types, sha256=hashlib.sha256(text.encode()).hexdigest())


def parse_selector(metric: str) -> tuple[str, dict[str, str]]:
    """`name{label="v",...}` -> (name, matchers); a selector that is not that is one line naming the trigger field."""
    m = _SELECTOR.match(metric.strip())
    if not m:
        raise GateError(f"{metric!r} is not a Prometheus metric name with optional {{label=\"value\"}} matchers",
                        field="metric")
    name, body = m.group(1), (m.group(2) or "").strip()
    matchers: dict[str, str] = {}
    pos = 0
    while pos < len(body):
        mm = _MATCHER.match(body, pos)
        if not mm or mm.end() == pos:
            raise GateError(f"cannot read label matchers in {metric!r} (write label=\"value\")", field="metric")
        matchers[mm.group(1)] = json.loads(f'"{mm.group(2)}"')
        pos = mm.end()
    return name, matchers


def _pick(scrape: Scrape, name: str, matchers: dict[str, str], *, skip: tuple[str, ...] = ()) -> list[
        tuple[dict[str, str], float]]:
    return [(labels, v) for n, labels, v in scrape.samples
            if n == name and all(labels.get(k) == want for k, want in matchers.items())
            and not any(k in labels for k in skip)]


def _total(scrape: Scrape | None, name: str, matchers: dict[str, str]) -> float:
    return 0.0 if scrape is None else sum(v for _, v in _pick(scrape, name, matchers))


def _buckets(scrape: Scrape | None, name: str, matchers: dict[str, str]) -> dict[float, float]:
    """Upper bound -> cumulative count, summed over every label set the matchers select."""
    out: dict[float, float] = {}
    if scrape is None:
        return out
    for labels, v in _pick(scrape, name + "_bucket", matchers):
        le = float(labels["le"])
        out[le] = out.get(le, 0.0) + v
    return out


def histogram_quantile(q: float, buckets: dict[float, float]) -> float:
    """Prometheus's `histogram_quantile`: linear interpolation inside the bucket holding rank q * count."""
    bounds = sorted(buckets)
    if not bounds or bounds[-1] != math.inf:
        return math.nan
    total = buckets[math.inf]
    if total <= 0:
        return math.nan
    rank = q * total
    prev_bound, prev_count = 0.0, 0.0
    for i, b in enumerate(bounds):
        c = buckets[b]
        if c >= rank:
            if b == math.inf:
                return prev_bound if i else math.nan  # the highest finite bound, as Prometheus returns
            if i == 0 and b <= 0:
                return b
            if c == prev_count:
                return b
            return prev_bound + (b - prev_bound) * (rank - prev_count) / (c - prev_count)
        prev_bound, prev_count = b, c
    return prev_bound


def _baseline(scrapes: Sequence[Scrape], span: float | None) -> tuple[Scrape | None, str]:
    """The scrape a windowed trigger subtracts: the newest at least `span` older than the last (else the oldest)."""
    last = scrapes[-1]
    if span is None:
        return None, ""
    older = [s for s in scrapes[:-1] if last.at - s.at >= span]
    if older:
        return older[-1], ""
    if len(scrapes) < 2:
        return None, "one scrape"
    first = scrapes[0]
    return first, f" (last {last.at - first.at:.0f}s of the window)"


def evaluate_prometheus(triggers: Iterable[dict[str, Any]], scrapes: Sequence[Scrape]) -> list[dict[str, Any]]:
    """One row per trigger over the scrapes of an endpoint (oldest first)."""
    out = []
    last = scrapes[-1]
    for t in triggers:
        agg = t.get("aggregate", "mean")
        name, matchers = parse_selector(t["metric"])
        span = window_seconds(t)
        base, note = _baseline(scrapes, span)
        if note == "one scrape":
            out.append(judge(t, None, 0, why_unmeasured=f"the {t['window']} window needs two scrapes (--follow)"))
            continue
        suffix = note or (f" (last {t['window']})" if span else " (since the server started)")
        kind = last.types.get(name)
        if kind == "histogram" or (kind is None and last.types.get(name + "_bucket") == "histogram"):
            if base is not None and _total(last, name + "_count", matchers) < _total(base, name + "_count", matchers):
                base, suffix = None, " (since the server restarted)"  # counters reset: what it counted since
            now_b, old_b = _buckets(last, name, matchers), _buckets(base, name, matchers)
            delta = {b: c - old_b.get(b, 0.0) for b, c in now_b.items()}
            count = _total(last, name + "_count", matchers) - _total(base, name + "_count", matchers)
            total = _total(last, name + "_sum", matchers) - _total(base, name + "_sum", matchers)
            if not now_b:
                out.append(judge(t, None, 0, why_unmeasured=f"the endpoint has no {t['metric']}"))
                continue
            if agg.startswith("p") and agg[1:].isdigit():
                observed = histogram_quantile(float(agg[1:]) / 100, delta)
            elif agg == "mean":
                observed = total / count if count > 0 else math.nan
            elif agg == "count":
                observed = count
            elif agg == "sum":
                observed = total
            else:
                out.append(judge(t, None, 0, why_unmeasured=f"a histogram has no {agg} (use a quantile, mean, "
                                                            "count or sum)"))
                continue
            out.append(judge(t, observed, int(round(count)), why_unmeasured="no requests in the window",
                             suffix=suffix))
            continue
        hits = [(labels, v) for labels, v in _pick(last, name, matchers, skip=("le", "quantile"))]
        if not hits:
            out.append(judge(t, None, 0, why_unmeasured=f"the endpoint has no {t['metric']}"))
            continue
        if kind == "counter" or name.endswith("_total") or last.types.get(name) == "counter":
            if agg not in ("sum", "count"):
                out.append(judge(t, None, 0, why_unmeasured=f"a counter only has its increase (aggregate: sum), "
                                                            f"not {agg}"))
                continue
            observed = _total(last, name, matchers) - _total(base, name, matchers)
            if observed < 0:  # the server restarted in the window: its counters began again at 0
                observed, base, suffix = _total(last, name, matchers), None, " (since the server restarted)"
            out.append(judge(t, observed, 2 if base is not None else 1, suffix=suffix))
            continue
        # a gauge (or untyped): the aggregate over the scrapes inside the window
        import numpy as np

        from gate.decide.stats import percentile

        # without a window: the newest scrape alone (a gauge is a reading now, not a history)
        inside = [s for s in scrapes if s.at > last.at - span] if span is not None else [last]
        values = [_total(s, name, matchers) for s in inside if _pick(s, name, matchers)]
        observed = percentile(np.asarray(values, dtype=np.float64), agg)
        out.append(judge(t, observed, len(values), suffix=f" (over {len(values)} scrapes)"))
    return out


@dataclass
class PrometheusSource:
    """An endpoint scraped over plain HTTP(S) with a bounded timeout; the scrapes are kept for the windows."""

    url: str
    timeout_s: float = 10.0
    keep_s: float = 7 * 86400.0
    scrapes: list[Scrape] = field(default_factory=list)

    @property
    def label(self) -> str:
        return safe_url(self.url)

    def sha256(self) -> str:
        return self.scrapes[-1].sha256 if self.scrapes else ""

    def scrape(self) -> Scrape:
        import time

        import httpx

        try:
            resp = httpx.get(self.url, timeout=self.timeout_s, follow_redirects=False,
                             headers={"Accept": "text/plain;version=0.0.4"})
        except httpx.HTTPError as exc:
            raise InputError(f"cannot read the metrics endpoint ({type(exc).__name__})", file=self.label) from None
        if resp.status_code != 200:
            raise InputError(f"the metrics endpoint answered HTTP {resp.status_code}", file=self.label)
        s = parse_prometheus(resp.text, at=time.time(), source=self.label)
        self.scrapes.append(s)
        # keep only what the longest window could still need
        self.scrapes = [x for x in self.scrapes if s.at - x.at <= self.keep_s]
        return s


def safe_url(url: str) -> str:
    """The URL as reports, errors and the record show it: no user:password@ and no query (tokens live there)."""
    from urllib.parse import urlsplit, urlunsplit

    try:
        u = urlsplit(url)
        host = u.hostname or ""
        port = f":{u.port}" if u.port else ""
    except ValueError:
        return "<unreadable URL>"
    host = f"[{host}]" if ":" in host else host
    return urlunsplit((u.scheme, host + port, u.path, "", ""))


def is_url(target: str) -> bool:
    return target.startswith(("http://", "https://"))
