"""gate forks its worker pools only from a process with no other live thread (gate/io/forking.py): a lock held
by another thread at the fork stays held in the child, which hung two forked check workers inside pytest-xdist."""

from __future__ import annotations

import threading
import warnings

import pytest

from gate.io.forking import InlineFallback, fork_context
from tests.conftest import FIXTURES


def _with_a_thread_alive(fn):
    stop = threading.Event()
    t = threading.Thread(target=stop.wait, name="bystander", daemon=True)
    t.start()
    try:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            out = fn()
        return out, [w for w in seen if issubclass(w.category, InlineFallback)]
    finally:
        stop.set()
        t.join()


def test_no_fork_beside_another_thread() -> None:
    ctx, warned = _with_a_thread_alive(lambda: fork_context("check workers"))
    assert ctx is None
    assert len(warned) == 1 and "bystander" in str(warned[0].message) and "check workers" in str(warned[0].message)


def test_no_fork_beside_a_thread_that_threading_does_not_list() -> None:
    """A thread started with `_thread.start_new_thread` (as execnet starts the I/O thread of a pytest-xdist worker)
    is not in `threading.enumerate()` until it asks for its `current_thread()`; a forked check worker hung beside
    one in CI (tests/data/test_pii_snippet_work.py, a futex wait, 2026-12-05). It counts now."""
    import _thread

    started, release = threading.Lock(), threading.Lock()
    started.acquire()
    release.acquire()

    ident: list[int] = []

    def raw() -> None:  # never touches `threading`'s registry
        ident.append(_thread.get_ident())
        started.release()
        release.acquire()

    _thread.start_new_thread(raw, ())
    started.acquire()
    try:
        assert ident and ident[0] not in {t.ident for t in threading.enumerate()}  # invisible to the old check
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            ctx = fork_context("check workers")
        assert ctx is None
        assert [w for w in seen if issubclass(w.category, InlineFallback)
                and "not started by threading" in str(w.message)], [str(w.message) for w in seen]
    finally:
        release.release()


def test_a_check_beside_another_thread_runs_inline_with_the_same_findings(triage_contract) -> None:
    from gate.data.runner import run_checks

    def run() -> object:
        return run_checks(str(FIXTURES / "triage-faulty"), triage_contract, workers=2, progress=False,
                          chunk_bytes=2048, min_parallel_bytes=0)

    threaded, warned = _with_a_thread_alive(run)
    assert warned and threaded.options["workers"] == 1  # said it ran in this process, and did
    serial = run_checks(str(FIXTURES / "triage-faulty"), triage_contract, workers=1, progress=False)

    def key(r: object) -> list:
        return sorted((f.check, f.split, f.row, f.message) for res in r.results for f in res.findings)
    assert key(threaded) == key(serial) and key(serial)


@pytest.mark.forks
def test_a_single_threaded_process_forks_its_check_workers(triage_contract) -> None:
    from gate.data.runner import run_checks

    if threading.active_count() > 1:
        pytest.fail(f"the forks phase must run without other threads: {threading.enumerate()}")
    run = run_checks(str(FIXTURES / "triage-faulty"), triage_contract, workers=2, progress=False,
                     chunk_bytes=2048, min_parallel_bytes=0)
    assert run.options["workers"] == 2


@pytest.mark.forks
def test_the_progress_bar_starts_after_the_fork(triage_contract) -> None:
    """gate's own threads (progress bar, engine warm-up) start after the workers fork, so a run on a terminal
    stays parallel (a warning here is an error: the forks marker)."""
    from gate.data.runner import run_checks

    run = run_checks(str(FIXTURES / "triage-faulty"), triage_contract, workers=2, progress=True,
                     chunk_bytes=2048, min_parallel_bytes=0)
    assert run.options["workers"] == 2
