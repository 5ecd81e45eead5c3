"""A small bounded mapping for per-process caches of loaded things (tokenizers, auditors).

Why bounded: a long-lived process (`gate serve`'s worker, a notebook) sees many contracts and tokenizers over its
life; a plain module dict kept every one of them, with its vocabulary and compiled template, until the process
ended. The few most recently used are what a run reuses; older ones are rebuilt if asked for again.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class LRU(Generic[V]):
    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[Hashable, V] = OrderedDict()

    def get_or_build(self, key: Hashable, build: Callable[[], V]) -> V:
        if key in self._items:
            self._items.move_to_end(key)
            return self._items[key]
        value = build()
        self._items[key] = value
        while len(self._items) > self.size:
            self._items.popitem(last=False)
        return value

    def __len__(self) -> int:
        return len(self._items)

    def clear(self) -> None:
        self._items.clear()
