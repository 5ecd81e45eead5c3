"""Rendered pages kept, encoded and compressed, until the record changes.

Why: the record changes a few times a day (a check, a decision, a promote) while a dashboard is read by many
people at once; rendering the home page for 1,000 releases x 10 scorecards costs a few hundred milliseconds of one
core and its 700 KiB of figure JSON compress about tenfold, while serving stored bytes costs microseconds. The key
includes the size and modification time of the DuckDB file and of its write-ahead log, so any committed write
(checkpointed or not) makes every page fresh again. One lock per key lets the first of 20 simultaneous readers
render while the others wait for its result instead of rendering too.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


def db_signature(path: str) -> tuple[Any, ...]:
    """What changes whenever DuckDB commits to `path` (the file or its WAL)."""
    sig: list[Any] = [os.path.abspath(path)]
    for p in (path, path + ".wal"):
        try:
            st = os.stat(p)
            sig += [st.st_mtime_ns, st.st_size, st.st_ino]
        except FileNotFoundError:
            sig += [None, None, None]
    return tuple(sig)


@dataclass(frozen=True)
class Page:
    """One rendered page as the bytes that go on the wire, plain and gzip-compressed, with its validator."""

    body: bytes
    gz: bytes
    etag: str

    @classmethod
    def of(cls, text: str) -> Page:
        body = text.encode("utf-8")
        return cls(body=body, gz=gzip.compress(body, compresslevel=6, mtime=0),
                   etag='"' + hashlib.blake2b(body, digest_size=12).hexdigest() + '"')

    @property
    def text(self) -> str:
        return self.body.decode("utf-8")


class PageCache:
    """A small LRU of rendered pages keyed by (database signature, page, parameters); size 0 turns it off."""

    def __init__(self, size: int = 128) -> None:
        self.size = size
        self._items: OrderedDict[tuple[Any, ...], Page] = OrderedDict()
        self._locks: dict[tuple[Any, ...], threading.Lock] = {}
        self._guard = threading.Lock()
        self.hits = 0
        self.misses = 0

    def peek(self, db: str, key: tuple[Any, ...]) -> Page | None:
        """The stored page if it is still fresh, without waiting on anything (safe on the event loop)."""
        if self.size <= 0:
            return None
        full = (db_signature(db), *key)
        with self._guard:
            page = self._items.get(full)
            if page is not None:
                self._items.move_to_end(full)
                self.hits += 1
            return page

    def get(self, db: str, key: tuple[Any, ...], render: Callable[[], str]) -> Page:
        if self.size <= 0:  # caching off (the benchmark's side-by-side run)
            self.misses += 1
            return Page.of(render())
        full = (db_signature(db), *key)
        with self._guard:
            if full in self._items:
                self._items.move_to_end(full)
                self.hits += 1
                return self._items[full]
            lock = self._locks.setdefault(full, threading.Lock())
        with lock:
            with self._guard:
                if full in self._items:
                    self.hits += 1
                    return self._items[full]
            try:
                page = Page.of(render())
            finally:
                with self._guard:
                    self._locks.pop(full, None)
            with self._guard:
                self.misses += 1
                self._items[full] = page
                while len(self._items) > self.size:
                    self._items.popitem(last=False)
            return page

    def clear(self) -> None:
        with self._guard:
            self._items.clear()
