"""When gate may fork its worker pools, and the pool it forks.

gate's check, index and PII pools use the `fork` start method on purpose: the workers inherit the loaded
engines (spaCy, validators, tokenizers) instead of each loading its own, which is most of their start-up cost.
Forking is only safe from a process that runs no other thread: a lock another thread holds at the fork (the
import lock, a logging or stream lock, an allocator lock) stays held forever in the child, and the child hangs
on it. That happened twice inside pytest-xdist workers (an I/O thread of their own), and can happen in any host
that embeds gate in a threaded program (a web service, a notebook kernel). So a pool forks only when this is the
only thread; otherwise the work runs in this process, the same answer more slowly, with one warning that says
why. gate's own threads (a progress bar, engine warm-up) start after the fork.
"""

from __future__ import annotations

import multiprocessing as mp
import sys
import threading
import warnings
from multiprocessing.context import BaseContext


class InlineFallback(RuntimeWarning):
    """Raised as a warning when a pool that would fork runs in-process because other threads are alive."""


def other_threads() -> list[str]:
    """Names of the live threads other than the calling one (what would be frozen mid-step in a forked child).

    Every thread that runs Python code, not only those `threading` started: `sys._current_frames()` holds one
    entry per thread with a Python thread state, so a thread started with `_thread.start_new_thread` (execnet's
    I/O thread in a pytest-xdist worker, which `threading.enumerate()` lists only once it has asked for its own
    `current_thread()`) counts too. Threads of native libraries that never run Python (OpenBLAS's pool) have no
    such state and do not count: they hold no lock Python code takes."""
    me = threading.current_thread()
    names = {t.ident: t.name for t in threading.enumerate() if t is not me and t.is_alive()}
    for ident in sys._current_frames():
        if ident != me.ident and ident not in names:
            names[ident] = f"thread {ident} (not started by threading)"
    return sorted(names.values())


def fork_context(what: str, *, stacklevel: int = 3) -> BaseContext | None:
    """The `fork` context when forking is safe here, else None (the caller runs its work in this process).

    `what` names the pool in the warning (e.g. "check workers"), so a slow run says which work went serial.
    `stacklevel` is `warnings.warn`'s: the default 3 points the warning at whoever called the function that owns
    the pool; a helper one call deeper (gate.pii.pool) passes 4 to point at the same place."""
    if not sys.platform.startswith("linux") or "fork" not in mp.get_all_start_methods():
        return None
    if mp.current_process().daemon:  # a daemon process may not have children
        return None
    others = other_threads()
    if others:
        warnings.warn(f"{what} run in this process, not forked: {len(others)} other thread(s) alive "
                      f"({', '.join(others[:3])}); forking now could hang a worker on a lock one of them holds",
                      InlineFallback, stacklevel=stacklevel)
        return None
    return mp.get_context("fork")
