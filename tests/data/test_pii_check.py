"""The `pii` and `secret` checks as `gate check` runs them: timing, one finding per span, code-like text."""

from __future__ import annotations

import pytest

from gate.data.runner import run_checks
from tests.conftest import triage_row, write_jsonl

pytest.importorskip("presidio_analyzer")


def test_pii_and_secret_seconds_measure_their_map_work(tmp_path, triage_contract) -> None:
    """Issue 15 item 13: `checks[].seconds` was 0.0 for pii and secret (only `finish` was timed, and their
    whole work is the map phase)."""
    rows = [triage_row(i, f"Mail jane.doe{i}@example.com or call +44 20 7946 0958, key AKIAIOSFODNN7EXAMPL{i % 10}")
            for i in range(60)]
    write_jsonl(tmp_path / "train.jsonl", rows)
    for workers, min_parallel in ((1, 8 << 20), (2, 0)):
        run = run_checks(str(tmp_path), triage_contract, checks=["pii", "secret"], workers=workers,
                         progress=False, chunk_bytes=4096, min_parallel_bytes=min_parallel)
        secs = {r.name: r.seconds for r in run.results}
        assert secs["pii"] > 0.005 and secs["secret"] > 0.0005, secs
        assert sum(secs.values()) <= run.timings["map_cpu"] + 0.5, (secs, run.timings)


def test_opted_in_noisy_entities_run(tmp_path) -> None:
    """Issue 15 item 9: `entities: [..., US_DRIVER_LICENSE, DATE_TIME]` was `internal error: ValueError`, exit 1."""
    from gate.contract import load_contract

    c = tmp_path / "c.yaml"
    c.write_text("name: x\nversion: 1\nchecks:\n  pii:\n    use_ner: false\n"
                 "    entities: [EMAIL_ADDRESS, US_DRIVER_LICENSE, DATE_TIME]\n")
    write_jsonl(tmp_path / "d" / "train.jsonl", [triage_row(0, "My driver license is D1234567, renewed 2024-01-05.")])
    run = run_checks(str(tmp_path / "d"), load_contract(c), checks=["pii"], workers=1, progress=False)
    assert sorted(f.rule for f in run.results[0].findings) == ["pii.DATE_TIME", "pii.US_DRIVER_LICENSE"]


def test_one_finding_per_span(tmp_path, triage_contract) -> None:
    """Issue 15 item 11: an IP address was also reported as PHONE_NUMBER (two findings, one of them wrong)."""
    write_jsonl(tmp_path / "train.jsonl", [triage_row(0, "Our office IP is 157.235.122.79 and it gets blocked.")])
    run = run_checks(str(tmp_path), triage_contract, checks=["pii"], workers=1, progress=False)
    assert [f.rule for f in run.results[0].findings if f.field == "messages[1].content"] == ["pii.IP_ADDRESS"]
