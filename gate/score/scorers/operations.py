"""Operations: how the engine serves, per request, from uncached answers only.

A scorer never aggregates (evaluation notes §1): this one turns each answer into the per-request numbers (latency,
time to first token, output tokens per second, error) and `gate.score.metrics` makes p50/p95/p99 and rates of them.
Peak memory is a property of the engine process over the whole run, so the run measures it (`ProcessMemory`) and
records it beside these. A cached answer carries the latency of a past run on maybe another machine: it yields no
numbers at all, and the scorecard loader insists that a scorecard with this scorer is `kind: operations`, which
bypasses the cache (promptfoo refuses latency assertions on cached results for the same reason).
"""

from __future__ import annotations

import threading
from typing import Any

from gate.engines.types import Response
from gate.score.types import Item, Score

# keys whose distribution matters (percentiles), as opposed to rates (means)
LATENCY_KEYS = ("latency_s", "ttft_s", "output_tokens_per_s")


class Operations:
    type = "operations"
    keys = ("latency_s", "ttft_s", "output_tokens_per_s", "error", "peak_rss_mb")
    options_schema = {"type": "object", "additionalProperties": False, "properties": {}}  # no options
    primary = "error"
    lower_is_better = ("latency_s", "ttft_s", "error", "peak_rss_mb")

    def score(self, item: Item, response: Response) -> Score:
        if response.cached:
            return Score({}, None, "cached answer: operations numbers need an uncached run", {"error": "cached"})
        if response.error:
            return Score({"error": 1.0}, None, f"request failed: {response.error}"[:200], {"error": "engine_error"})
        value: dict[str, float] = {"error": 0.0}
        if response.latency_s is not None:
            value["latency_s"] = float(response.latency_s)
        if response.ttft_s is not None:
            value["ttft_s"] = float(response.ttft_s)
        if response.completion_tokens and response.latency_s:
            gen = response.latency_s - (response.ttft_s or 0.0)
            value["output_tokens_per_s"] = response.completion_tokens / max(gen, 1e-6)
        parts = [f"{k}={v:.3g}" for k, v in value.items() if k != "error"]
        return Score(value, None, ", ".join(parts) or "no timing reported", {})


class ProcessMemory:
    """Samples the resident memory of a process and all its children (vLLM spawns engine workers) in a thread.

    Peak RSS of the tree is what decides whether a model fits next to another on one node; psutil reads it the same
    way on every platform. `pid=None` watches this process (the embedded engine lives here).
    """

    def __init__(self, pid: int | None = None, interval_s: float = 0.1) -> None:
        self.pid = pid
        self.interval_s = interval_s
        self.peak_bytes = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def sample(self) -> int:
        import psutil

        try:
            proc = psutil.Process(self.pid)
            procs = [proc, *proc.children(recursive=True)]
        except psutil.Error:
            return 0
        total = 0
        for p in procs:
            try:
                total += p.memory_info().rss
            except psutil.Error:
                continue
        self.peak_bytes = max(self.peak_bytes, total)
        return total

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.sample()

    def __enter__(self) -> ProcessMemory:
        self.sample()
        self._thread = threading.Thread(target=self._loop, name="gate-memory", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.sample()

    @property
    def peak_mb(self) -> float:
        return self.peak_bytes / 2**20
