"""What each test costs: wall seconds and CPU seconds (this process and the child processes it reaped).

Why: the suite must fit a fixed CI budget on 2 cores, and with several xdist workers a test's wall time says little
about what it costs (it waits on the other workers); CPU seconds are what the cores actually spend, so they add
up across workers. With `GATE_TEST_COSTS=FILE` set, every test appends one JSON line to FILE (each worker appends
whole lines with O_APPEND); `python tools/test_costs.py FILE` sums them per group for docs/testing.md and the CI
log. A server started by a session fixture is counted on the test during whose teardown it is reaped.
"""

from __future__ import annotations

import json
import os
import resource
import time
from pathlib import Path

import pytest

_OUTCOMES: dict[str, str] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """The test's outcome for its cost line: an error in setup or teardown outranks the call's result."""
    if report.when == "call" or report.outcome != "passed":
        outcome = "error" if report.when != "call" and report.outcome == "failed" else report.outcome
        if _OUTCOMES.get(report.nodeid) != "error":
            _OUTCOMES[report.nodeid] = outcome


def _cpu(who: int) -> float:
    ru = resource.getrusage(who)
    return ru.ru_utime + ru.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    path = os.environ.get("GATE_TEST_COSTS")
    if not path:
        yield
        return
    t0, s0, c0 = time.perf_counter(), _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN)
    yield
    rec = {"test": item.nodeid, "wall": round(time.perf_counter() - t0, 3),
           "cpu_self": round(_cpu(resource.RUSAGE_SELF) - s0, 3),
           "cpu_children": round(_cpu(resource.RUSAGE_CHILDREN) - c0, 3),
           "worker": os.environ.get("PYTEST_XDIST_WORKER", "main"),
           "outcome": _OUTCOMES.pop(item.nodeid, "passed")}
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (json.dumps(rec) + "\n").encode())
    finally:
        os.close(fd)


COSTS_FILE = Path(__file__).with_name("costs.json")


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist, costliest test files first, by the CPU seconds recorded in tests/costs.json.

    Why: pytest-xdist (`--dist loadfile --no-loadscope-reorder`) hands whole files to workers in collection order,
    and the suite ends when the last file ends; starting the long files (the real-model loop, the demo, the trainers)
    first and filling in with short ones is the longest-processing-time-first rule, which keeps one long file from
    starting last and running alone on an otherwise idle machine. A file not in costs.json (a new one) counts as
    cheap. Regenerate with `python tools/test_costs.py FILE --write-costs tests/costs.json`.
    """
    if not os.environ.get("PYTEST_XDIST_WORKER"):  # a serial run keeps pytest's own order
        return
    try:
        costs: dict[str, float] = json.loads(COSTS_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    items.sort(key=lambda item: -costs.get(item.nodeid.split("::", 1)[0], 0.0))
