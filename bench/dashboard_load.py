"""Dashboard home under load: 1,000 releases x 10 scorecards, 20 concurrent clients on loopback.

Seeds a record through the real release tables (tests/dashboard_seed.py), starts `gate dashboard` (uvicorn, one
process) and drives GET / with 20 concurrent connections for DURATION seconds (wrk when installed, as a browser
would: `Accept-Encoding: gzip`; otherwise 20 async httpx clients), once with the page cache (as shipped) and once
with it turned off (GATE_DASHBOARD_CACHE_PAGES=0: every request queries DuckDB and renders), side by side. Also
records the server process's CPU time per request. Writes bench/results/dashboard_load.{json,md}.
Target: p95 < 300 ms with the cache. Client and server share the machine's cores.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gate.io.atomic import atomic_write_text  # noqa: E402
from tests.dashboard_seed import seed_bulk  # noqa: E402

SCORECARDS = 10
RELEASES = 1000
CLIENTS = 20
DURATION = float(os.environ.get("DASHBOARD_LOAD_SECONDS", "20"))
TARGET_P95_MS = 300.0
RESULTS = ROOT / "bench" / "results"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    k = min(len(s) - 1, max(0, round(q / 100 * (len(s) - 1))))
    return s[k]


#: a viewer's bearer token, made in the seeded record by main(): the dashboard requires one, like any reader
AUTH: dict[str, str] = {}


async def _load(url: str, clients: int, seconds: float) -> dict[str, object]:
    import httpx

    latencies: list[float] = []
    errors = 0
    nbytes = 0
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(limits=limits, timeout=60, headers=AUTH) as client:
        stop = time.perf_counter() + seconds

        async def worker() -> None:
            nonlocal errors, nbytes
            while time.perf_counter() < stop:
                t0 = time.perf_counter()
                try:
                    r = await client.get(url)
                    ok = r.status_code == 200
                    nbytes = len(r.content)
                except httpx.HTTPError:
                    ok = False
                dt = time.perf_counter() - t0
                if ok:
                    latencies.append(dt)
                else:
                    errors += 1

        t_start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(clients)))
        wall = time.perf_counter() - t_start
    ms = [x * 1000 for x in latencies]
    return {"requests": len(latencies), "errors": errors, "seconds": round(wall, 2),
            "req_per_s": round(len(latencies) / wall, 1), "p50_ms": round(_pct(ms, 50), 1),
            "p95_ms": round(_pct(ms, 95), 1), "p99_ms": round(_pct(ms, 99), 1),
            "max_ms": round(max(ms), 1) if ms else None, "page_bytes": nbytes}


WRK_SCRIPT = """
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('WRK {"requests": %d, "duration_us": %d, "errors": %d, "p50_us": %d, "p95_us": %d, '
    .. '"p99_us": %d, "max_us": %d, "bytes": %d}\\n', summary.requests, summary.duration,
    e.connect + e.read + e.write + e.status + e.timeout, latency:percentile(50), latency:percentile(95),
    latency:percentile(99), latency.max, summary.bytes))
