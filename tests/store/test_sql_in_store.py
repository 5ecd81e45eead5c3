"""SQL lives in gate/store only (issue 20 item 4): no module outside it runs a statement, holds SQL text or opens
DuckDB itself. The faces (dashboard, service), decide, release, the demo's leak scan and the response cache call
store functions; a schema change is then one package to read. Nothing is allow-listed."""

from __future__ import annotations

import ast
import re
from pathlib import Path

GATE = Path(__file__).resolve().parents[2] / "gate"
STORE = GATE / "store"
# DuckDB's statement and result methods (a `.query(` is left out: the MinHash index has one, and it is no SQL)
DB_METHODS = {"execute", "executemany", "sql", "fetchall", "fetchone", "fetchmany", "fetchdf", "fetchnumpy",
              "fetch_arrow_table", "from_query"}
SQL = re.compile(r"\b(SELECT\b[\s\S]*\bFROM\b|INSERT\s+(OR\s+\w+\s+)?INTO\b|UPDATE\s+\"?\w+\"?\s+SET\b|"
                 r"DELETE\s+FROM\b|CREATE\s+(OR\s+REPLACE\s+)?(TEMP\s+)?(TABLE|VIEW|INDEX|SEQUENCE|SCHEMA|MACRO)\b|"
                 r"ALTER\s+TABLE\b|DROP\s+(TABLE|VIEW)\b|BEGIN\s+TRANSACTION\b)")


def _outside_store() -> list[Path]:
    return [p for p in sorted(GATE.rglob("*.py")) if STORE not in p.parents]


def _violations(path: Path, root: Path = GATE.parent) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    rel = path.relative_to(root)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in DB_METHODS:
            out.append(f"{rel}:{node.lineno}: .{node.func.attr}(...) call")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and SQL.search(node.value):
            out.append(f"{rel}:{node.lineno}: SQL in a string: {SQL.search(node.value).group(0)[:40]!r}")
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            if any(n == "duckdb" or n.startswith("duckdb.") for n in names):
                out.append(f"{rel}:{node.lineno}: imports duckdb")
    return out


def test_no_sql_outside_gate_store() -> None:
    found = [v for p in _outside_store() for v in _violations(p)]
    assert found == [], "SQL belongs in gate/store (a store function the caller calls):\n" + "\n".join(found)


def test_the_scan_sees_what_it_forbids(tmp_path: Path) -> None:
    """The scan itself: each shape the old code had (a statement in a call, an f-string query, DDL in a constant,
    a module importing duckdb) is caught, and prose or a non-SQL `.query(` is not."""
    bad = tmp_path / "bad.py"
    bad.write_text('import duckdb\n'
                   'DDL = """CREATE TABLE IF NOT EXISTS t (x INTEGER)"""\n'
                   'def f(con, t):\n'
                   '    con.execute(f"SELECT count(*) FROM {t} WHERE x = ?", [1]).fetchall()\n'
                   '    con.executemany("INSERT OR REPLACE INTO t VALUES (?)", [[1]])\n'
                   '    return con.sql("select 1")\n')
    hits = _violations(bad, tmp_path)
    assert sorted(h.split(": ", 1)[1] for h in hits if "SQL in a string" not in h) == sorted([
        "imports duckdb", ".fetchall(...) call", ".execute(...) call", ".executemany(...) call", ".sql(...) call"])
    assert sum("SQL in a string" in h for h in hits) == 3  # the DDL, the f-string's SELECT part, the INSERT
    ok = tmp_path / "ok.py"
    ok.write_text('"""Select the rows from a table of results; update the index, then insert a note."""\n'
                  'def g(index, xs):\n'
                  '    return index.query(xs)\n')
    assert _violations(ok, tmp_path) == []
