"""The service under load: 200 concurrent clients mixing reads, check submissions and score submissions against a
real `gate serve` (one uvicorn process) on 127.0.0.1 for SERVICE_LOAD_SECONDS (60).

The record is seeded through the real writers (tests/dashboard_seed.py: releases, decisions, a check run with
findings) so the reads return real rows; score jobs ask a small OpenAI-compatible server in its own process
(gate/testing/fake_openai.py) through the response cache. Each client loops: a read most of the time (list jobs,
one job, check runs, a run's findings, score runs, decisions, releases, the dashboard's home when mounted), a
submission when the global submission budget allows (CHECKS_PER_S, SCORES_PER_S: the one worker thread runs jobs
one at a time, so an unbounded stream of submissions would only measure the length of the queue). After the load,
the service keeps running until every accepted job is `done` or `failed`, and every one must be listed by GET /jobs.

Records: requests, status codes and p50/p95/p99/max latency per request kind, 5xx count (target 0), transport
errors, lost jobs (accepted but not listed or never terminal; target 0), the queue's drain time and the server's
CPU seconds. Writes bench/results/service_load.{json,md}; exit 1 when a target is missed. The client (200
coroutines on httpx) shares the machine's cores with the server.
tests/test_service_load.py runs the same engine with 200 clients for about 10 s.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from gate.io.atomic import atomic_write_text  # noqa: E402

CLIENTS = 200
DURATION = float(os.environ.get("SERVICE_LOAD_SECONDS", "60"))
CHECKS_PER_S = 1.5
SCORES_PER_S = 0.3
DRAIN_TIMEOUT_S = 600.0
RESULTS = ROOT / "bench" / "results"
#: read kinds and their weights (submissions come on top, when the budget allows)
READS = {"GET /jobs": 20, "GET /jobs/{id}": 15, "GET /checks/runs": 10, "GET /checks/runs/{id}/findings": 5,
         "GET /scores/runs": 10, "GET /decisions": 10, "GET /releases": 10, "GET /dashboard/": 10}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    s = sorted(values)
    return round(s[min(len(s) - 1, max(0, round(q / 100 * (len(s) - 1))))], 1)


def _wait_http(url: str, proc: subprocess.Popen[bytes], log: Path, timeout: float = 120) -> None:
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{url} exited: {log.read_text()[-2000:]}")
        try:
            httpx.get(url, timeout=2)
            return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise RuntimeError(f"{url} did not come up: {log.read_text()[-2000:]}")


@dataclass
class World:
    """A seeded record, tokens, a model server and a running `gate serve`, all under one temporary directory."""

    base: Path
    url: str
    tokens: dict[str, str]
    model_url: str
    server: subprocess.Popen[bytes]
    check_run: str
    dashboard: bool = False
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)


@contextmanager
def world(base: Path | None = None) -> Iterator[World]:
    from gate.service.auth import create_token
    from tests.conftest import CONTRACTS, triage_row, write_jsonl
    from tests.dashboard_seed import seed_small

    tmp = Path(tempfile.mkdtemp(prefix="gate-service-load-")) if base is None else base
    procs: list[subprocess.Popen[bytes]] = []
    try:
        root = tmp / "root"
        rows = [triage_row(i, f"ticket {i} about a broken widget number {i}") for i in range(40)]
        write_jsonl(root / "clean" / "train.jsonl", rows)
        write_jsonl(root / "dups" / "train.jsonl", [*rows, {**rows[3], "id": "tri-000333"}])
        shutil.copytree(ROOT / "scorecards", root / "scorecards")
        (root / "contracts").mkdir()
        (root / "contracts" / "triage.yaml").write_text((CONTRACTS / "triage.yaml").read_text())
        db = str(tmp / "g.duckdb")
        seeded = seed_small(db)
        tokens = {r: create_token(db, f"{r}-load", r) for r in ("ci", "evaluator", "viewer")}
        env = {**os.environ, "CI": "true"}
        for key in ("GATE_URL", "GATE_TOKEN", "GATE_DEBUG", "GITHUB_ACTIONS"):
            env.pop(key, None)
        mport, sport = _free_port(), _free_port()
        mlog, slog = tmp / "model.log", tmp / "server.log"
        with open(mlog, "wb") as fh:
            procs.append(subprocess.Popen([sys.executable, str(ROOT / "gate" / "testing" / "fake_openai.py"),
                                           "--port", str(mport)], cwd=ROOT, env=env, stdout=fh,
                                          stderr=subprocess.STDOUT))
        with open(slog, "wb") as fh:
            server = subprocess.Popen([sys.executable, "-m", "gate", "serve", "--root", str(root), "--db", db,
                                       "--state-dir", str(tmp / "state"), "--port", str(sport), "--check-workers",
                                       "1"], cwd=ROOT, env=env, stdout=fh, stderr=subprocess.STDOUT)
        procs.append(server)
        model_url, url = f"http://127.0.0.1:{mport}", f"http://127.0.0.1:{sport}"
        _wait_http(f"{model_url}/v1/models", procs[0], mlog)
        _wait_http(f"{url}/health", server, slog)
        import httpx

        dash = httpx.get(f"{url}/dashboard/", headers={"Authorization": f"Bearer {tokens['viewer']}"}, timeout=60)
        yield World(tmp, url, tokens, model_url, server, seeded["check_run"], dash.status_code == 200, procs)
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(30)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        if base is None:
            shutil.rmtree(tmp, ignore_errors=True)


@dataclass
class Stats:
    latencies: dict[str, list[float]] = field(default_factory=dict)
    codes: dict[str, dict[int, int]] = field(default_factory=dict)
    transport_errors: dict[str, int] = field(default_factory=dict)
    transport_examples: list[str] = field(default_factory=list)
    accepted: dict[str, str] = field(default_factory=dict)  # job id -> kind
    samples_5xx: list[str] = field(default_factory=list)

    def note(self, kind: str, seconds: float, code: int | None, body: str = "") -> None:
        if code is None:
            self.transport_errors[kind] = self.transport_errors.get(kind, 0) + 1
            return
        self.latencies.setdefault(kind, []).append(seconds * 1000)
        c = self.codes.setdefault(kind, {})
        c[code] = c.get(code, 0) + 1
        if code >= 500 and len(self.samples_5xx) < 20:
            self.samples_5xx.append(f"{kind}: {code} {body[:300]}")


async def drive(w: World, clients: int, seconds: float, *, checks_per_s: float = CHECKS_PER_S,
                scores_per_s: float = SCORES_PER_S, seed: int = 20261129) -> tuple[Stats, float]:
    """The load itself; returns the statistics and the wall time it took."""
    import httpx

    stats = Stats()
    reads = {k: v for k, v in READS.items() if w.dashboard or k != "GET /dashboard/"}
    kinds, weights = list(reads), list(reads.values())
    budget = {"POST /checks": 0, "POST /scores": 0}
    rates = {"POST /checks": checks_per_s, "POST /scores": scores_per_s}
    hdr = {role: {"Authorization": f"Bearer {t}"} for role, t in w.tokens.items()}
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    t_start = time.perf_counter()
    stop = t_start + seconds

    async with httpx.AsyncClient(base_url=w.url, limits=limits, timeout=120) as http:
        async def one(rng: random.Random) -> None:
            elapsed = time.perf_counter() - t_start
            kind = next((k for k in ("POST /scores", "POST /checks") if budget[k] < rates[k] * elapsed), None)
            if kind is not None:
                budget[kind] += 1  # one coroutine at a time runs this line: no lock needed
            else:
                kind = rng.choices(kinds, weights)[0]
            job_ids = list(stats.accepted)
            if kind == "POST /checks":
                req = http.post("/checks", headers=hdr["ci"], json={
                    "dataset": rng.choice(["clean", "dups"]), "contract": "contracts/triage.yaml",
                    "checks": rng.choice([["exact_duplicate"], ["exact_duplicate", "near_duplicate", "length"]])})
            elif kind == "POST /scores":
                req = http.post("/scores", headers=hdr["evaluator"], json={
                    "candidate": "tiny", "scorecard": "scorecards/triage.yaml", "engine": "url",
                    "base_url": w.model_url, "limit": 4, "model_hash": "sha256:service-load"})
            elif kind == "GET /jobs/{id}":
                path = f"/jobs/{rng.choice(job_ids)}" if job_ids else "/jobs"
                req = http.get(path, headers=hdr["viewer"])
            elif kind == "GET /checks/runs/{id}/findings":
                req = http.get(f"/checks/runs/{w.check_run}/findings", headers=hdr["viewer"])
            else:
                req = http.get(kind.split(" ", 1)[1], headers=hdr["viewer"],
                               params={"limit": 50} if kind in ("GET /jobs", "GET /checks/runs") else None)
            t0 = time.perf_counter()
            try:
                res = await req
            except httpx.HTTPError as exc:
                stats.note(kind, time.perf_counter() - t0, None)
                if len(stats.transport_examples) < 10:
                    stats.transport_examples.append(f"{kind}: {type(exc).__name__}: {exc} after "
                                                    f"{time.perf_counter() - t0:.1f} s")
                return
            stats.note(kind, time.perf_counter() - t0, res.status_code, res.text if res.status_code >= 500 else "")
            if kind.startswith("POST") and res.status_code == 202:
                stats.accepted[res.json()["job_id"]] = "check" if kind == "POST /checks" else "score"

        async def client(i: int) -> None:
            rng = random.Random(seed * 1000 + i)
            await asyncio.sleep(rng.uniform(0, 0.5))  # not all 200 in the same millisecond
            while time.perf_counter() < stop:
                await one(rng)

        await asyncio.gather(*(client(i) for i in range(clients)))
    return stats, time.perf_counter() - t_start


def drain(w: World, accepted: dict[str, str], timeout: float = DRAIN_TIMEOUT_S) -> dict[str, Any]:
    """Waits until every accepted job is terminal; then checks each is listed. Returns what it found."""
    import httpx

    hdr = {"Authorization": f"Bearer {w.tokens['viewer']}"}
    t0 = time.perf_counter()
    listed: dict[str, dict[str, Any]] = {}
    while True:
        res = httpx.get(f"{w.url}/jobs", params={"limit": 1000}, headers=hdr, timeout=60)
        res.raise_for_status()
        listed = {j["job_id"]: j for j in res.json()}
        open_ = [j for j in accepted if listed.get(j, {}).get("status") not in ("done", "failed")]
        if not open_ or time.perf_counter() - t0 > timeout:
            break
        time.sleep(0.5)
    statuses: dict[str, int] = {}
    for j in accepted:
        s = listed.get(j, {}).get("status", "not listed")
        statuses[s] = statuses.get(s, 0) + 1
    failed = [f"{j}: {listed[j]['error']}" for j in accepted if listed.get(j, {}).get("status") == "failed"]
    return {"seconds": round(time.perf_counter() - t0, 1), "statuses": statuses,
            "lost": sorted(j for j in accepted if j not in listed),
            "not_terminal": sorted(j for j in accepted if listed.get(j, {}).get("status") not in ("done", "failed")),
            "failed_examples": failed[:5]}


def summarise(stats: Stats, wall: float) -> dict[str, Any]:
    per_kind = {}
    for kind in sorted(set(stats.latencies) | set(stats.transport_errors)):
        ms = stats.latencies.get(kind, [])
        per_kind[kind] = {"requests": len(ms), "codes": {str(k): v for k, v in sorted(stats.codes.get(kind, {})
                                                                                        .items())},
                          "transport_errors": stats.transport_errors.get(kind, 0), "p50_ms": _pct(ms, 50),
                          "p95_ms": _pct(ms, 95), "p99_ms": _pct(ms, 99),
                          "max_ms": round(max(ms), 1) if ms else None}
    every = [x for v in stats.latencies.values() for x in v]
    n5xx = sum(v for c in stats.codes.values() for k, v in c.items() if k >= 500)
    return {"seconds": round(wall, 1), "requests": len(every), "req_per_s": round(len(every) / wall, 1),
            "p50_ms": _pct(every, 50), "p95_ms": _pct(every, 95), "p99_ms": _pct(every, 99),
            "responses_5xx": n5xx, "transport_errors": sum(stats.transport_errors.values()),
            "accepted_jobs": {"check": sum(k == "check" for k in stats.accepted.values()),
                              "score": sum(k == "score" for k in stats.accepted.values())},
            "per_kind": per_kind, "examples_5xx": stats.samples_5xx,
            "examples_transport_errors": stats.transport_examples}


def run(clients: int = CLIENTS, seconds: float = DURATION, base: Path | None = None) -> dict[str, Any]:
    """Everything: world, load, drain; the result dict written to bench/results (or checked by the test)."""
    import psutil

    load_before = os.getloadavg()
    with world(base) as w:
        server = psutil.Process(w.server.pid)
        cpu0, client0 = sum(server.cpu_times()[:4]), time.process_time()
        stats, wall = asyncio.run(drive(w, clients, seconds))
        cpu_load, client_cpu = sum(server.cpu_times()[:4]) - cpu0, time.process_time() - client0
        drained = drain(w, stats.accepted)
        cpu_all = sum(server.cpu_times()[:4]) - cpu0
        out = summarise(stats, wall)
        out.update({"clients": clients, "dashboard_mounted": w.dashboard,
                    "server_cpu_s_during_load": round(cpu_load, 1),
                    "client_cpu_s": round(client_cpu, 1), "server_cpu_s_with_drain": round(cpu_all, 1),
                    "drain": drained, "load_average_before": [round(x, 2) for x in load_before],
                    "load_average_after": [round(x, 2) for x in os.getloadavg()]})
    out["zero_5xx"] = out["responses_5xx"] == 0
    out["zero_lost_jobs"] = not drained["lost"] and not drained["not_terminal"]
    return out


def _md(out: dict[str, Any]) -> str:
    d = out["drain"]
    lines = [
        "# The service under load: 200 concurrent clients, reads and job submissions",
        "",
        f"{out['date']}, {out['clients']} concurrent clients (asyncio + httpx, one connection each) for "
        f"{out['load']['seconds']:.0f} s against one `gate serve` process (uvicorn) on 127.0.0.1, "
        f"{out['machine']['cpus']} CPUs shared by client, server, the model stub and other users (load average "
        "before: "
        f"{', '.join(f'{x:.1f}' for x in out['load_average_before'])}; after: "
        f"{', '.join(f'{x:.1f}' for x in out['load_average_after'])}); one run. Submissions at up to "
        f"{out['load']['checks_per_s']} checks/s and {out['load']['scores_per_s']} score runs/s in total (one worker "
        "thread runs jobs one at a time); tiny datasets (40 rows), score runs of 4 items through the response cache.",
        "",
        f"**{out['requests']} requests, {out['req_per_s']} req/s; p50 {out['p50_ms']} ms, p95 {out['p95_ms']} ms, "
        f"p99 {out['p99_ms']} ms. 5xx: {out['responses_5xx']}. Transport errors: {out['transport_errors']}. "
        f"Jobs accepted: {out['accepted_jobs']['check']} checks + {out['accepted_jobs']['score']} score runs; "
        f"lost: {len(d['lost'])}, not finished: {len(d['not_terminal'])}; statuses {d['statuses']}; the queue "
        f"drained {d['seconds']} s after the load.**",
        "",
        f"Where the latency comes from: 200 clients always waiting, so latency ~ clients / throughput (Little's law: "
        f"{out['clients']} / {out['req_per_s']} req/s = {out['clients'] / out['req_per_s']:.1f} s mean). The server "
        f"is one Python process (DuckDB admits one writing process; the GIL: at most one core) and used "
        f"{out['server_cpu_s_during_load']} CPU s in {out['seconds']} s "
        f"({1000 * out['server_cpu_s_during_load'] / max(out['requests'], 1):.1f} ms per request, the jobs' own "
        f"work included; {out['server_cpu_s_with_drain']} s with the drain); the client {out['client_cpu_s']} CPU s "
        "on the same cores.",
        "",
        "| request | requests | status codes | p50 ms | p95 ms | p99 ms | max ms | transport errors |",
        "|---|---:|---|---:|---:|---:|---:|---:|",
    ]
    for kind, r in out["per_kind"].items():
        codes = ", ".join(f"{k}: {v}" for k, v in r["codes"].items())
        lines.append(f"| {kind} | {r['requests']} | {codes} | {r['p50_ms']} | {r['p95_ms']} | {r['p99_ms']} | "
                     f"{r['max_ms']} | {r['transport_errors']} |")
    lines += ["", f"Targets: zero 5xx ({'met' if out['zero_5xx'] else 'NOT met'}), zero lost jobs "
              f"({'met' if out['zero_lost_jobs'] else 'NOT met'}); p95 is reported, not targeted.", ""]
    return "\n".join(lines)


def main() -> int:
    out = {"benchmark": "service_load", "date": datetime.now(UTC).isoformat(timespec="seconds"),
           "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
           "load": {"clients": CLIENTS, "seconds": DURATION, "checks_per_s": CHECKS_PER_S,
                    "scores_per_s": SCORES_PER_S, "reads": READS}}
    out.update(run())
    return write(out)


def write(out: dict[str, Any]) -> int:
    RESULTS.mkdir(parents=True, exist_ok=True)
    atomic_write_text(RESULTS / "service_load.json", json.dumps(out, indent=2) + "\n")
    md = _md(out)
    atomic_write_text(RESULTS / "service_load.md", md)
    print(md)
    return 0 if out["zero_5xx"] and out["zero_lost_jobs"] else 1


if __name__ == "__main__":
    sys.exit(main())
