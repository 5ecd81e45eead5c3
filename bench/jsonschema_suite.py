"""The official JSON-Schema-Test-Suite (draft 2020-12) through gate's format scorer.

Every case of the vendored suite (tests/score/jsonschema_suite, see SOURCE.md there) is one FormatValidity built
from the case's schema; each test's instance is written as JSON text (the model's answer) and scored. Agreement
means the scorer's `schema_valid` (strict parse, then the schema) equals the suite's `valid`; the flexible level
(`schema_valid_flexible`, the outermost JSON value found in the text) is reported beside it. Groups:

- core: tests/draft2020-12/*.json (target >= 99.5% agreement);
- optional: optional/*.json except formats (ECMA-262 regex, bignum, ...), informative;
- optional/format: one row per format; the formats with an installed checker are asserted (target >= 95%),
  the others are listed as not asserted and left out of the target.

Cases whose schema refers outside itself (the suite's `http://localhost:1234/...` remotes, other metaschemas)
are refused by gate when the schema loads, by design (gate never fetches a schema): they are counted as
excluded with that reason, not as agreement. Any other refusal of a suite schema counts as disagreement on all
of its tests. Every socket connect during the run is counted (and refused): the figure must be 0.

Run: .venv/bin/python bench/jsonschema_suite.py   Writes bench/results/jsonschema_suite.{json,md}.
"""

from __future__ import annotations

import json
import socket
import sys
import time
from collections import defaultdict
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / "tests" / "score" / "jsonschema_suite"
OUT = ROOT / "bench" / "results"
CORE_TARGET, FORMAT_TARGET = 0.995, 0.95


@contextmanager
def count_connections() -> Any:
    """Counts (and refuses) every outgoing socket connect while the suite runs."""
    seen = {"n": 0}
    real = socket.socket.connect, socket.socket.connect_ex, socket.create_connection

    def refuse(*_a: Any, **_k: Any) -> Any:
        seen["n"] += 1
        raise OSError("network refused by bench/jsonschema_suite.py")

    socket.socket.connect = refuse  # type: ignore[method-assign]
    socket.socket.connect_ex = refuse  # type: ignore[method-assign]
    socket.create_connection = refuse  # type: ignore[assignment]
    try:
        yield seen
    finally:
        socket.socket.connect, socket.socket.connect_ex, socket.create_connection = real  # type: ignore[method-assign]


def _group(rel: Path) -> tuple[str, str]:
    parts = rel.parts
    if parts[0] != "optional":
        return "core", rel.stem
    if len(parts) > 2 and parts[1] == "format":
        return "optional/format", rel.stem
    return "optional", rel.stem


def _formats_for(group: str, name: str, installed: set[str]) -> list[str] | None:
    if group == "core":
        return []
    if group == "optional/format":
        fmt = "regex" if name == "ecmascript-regex" else name
        return [fmt] if fmt in installed else None
    return None


def run_suite(suite: Path = SUITE) -> dict[str, Any]:
    """Scores every test of the suite; returns the table (per group and file) and the disagreements."""
    from gate.contract.schemas import LOOSE_FORMATS, SchemaProblem, available_formats, default_formats
    from gate.engines.types import Response
    from gate.score.scorers.format import FormatValidity
    from gate.score.types import Item

    item = Item(id="suite", category="suite", messages=(), expected=None)
    rows: dict[tuple[str, str], dict[str, Any]] = defaultdict(lambda: {
        "tests": 0, "agree": 0, "agree_flexible": 0, "excluded": 0, "refused": 0})
    disagreements: list[dict[str, Any]] = []
    excluded: list[dict[str, Any]] = []
    asserted = set(available_formats())
    t0 = time.perf_counter()
    with count_connections() as net:
        for path in sorted((suite / "draft2020-12").rglob("*.json")):
            group, name = _group(path.relative_to(suite / "draft2020-12"))
            for case in json.loads(path.read_text(encoding="utf-8")):
                row = rows[(group, name)]
                try:  # core: format is an annotation (the draft's default); a format file: that format asserted
                    scorer: Any = FormatValidity(case["schema"], formats=_formats_for(group, name, asserted))
                    problem = None
                except SchemaProblem as exc:
                    scorer, problem = None, exc.message
                for test in case["tests"]:
                    row["tests"] += 1
                    where = {"file": str(path.relative_to(suite)), "case": case["description"],
                             "test": test["description"], "valid": test["valid"]}
                    if problem is not None and "does not resolve inside this schema" in problem:
                        row["excluded"] += 1
                        excluded.append({**where, "reason": problem[:160]})
                        continue
                    if problem is not None:
                        row["refused"] += 1
                        disagreements.append({**where, "got": f"schema refused: {problem[:160]}"})
                        continue
                    s = scorer.score(item, Response(text=json.dumps(test["data"]), finish_reason="stop"))
                    got = s.value["schema_valid"] == 1.0
                    row["agree"] += got == test["valid"]
                    row["agree_flexible"] += (s.value["schema_valid_flexible"] == 1.0) == test["valid"]
                    if got != test["valid"]:
                        disagreements.append({**where, "got": got, "why": s.explanation[:160]})
    seconds = time.perf_counter() - t0

    def total(group: str, only: set[str] | None = None) -> dict[str, Any]:
        sel = [r for (g, n), r in rows.items() if g == group and (only is None or n in only)]
        t = {k: sum(r[k] for r in sel) for k in ("tests", "agree", "agree_flexible", "excluded", "refused")}
        scored = t["tests"] - t["excluded"]
        t["scored"] = scored
        t["agreement"] = round(t["agree"] / scored, 4) if scored else None
        t["agreement_flexible"] = round(t["agree_flexible"] / scored, 4) if scored else None
        return t

    format_names = {n for (g, n) in rows if g == "optional/format"}
    defaults = set(default_formats())
    checked = {n for n in format_names if n in defaults or (n == "ecmascript-regex" and "regex" in defaults)}
    return {
        "suite_commit": "44401e0c046704b476ec9d2e2fccdaee618f259d", "seconds": round(seconds, 1),
        "network_connections": net["n"],
        "core": total("core"), "optional": total("optional"),
        "format_asserted": total("optional/format", checked),
        "formats_asserted": sorted(checked), "formats_not_asserted": sorted(format_names - checked),
        "loose_formats": dict(LOOSE_FORMATS), "format_all_installed": total(
            "optional/format", {n for n in format_names if n in asserted or n == "ecmascript-regex"}),
        "rows": [{"group": g, "file": n, **r} for (g, n), r in sorted(rows.items())],
        "disagreements": disagreements, "excluded": excluded,
        "python": sys.version.split()[0],
    }


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.2f}%"


