"""Defer the IRI grammar that `jsonschema[format-nongpl]` builds on import until an `iri` format is checked.

Why: jsonschema imports `rfc3987_syntax` when it is imported itself, and that module builds an Earley parser for
RFC 3987 at import: 1.4 CPU seconds of the ~3.5 a small `gate check` costs, paid by every gate process that
validates a schema (every contract), although only a schema with `format: iri` or `iri-reference` uses it. gate
asserts those formats, so the package stays; `defer()` puts a stand-in in `sys.modules` whose `is_valid_syntax`
(the one name jsonschema takes from it) imports the real module on its first call, and whose other attributes
do the same. Nothing changes in what is checked: the real function answers every call.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
import types
from typing import Any

NAME = "rfc3987_syntax"
_LOCK = threading.Lock()


class _Deferred(types.ModuleType):
    """The stand-in: the real module is imported on first use and then replaces it in `sys.modules`."""

    _real: types.ModuleType | None = None

    def load(self) -> types.ModuleType:
        with _LOCK:
            if self._real is None:
                if sys.modules.get(NAME) is self:
                    del sys.modules[NAME]
                try:
                    real = importlib.import_module(NAME)
                except BaseException:
                    sys.modules.setdefault(NAME, self)
                    raise
                object.__setattr__(self, "_real", real)
            return self._real

    def is_valid_syntax(self, term: str, value: str) -> Any:
        """rfc3987_syntax.is_valid_syntax, imported on the first call."""
        return self.load().is_valid_syntax(term, value)

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return getattr(self.load(), attr)


def defer() -> None:
    """Install the stand-in unless the module is imported already or not installed (then jsonschema's own
    ImportError path applies, as before)."""
    if NAME in sys.modules or importlib.util.find_spec(NAME) is None:
        return
    sys.modules[NAME] = _Deferred(NAME, "stand-in for rfc3987_syntax (gate.io.lazy_iri)")
