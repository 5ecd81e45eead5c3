"""The service under load, short: 200 concurrent clients for about 10 s against a real `gate serve` on 127.0.0.1,
mixing reads (jobs, runs, findings, score runs, decisions, releases, the dashboard's home) with check and score
submissions. No response may be a 5xx, and every accepted job must end `done` (nothing here can fail) and be
listed: none lost. The 60 s run with latency percentiles is bench/service_load.py (bench/results/service_load.md).
Takes about 30-60 s on 2 cores (start, 10 s of load, the queue's drain)."""

import pytest

pytest.importorskip("uvicorn")
pytest.importorskip("psutil")

from bench.service_load import run

pytestmark = pytest.mark.slow


def test_200_clients_get_no_5xx_and_lose_no_job(tmp_path):
    out = run(clients=200, seconds=10, base=tmp_path)
    assert out["responses_5xx"] == 0, out["examples_5xx"]
    assert out["transport_errors"] == 0, out["per_kind"]
    jobs = out["accepted_jobs"]
    assert jobs["check"] >= 5 and jobs["score"] >= 1, jobs  # the submission budget was used: jobs ran under load
    drain = out["drain"]
    assert drain["lost"] == [] and drain["not_terminal"] == [], drain
    assert drain["statuses"] == {"done": jobs["check"] + jobs["score"]}, drain
    kinds = out["per_kind"]
    for kind in ("GET /jobs", "GET /checks/runs", "GET /releases", "GET /decisions", "POST /checks"):
        assert kinds[kind]["requests"] > 0, kind
    assert all(set(r["codes"]) <= {"200", "202"} for r in kinds.values()), {k: r["codes"] for k, r in kinds.items()}
    assert out["requests"] >= 200, out["requests"]