def write(result: dict[str, Any], out: Path = OUT) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "jsonschema_suite.json").write_text(json.dumps(result, indent=1) + "\n")
    core, fmt, opt = result["core"], result["format_asserted"], result["optional"]
    allf = result["format_all_installed"]
    lines = [
        "# JSON-Schema-Test-Suite (draft 2020-12) through the format scorer",
        "",
        f"Suite commit {result['suite_commit'][:12]}, vendored under tests/score/jsonschema_suite. "
        f"`bench/jsonschema_suite.py`, {result['seconds']} s, Python {result['python']}. "
        "Agreement: the scorer's `schema_valid` equals the suite's `valid` (strict level; flexible level beside it).",
        "",
        "| group | tests | excluded (ref outside the schema) | scored | agreement | flexible | target |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- |",
        f"| core | {core['tests']} | {core['excluded']} | {core['scored']} | {_pct(core['agreement'])} | "
        f"{_pct(core['agreement_flexible'])} | >= 99.5% |",
        f"| optional/format (formats asserted by default) | {fmt['tests']} | {fmt['excluded']} | {fmt['scored']} | "
        f"{_pct(fmt['agreement'])} | {_pct(fmt['agreement_flexible'])} | >= 95% |",
        f"| optional/format (every installed checker, listed) | {allf['tests']} | {allf['excluded']} | "
        f"{allf['scored']} | {_pct(allf['agreement'])} | {_pct(allf['agreement_flexible'])} | informative |",
        f"| optional (other) | {opt['tests']} | {opt['excluded']} | {opt['scored']} | {_pct(opt['agreement'])} | "
        f"{_pct(opt['agreement_flexible'])} | informative |",
        "",
        f"Network connections during the run: **{result['network_connections']}**.",
        "",
        "Core cases run with `formats: []` (format is an annotation, draft 2020-12's default, which core "
        "format.json tests); each optional/format file runs with its own format listed (`formats: [<name>]`).",
        "",
        f"Formats asserted by default: {', '.join(result['formats_asserted'])}.",
        f"Not asserted by default (annotation unless a scorecard lists them): "
        f"{', '.join(result['formats_not_asserted']) or 'none'}; why:",
        "",
        *[f"- {k}: {v}" for k, v in result["loose_formats"].items()],
        "- unknown: an unknown format is always an annotation (the suite checks exactly that)",
        "",
        "Excluded cases refer to a document outside their schema (the suite's `remotes/` served at "
        "`http://localhost:1234/`, or another draft's metaschema): gate refuses such schemas at load and never "
        "fetches one, so they are not scored.",
        "",
        "## Per file",
        "",
        "| group | file | tests | excluded | agreement | flexible |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for r in result["rows"]:
        scored = r["tests"] - r["excluded"]
        lines.append(f"| {r['group']} | {r['file']} | {r['tests']} | {r['excluded']} | "
                     f"{_pct(r['agree'] / scored if scored else None)} | "
                     f"{_pct(r['agree_flexible'] / scored if scored else None)} |")
    lines += ["", "## Disagreements", "", "| file | case | test | suite | gate |", "| --- | --- | --- | --- | --- |"]
    for d in result["disagreements"]:
        lines.append(f"| {d['file']} | {d['case'][:60]} | {d['test'][:60]} | {d['valid']} | "
                     f"{str(d['got'])[:80]} |".replace("\n", " "))
    (out / "jsonschema_suite.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    res = run_suite()
    write(res)
    print(json.dumps({k: res[k] for k in ("core", "format_asserted", "optional", "network_connections",
                                          "formats_not_asserted", "seconds")}, indent=1))
