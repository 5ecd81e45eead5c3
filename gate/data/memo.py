"""A value per distinct text, for one run: the run's memos (RunContext.memo) of PII hits and of embeddings.

Why: chat data repeats itself across the whole file (one system prompt on every row, tool catalogues, stock replies
such as the triage assistant's ~170 distinct JSON answers), and the NER model and the sentence encoder are the
slowest steps of a check; `leakage` and `contamination` with `semantic` on also embed the same training rows in one
run. Each distinct text is computed once per run, not once per batch or per check.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

from gate.io.digest import text_digest

V = TypeVar("V")


class TextMemo(Generic[V]):
    """Keyed by `text_digest` (the text itself is not kept: memory, and raw personal data stays out of long-lived
    state). Bounded: the least recently used entries go first beyond `max_entries`, since a 1M-row run has ~1M
    distinct user messages that never repeat. A value is handed to every text that asks for it, so callers store
    immutable values (or copy out). One per run, owned by its RunContext, never a module global.
    """

    def __init__(self, max_entries: int = 200_000) -> None:
        self.max_entries = max_entries
        self._values: OrderedDict[bytes, V] = OrderedDict()
        self.misses = 0  # distinct texts sent to `compute`
        self.hits = 0  # texts answered without computing (seen in an earlier call, or earlier in the same call)

    def __len__(self) -> int:
        return len(self._values)

    def get_many(self, texts: list[str], compute: Callable[[list[str]], Iterable[V]]) -> list[V]:
        """Per text, its value; `compute` is called at most once, on the texts not seen before (each once), and
        gives one value per text it is passed, in order."""
        if not texts:
            return []
        keys = [text_digest(t) for t in texts]
        todo: dict[bytes, str] = {}
        for k, t in zip(keys, texts, strict=True):
            if k not in self._values and k not in todo:
                todo[k] = t
        fresh = dict(zip(todo, compute(list(todo.values())), strict=True)) if todo else {}
        out = []
        for k in keys:
            if k in fresh:
                out.append(fresh[k])
            else:
                out.append(self._values[k])
                self._values.move_to_end(k)
        self.misses += len(fresh)
        self.hits += len(texts) - len(fresh)
        self._values.update(fresh)
        while len(self._values) > self.max_entries:  # after the answer is built: one call may exceed the bound
            self._values.popitem(last=False)
        return out
