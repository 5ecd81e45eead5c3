"""No import cycle inside gate/: a module that needs another's part imports it, never the other way round too.

Two graphs, both read with `ast` from the source (nothing is imported): module-level imports only (a cycle there is
an ImportError waiting for the wrong import order), and every import including those inside functions (a
function-level import that only dodges a cycle hides the same tangle; lazy imports of heavy third-party libraries
are not edges here, only gate's own modules count). `if TYPE_CHECKING:` blocks are left out: they never run.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

GATE = ROOT / "gate"

#: lazy edges that still close a cycle, each with who removes it. Adding one here needs a reason a reviewer accepts.
ALLOWED_LAZY: dict[tuple[str, str], str] = {
    ("gate.contract.file_schema", "gate.data.registry"): "the contract loader asks the check registry for each "
    "check's options schema, and the checks import Contract; issue 20 item 1 (checks declaring themselves) removes it",
}


def _modules() -> dict[str, Path]:
    mods: dict[str, Path] = {}
    for p in GATE.rglob("*.py"):
        parts = list(p.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = p
    return mods


def _is_type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def _imports(tree: ast.Module, *, top_level_only: bool) -> list[ast.Import | ast.ImportFrom]:
    """The import statements that run: module level (also inside module-level if/try), or everywhere."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(nodes: list[ast.stmt]) -> None:
        for n in nodes:
            if isinstance(n, (ast.Import, ast.ImportFrom)):
                found.append(n)
            elif isinstance(n, ast.If) and _is_type_checking(n):
                visit(n.orelse)
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and top_level_only:
                continue
            else:
                for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                    child = getattr(n, field, None)
                    if isinstance(child, list):
                        visit([c for c in child if isinstance(c, ast.stmt)] + [
                            s for h in child if isinstance(h, (ast.ExceptHandler, ast.match_case)) for s in h.body])

    visit(tree.body)
    return found


def import_graph(*, top_level_only: bool) -> dict[str, set[str]]:
    """Module -> the gate modules it imports (`from pkg import name` counts as pkg.name when that is a module)."""
    mods = _modules()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in _imports(ast.parse(path.read_text(encoding="utf-8")), top_level_only=top_level_only):
            if isinstance(node, ast.Import):
                graph[mod] |= {a.name for a in node.names if a.name in mods}
                continue
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
            for alias in node.names:
                if f"{base}.{alias.name}" in mods:
                    graph[mod].add(f"{base}.{alias.name}")
                elif base in mods:
                    graph[mod].add(base)
        graph[mod].discard(mod)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative: no recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        found.append(sorted(comp))
    return found


def test_the_graph_sees_real_edges() -> None:
    """The scan finds the imports it must (else an empty graph would pass every test below)."""
    top = import_graph(top_level_only=True)
    every = import_graph(top_level_only=False)
    assert "gate.data.mapper" in top["gate.data.runner"] and "gate.data.mapper" in top["gate.data.ray_engine"]
    assert "gate.commands.changed" in top["gate.commands.check"]
    assert "gate.data.registry" in every["gate.contract.file_schema"]  # a function-level import
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycle_at_module_level() -> None:
    assert cycles(import_graph(top_level_only=True)) == []


def test_no_import_cycle_through_function_level_imports() -> None:
    graph = import_graph(top_level_only=False)
    for (src, dst) in ALLOWED_LAZY:
        graph[src].discard(dst)
    assert cycles(graph) == [], "modules that import each other (a function-level import does not untangle them)"
