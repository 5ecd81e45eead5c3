"""The one registry of gate's extension points: data checks and scorers, built-in or from any installed package.

A check or a scorer declares itself in its own file, as class attributes (a check: `name`, `order`,
`incremental`, `fields`, `options_schema`, `finding_fields`; a scorer: `type`, `keys`, `options_schema`). Nothing
else lists them:

- built-in ones are found by reading the modules of their package (`gate/data/checks`, `gate/score/scorers`);
- third-party ones through the entry-point groups `gate.checks` and `gate.scorers` (importlib.metadata), whose
  entry name is the declared name and whose value is `module:Class`.

Why declarations are read from the source (`ast`) and not by importing the modules: `gate --help`, the contract's
list of check names and a scorecard's metric keys need the names only, and the check modules import jsonschema,
numpy and pyarrow (jsonschema alone builds a grammar: seconds on a shared machine). A class is imported when it
runs (`load`); tests/test_registry.py proves the source declarations equal the imported classes' attributes.

The registry is read once per process (the packages do not change under a running gate); it is never mutated.
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gate.errors import GateError

#: kind -> (built-in package, entry-point group, the class attribute that holds the declared name)
KINDS: dict[str, tuple[str, str, str]] = {
    "check": ("gate.data.checks", "gate.checks", "name"),
    "scorer": ("gate.score.scorers", "gate.scorers", "type"),
}
#: the class attributes read from the source without importing it (literals only)
_LITERALS = ("name", "type", "order", "incremental", "keys", "fields", "finding_fields", "defers_to", "drop_action",
             "drop_rules", "drop_switch", "rules")
THIRD_PARTY_ORDER = 10_000  # a third-party check without a readable `order` runs after the built-in ones
#: what a class of each kind must declare to be usable (a check without `options_schema` cannot be validated)
_REQUIRED: dict[str, tuple[tuple[str, type], ...]] = {"check": (("options_schema", dict),),
                                                      "scorer": (("keys", tuple),)}


def warn(message: str) -> None:
    """One `gate: warning:` line on stderr (never a Python warning with its file, line and source)."""
    print(f"gate: warning: {message}", file=sys.stderr)


@dataclass(frozen=True)
class Declaration:
    """One check or scorer: where its class lives and the literal declarations read without importing it."""

    kind: str
    name: str
    target: str  # "module:Class"
    order: int
    origin: str  # "built-in", or "entry point <group>:<name> (<distribution>)"
    literals: Mapping[str, Any] = field(default_factory=dict)

    def load(self) -> type:
        """Imports the class. A third-party class that fails to import, or declares another name, is a GateError
        (one line) naming its entry point."""
        module, _, qualname = self.target.partition(":")
        try:
            obj: Any = importlib.import_module(module)
            for part in qualname.split("."):
                obj = getattr(obj, part)
        except Exception as exc:  # any failure of a plugin's import is reported the same way, in one line
            raise GateError(f"{self.kind} '{self.name}' from {self.origin} cannot be loaded "
                            f"({self.target}): {type(exc).__name__}: {exc}") from None
        declared = getattr(obj, KINDS[self.kind][2], None)
        if declared != self.name:
            raise GateError(f"{self.kind} '{self.name}' from {self.origin} declares {KINDS[self.kind][2]} = "
                            f"{declared!r} ({self.target}): the entry name must be the declared name")
        for attr, typ in _REQUIRED[self.kind]:
            if not isinstance(getattr(obj, attr, None), typ):
                raise GateError(f"{self.kind} '{self.name}' from {self.origin} declares no {attr} (a "
                                f"{typ.__name__}) ({self.target})")
        return obj


def _literal(node: ast.expr) -> Any:
    try:
        return ast.literal_eval(node)
    except ValueError:  # not a literal (e.g. `options_schema = check_options(...)`): read on import only
        return None


def _class_literals(cls: ast.ClassDef) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for stmt in cls.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            target, value = stmt.targets[0].id, stmt.value
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            target, value = stmt.target.id, stmt.value
        else:
            continue
        if target in _LITERALS:
            out[target] = _literal(value)
    return out


def _builtin(kind: str) -> list[Declaration]:
    """Every class of the package's modules that declares its name as a string literal (base classes do not)."""
    package, _, name_attr = KINDS[kind]
    root = Path(importlib.util.find_spec(package).origin or "").parent  # type: ignore[union-attr]
    out = []
    for path in sorted(root.glob("*.py")):
        if path.name.startswith("_"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in tree.body:
            if not isinstance(node, ast.ClassDef) or node.name.startswith("_"):
                continue
            lits = _class_literals(node)
            if isinstance(lits.get(name_attr), str):
                order = lits.get("order")
                out.append(Declaration(kind, lits[name_attr], f"{package}.{path.stem}:{node.name}",
                                       order if isinstance(order, int) else THIRD_PARTY_ORDER, "built-in", lits))
    return out


def _source_literals(target: str) -> dict[str, Any]:
    """The literal declarations of a third-party class, read from its module's source as for the built-in ones
    (its `order` decides where it runs); {} when the source or the class cannot be found without importing."""
    module, _, qualname = target.partition(":")
    try:
        spec = importlib.util.find_spec(module)
        origin = spec.origin if spec is not None else None
        if not origin or not origin.endswith(".py"):
            return {}
        tree = ast.parse(Path(origin).read_text(encoding="utf-8"), filename=origin)
    except (ImportError, ValueError, OSError, SyntaxError):
        return {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == qualname:
            return _class_literals(node)
    return {}


def _third_party(kind: str) -> list[Declaration]:
    from importlib.metadata import entry_points

    group = KINDS[kind][1]
    out = []
    for ep in entry_points(group=group):
        dist = getattr(ep, "dist", None)
        origin = f"entry point {group}:{ep.name}" + (f" ({dist.name})" if dist is not None else "")
        lits = _source_literals(ep.value)
        order = lits.get("order")
        out.append(Declaration(kind, ep.name, ep.value,
                               order if isinstance(order, int) and not isinstance(order, bool) else THIRD_PARTY_ORDER,
                               origin, lits))
    return out


@functools.cache
def declarations(kind: str) -> tuple[Declaration, ...]:
    """The checks (in run and report order: `order`, then name) or the scorers (by name) of this installation.
    A third-party name that is already taken is ignored with a warning: a plugin never replaces a built-in."""
    found: dict[str, Declaration] = {}
    for d in [*_builtin(kind), *_third_party(kind)]:
        if d.name in found:
            if found[d.name].target != d.target:
                warn(f"{d.origin}: {kind} '{d.name}' is already declared by {found[d.name].origin} "
                     f"({found[d.name].target}); ignored")
            continue
        found[d.name] = d
    return tuple(sorted(found.values(), key=lambda d: (d.order, d.name)))


class Registry(Mapping[str, type]):
    """Name -> class, in declaration order; iterating and `in` read declarations only, `[name]` imports."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def _by_name(self) -> dict[str, Declaration]:
        return {d.name: d for d in declarations(self.kind)}

    def __getitem__(self, name: str) -> type:
        return self._by_name()[name].load()

    def __iter__(self) -> Iterator[str]:
        return iter([d.name for d in declarations(self.kind)])

    def __len__(self) -> int:
        return len(declarations(self.kind))

    def __contains__(self, name: object) -> bool:
        return name in self._by_name()

    def declaration(self, name: str) -> Declaration:
        return self._by_name()[name]

    def usable(self) -> list[str]:
        """The names, in order, without the third-party ones that cannot be loaded (each named once in one warning
        line): a broken plugin is left out of the runs that do not name it, and fails only those that do."""
        return [name for name in self if name not in _broken(self.kind)]

    def literal(self, name: str, attr: str) -> Any:
        """A declared attribute, from the source when it is a literal there, else from the imported class."""
        d = self._by_name()[name]
        if attr in d.literals and d.literals[attr] is not None:
            return d.literals[attr]
        return getattr(d.load(), attr)


@functools.cache
def _broken(kind: str) -> frozenset[str]:
    """The third-party declarations that fail to load (import error, wrong name, a required attribute missing), each
    warned about once per process; built-in ones are not imported here (tests/test_registry.py loads them all)."""
    bad = set()
    for d in declarations(kind):
        if d.origin == "built-in":
            continue
        try:
            d.load()
        except GateError as exc:
            warn(f"{exc}; left out")
            bad.add(d.name)
    return frozenset(bad)
