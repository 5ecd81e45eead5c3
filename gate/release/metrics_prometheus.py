"""The Prometheus source of `gate watch`: text exposition parsed by `prometheus_client`, histogram quantiles,
counter increases over a window, and the triggers judged on scrapes (the verdict itself is gate.release.watch's).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from gate.errors import GateError, InputError
from gate.release.watch import judge, window_seconds

_SELECTOR = re.compile(r'^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})?$')
_MATCHER = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(?:,|$)')


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
