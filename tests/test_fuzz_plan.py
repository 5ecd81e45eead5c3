"""The fuzz budget adds up, and the harness itself can fail and replay.

Each fuzz target asserts it ran its planned cases; this file asserts the plan covers GATE_FUZZ_EXAMPLES with
every planned target run by some test, so a full `pytest -m fuzz` runs at least that many cases (measured
cases, outcomes and CPU seconds per target: docs/SECURITY-AUDIT.md section 2).
"""

from __future__ import annotations

import random

import pytest

from tests import fuzzkit as fk
from tests import test_fuzz_cli, test_fuzz_contract, test_fuzz_readers, test_fuzz_scorecard  # noqa: F401

pytestmark = pytest.mark.fuzz


def test_every_planned_target_is_run_and_the_plan_covers_the_budget():
    assert abs(sum(fk.PLAN.values()) - 1.0) < 1e-9, sum(fk.PLAN.values())
    assert fk.REGISTERED == set(fk.PLAN), set(fk.PLAN) ^ fk.REGISTERED
    assert sum(fk.planned(t) for t in fk.PLAN) >= fk.total_examples()


def test_default_budget_is_one_hundred_thousand(monkeypatch):
    monkeypatch.delenv("GATE_FUZZ_EXAMPLES", raising=False)
    assert sum(fk.planned(t) for t in fk.PLAN) >= 100_000


def test_a_failing_case_is_reported_with_its_replay_and_replays_alone(monkeypatch):
    monkeypatch.setitem(fk.PLAN, "selftest.volume", 0.0)  # MIN_CASES cases
    monkeypatch.setattr(fk, "REGISTERED", set(fk.REGISTERED))
    monkeypatch.setenv("GATE_FUZZ_SEED", "selftest")
    monkeypatch.delenv("GATE_FUZZ_SUMMARY", raising=False)
    monkeypatch.delenv("GATE_FUZZ_RANDOM", raising=False)
    monkeypatch.delenv("GATE_FUZZ_REPLAY", raising=False)
    seen: list[int] = []

    def make(rng: random.Random) -> int:
        return rng.randrange(10**9)

    def check(value: int) -> str:
        seen.append(value)
        if len(seen) == 7:
            raise ValueError("boom")
        return "ok"

    with pytest.raises(AssertionError) as info:
        fk.run_volume("selftest.volume", make, check)
    text = str(info.value)
    assert "selftest.volume case 6 failed: ValueError: boom" in text
    assert "GATE_FUZZ_SEED=selftest GATE_FUZZ_REPLAY=selftest.volume:6" in text
    assert (fk.FAILURES / "selftest.volume-6.txt").read_text() == repr(seen[6])

    failing = seen[6]
    seen.clear()
    monkeypatch.setenv("GATE_FUZZ_REPLAY", "selftest.volume:6")
    assert fk.run_volume("selftest.volume", make, lambda v: seen.append(v) or "ok") == {"ok": 1}
    assert seen == [failing]  # the same input again, alone


def test_a_run_that_never_reaches_an_outcome_fails(monkeypatch):
    monkeypatch.setitem(fk.PLAN, "selftest.volume", 0.0)
    monkeypatch.setattr(fk, "REGISTERED", set(fk.REGISTERED))
    monkeypatch.delenv("GATE_FUZZ_REPLAY", raising=False)
    monkeypatch.delenv("GATE_FUZZ_SUMMARY", raising=False)
    with pytest.raises(AssertionError, match="no case ended as 'refused'"):
        fk.run_volume("selftest.volume", lambda rng: rng.random(), lambda v: "read", require=("read", "refused"))