end
"""


def _wrk(url: str, clients: int, seconds: float) -> dict[str, object]:
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as fh:
        fh.write(WRK_SCRIPT)
        script = fh.name
    try:
        auth = [a for k, v in AUTH.items() for a in ("-H", f"{k}: {v}")]
        out = subprocess.run(["wrk", "-t1", f"-c{clients}", f"-d{int(seconds)}s", "--timeout", "30s", "-s", script,
                              "-H", "Accept-Encoding: gzip", *auth, url], capture_output=True, text=True,
                             check=True).stdout
    finally:
        os.unlink(script)
    r = json.loads(next(line[4:] for line in out.splitlines() if line.startswith("WRK ")))
    wall = r["duration_us"] / 1e6
    return {"requests": r["requests"], "errors": r["errors"], "seconds": round(wall, 2),
            "req_per_s": round(r["requests"] / wall, 1), "p50_ms": round(r["p50_us"] / 1000, 1),
            "p95_ms": round(r["p95_us"] / 1000, 1), "p99_ms": round(r["p99_us"] / 1000, 1),
            "max_ms": round(r["max_us"] / 1000, 1), "wire_bytes_per_response": r["bytes"] // max(r["requests"], 1)}


def _serve(db: str, cache: bool) -> tuple[subprocess.Popen[str], str]:
    import httpx

    port = _free_port()
    env = {**os.environ, "GATE_DASHBOARD_CACHE_PAGES": "128" if cache else "0"}
    proc = subprocess.Popen([sys.executable, "-m", "gate", "dashboard", "--db", db, "--port", str(port)], cwd=ROOT,
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 60
    while True:
        try:
            httpx.get(url + "static/plotly.min.js", timeout=2)
            return proc, url
        except httpx.HTTPError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"dashboard did not start: {proc.stderr.read() if proc.stderr else ''}") from None
            time.sleep(0.2)


def run_mode(db: str, cache: bool, generator: str) -> dict[str, object]:
    import httpx
    import psutil

    proc, url = _serve(db, cache)
    try:
        t0 = time.perf_counter()
        first = httpx.get(url, timeout=120, headers=AUTH)
        cold_ms = (time.perf_counter() - t0) * 1000
        assert first.status_code == 200 and "scorecard-09" in first.text, first.status_code
        server = psutil.Process(proc.pid)
        cpu0 = sum(server.cpu_times()[:2])
        result = _wrk(url, CLIENTS, DURATION) if generator == "wrk" else asyncio.run(_load(url, CLIENTS, DURATION))
        cpu = sum(server.cpu_times()[:2]) - cpu0
        result["server_cpu_ms_per_request"] = round(cpu * 1000 / max(int(result["requests"]), 1), 2)
        result["first_request_ms"] = round(cold_ms, 1)
        result["page_bytes"] = len(first.content)
        return result
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def main() -> int:
    data = ROOT / "bench" / "data" / "dashboard"
    data.mkdir(parents=True, exist_ok=True)
    db = data / "gate.duckdb"
    for p in (db, Path(str(db) + ".wal")):
        p.unlink(missing_ok=True)
    t0 = time.perf_counter()
    n = seed_bulk(str(db), scorecards=SCORECARDS, releases=RELEASES)
    from gate.service.auth import create_token

    AUTH["Authorization"] = f"Bearer {create_token(str(db), 'bench-viewer', 'viewer')}"
    seed_s = time.perf_counter() - t0
    load_before = os.getloadavg()
    generator = "wrk" if shutil.which("wrk") else "httpx.AsyncClient"
    cached = run_mode(str(db), cache=True, generator=generator)
    uncached = run_mode(str(db), cache=False, generator=generator)
    ratio = round(cached["req_per_s"] / uncached["req_per_s"], 1) if uncached["req_per_s"] else None
    out = {
        "benchmark": "dashboard_load", "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "load_average_before": [round(x, 2) for x in load_before]},
        "record": {"scorecards": SCORECARDS, "releases_per_scorecard": RELEASES, "releases": n,
                   "gate_results": n * 3, "comparisons": n * 10, "seed_seconds": round(seed_s, 1)},
        "load": {"clients": CLIENTS, "seconds": DURATION, "url": "/", "generator": generator},
        "with_page_cache": cached, "without_page_cache": uncached, "throughput_ratio": ratio,
        "target_p95_ms": TARGET_P95_MS, "target_met": cached["p95_ms"] < TARGET_P95_MS,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    atomic_write_text(RESULTS / "dashboard_load.json", json.dumps(out, indent=2) + "\n")
    rows = [("with page cache (as shipped)", cached), ("without page cache (every request renders)", uncached)]
    md = [
        "# Dashboard home under load: page cache vs rendering every request",
        "",
        f"{out['date']}, {n:,} releases ({SCORECARDS} scorecards x {RELEASES:,}), {CLIENTS} concurrent "
        f"connections ({generator}) for {DURATION:.0f} s each on loopback, one uvicorn process, {os.cpu_count()} "
        f"CPUs shared with the client and other users (load average before: "
        f"{', '.join(f'{x:.1f}' for x in load_before)}); one run.",
        "",
        "| mode | requests | req/s | p50 ms | p95 ms | p99 ms | max ms | errors | server CPU ms/req | "
        "first request ms | page KiB |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in rows:
        md.append(f"| {name} | {r['requests']} | {r['req_per_s']} | {r['p50_ms']} | {r['p95_ms']} | {r['p99_ms']} | "
                  f"{r['max_ms']} | {r['errors']} | {r['server_cpu_ms_per_request']} | {r['first_request_ms']} | "
                  f"{int(r['page_bytes']) // 1024} |")
    md += ["", f"Throughput ratio (cache / no cache): {ratio}x. Target p95 < {TARGET_P95_MS:.0f} ms with the cache: "
           f"{'met' if out['target_met'] else 'NOT met'}.", ""]
    atomic_write_text(RESULTS / "dashboard_load.md", "\n".join(md))
    print("\n".join(md))
    return 0 if out["target_met"] else 1


if __name__ == "__main__":
    sys.exit(main())
