"""The scorer registry: a scorecard names a scorer `type`; this maps it to its class.

Each scorer declares, in its own file, its `type`, its metric `keys` and its `options_schema`; gate.plugins finds
the built-in ones (this package) and third-party ones (entry-point group `gate.scorers`). The names and keys are
read from the declarations, so loading a scorecard does not import jsonschema or the sandbox until a scorer is
built (a third-party scorer's keys are read from its class).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from gate.plugins import Registry

SCORERS: Registry = Registry("scorer")


class _Keys(Mapping[str, tuple[str, ...]]):
    """type -> the metric keys it can emit (gates may only reference these)."""

    def __getitem__(self, name: str) -> tuple[str, ...]:
        if name not in SCORERS:
            raise KeyError(name)
        return tuple(SCORERS.literal(name, "keys"))

    def __iter__(self) -> Iterator[str]:
        return iter(SCORERS)

    def __len__(self) -> int:
        return len(SCORERS)


#: type -> "module:Class" (declarations only: no scorer module is imported)
REGISTRY: dict[str, str] = {name: SCORERS.declaration(name).target for name in SCORERS}
KEYS: Mapping[str, tuple[str, ...]] = _Keys()


def scorer_class(type_name: str) -> type:
    return SCORERS[type_name]


def build(type_name: str, options: dict[str, Any]) -> Any:
    return scorer_class(type_name)(**options)
