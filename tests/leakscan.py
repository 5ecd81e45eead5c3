"""Finding planted personal data and secrets where they must never be: reports, logs, manifests, DuckDB.

`planted_values(dataset)` reads the dataset's FAULTS.json (which says where each planted value is and of
what kind, not the value itself), takes the value out of that row by the shape the fixture generator plants
it in, and refuses to return fewer values than there are planted faults: a scan that looks for nothing
passes for the wrong reason. `scan(...)` then searches files, directory trees, DuckDB files and strings for
each value and its obvious variants (without spaces; each line of a private key) and returns every hit.
The service's reads and the dashboard's pages are scanned by tests/test_no_leaks.py: their bodies go in as
`texts` (JSON answers also as `strings_of(...)`, since escapes would hide a value from a plain search).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

# how each kind of planted value appears in a row (fixtures/generate.py: pii_values, secret_values)
PATTERNS: dict[str, list[str]] = {
    "PERSON": [r"[Mm]y name is ([A-Z][a-z]+ [A-Z][a-z]+)", r"([A-Z][a-z]+ [A-Z][a-z]+) from our office"],
    "EMAIL_ADDRESS": [r"([\w.+-]+@example\.net)"],
    "PHONE_NUMBER": [r"(\+1 \d{3} 555 01\d\d)", r"(\+44 20 7946 0\d{3})"],
    "CREDIT_CARD": [r"(\d{4} \d{4} \d{4} \d{4})"],
    "IBAN_CODE": [r"\b((?:DE|GB)\d\d(?: ?[A-Z0-9]{2,4}){4,8})"],
    "LOCATION": [r"gone to (\d+ [A-Z][a-z]+ [A-Z][a-z]+, [A-Za-z ]+, [A-Z]{2} \d{5}|\d+ [A-Z][a-z]+ [A-Z][a-z]+, "
                 r"[A-Za-z]+ [A-Z]{2}\d [0-9][A-Z]{2})"],
    "jwt": [r"(eyJ[\w-]+\.eyJ[\w-]+\.[\w-]+)"],
    "github_pat": [r"(github_pat_\w+)"],
    "github_token": [r"(ghp_\w{36})"],
    "slack_token": [r"(xox[bp]-[\w-]+)"],
    "openai_api_key": [r"(sk-proj-[\w-]+)"],
    "aws_access_key": [r"(AKIA[A-Z0-9]{16})", r'aws_secret_access_key="([^"]+)"'],
    "private_key": [r"-----BEGIN RSA PRIVATE KEY-----\n((?:[A-Za-z0-9+/=]+\n)+)-----END"],
}


@dataclass(frozen=True)
class Planted:
    kind: str
    where: str  # split:row
    value: str

    def probes(self) -> set[str]:
        """The value as planted, and the forms a careless redaction or log line could still hold."""
        out = {self.value}
        if self.kind == "private_key":
            out = {line for line in self.value.split("\n") if len(line) >= 16}
        elif " " in self.value and len(self.value) > 8:
            out.add(self.value.replace(" ", ""))
        return out


@dataclass(frozen=True)
class Leak:
    where: str  # a file path, "duckdb:<file>:<table>.<column>", or the label of a text
    kind: str
    planted_at: str

    def __str__(self) -> str:  # never print the value itself: the report of a leak must not leak
        return f"{self.kind} planted at {self.planted_at} found in {self.where}"


def _strings(node: object) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [s for v in node.values() for s in _strings(v)]
    if isinstance(node, list):
        return [s for v in node for s in _strings(v)]
    return []


def planted_values(dataset: str | Path) -> list[Planted]:
    """Every planted PII value and secret of a faulty fixture dataset, taken from the rows FAULTS.json names."""
    dataset = Path(dataset)
    faults = [f for f in json.loads((dataset / "FAULTS.json").read_text()) if f["check"] in ("pii", "secret")]
    lines: dict[str, list[str]] = {}
    out: list[Planted] = []
    for f in faults:
        rows = lines.setdefault(f["split"], (dataset / f"{f['split']}.jsonl").read_text().splitlines())
        text = "\n".join(_strings(json.loads(rows[f["row"] - 1])))
        where = f"{f['split']}:{f['row']}"
        found = [m.group(1).strip() for rx in PATTERNS[f["note"]] for m in [re.search(rx, text)] if m]
        if not found:
            raise AssertionError(f"no {f['note']} value found in {dataset.name} {where}: update PATTERNS")
        out += [Planted(f["note"], where, v) for v in found]
    return out


def strings_of(node: object) -> list[str]:
    """Every string in a parsed JSON document (escapes undone), for scanning an API answer."""
    return _strings(node)


def _duckdb_texts(path: Path) -> list[tuple[str, str]]:
    import duckdb

    con = duckdb.connect(str(path), read_only=True)
    try:
        out = []
        tables = con.execute("SELECT table_schema, table_name FROM information_schema.tables").fetchall()
        for schema, table in tables:
            cols = [c for (c,) in con.execute("SELECT column_name FROM information_schema.columns "
                                              "WHERE table_schema = ? AND table_name = ?", [schema, table]).fetchall()]
            for col in cols:  # every column as text: JSON, structs and lists hold strings too
                rows = con.execute(f'SELECT CAST("{col}" AS VARCHAR) FROM "{schema}"."{table}" '
                                   f'WHERE "{col}" IS NOT NULL').fetchall()
                out.append((f"duckdb:{path.name}:{table}.{col}", "\n".join(r[0] for r in rows)))
        return out
    finally:
        con.close()


def scan(planted: list[Planted], *, paths: list[str | Path] = (), duckdb_files: list[str | Path] = (),
         texts: dict[str, str] | None = None) -> list[Leak]:
    """Searches files (directories recursively), DuckDB files (every column of every table) and named texts."""
    haystacks: list[tuple[str, str]] = list((texts or {}).items())
    for p in map(Path, paths):
        files = sorted(q for q in p.rglob("*") if q.is_file()) if p.is_dir() else [p] if p.is_file() else []
        for f in files:
            if f.suffix == ".duckdb":
                haystacks += _duckdb_texts(f)
                continue
            raw = f.read_bytes().decode("utf-8", "replace")
            haystacks.append((str(f), raw))
            if f.suffix == ".json":  # JSON escapes (\n, \u00e9) would hide a value from a plain search
                try:
                    haystacks.append((str(f), "\n".join(_strings(json.loads(raw)))))
                except ValueError:
                    pass
    for d in map(Path, duckdb_files):
        haystacks += _duckdb_texts(d)
    leaks = []
    for where, text in haystacks:
        for item in planted:
            if any(probe in text for probe in item.probes()):
                leaks.append(Leak(where, item.kind, item.where))
    return leaks
