"""The data door of `gate demo`: every fixture dataset checked against its contract.

The demo verifies the gate says what it should (clean sets pass, faulty sets fail, every planted fault found)
before the release loop trains on any of it.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from rich.table import Table

from gate.contract.model import TokenizerRef
from gate.demo.paths import ROOT  # the checkout, or the files the wheel ships (gate.demo.paths)
from gate.errors import ExitCode, GateError

# (dataset, contract, tokenizer whose chat template and loss mask are audited, expected verdict)
DEMO_DATASETS = [
    ("triage-clean", "triage.yaml", None, "pass"),
    ("triage-faulty", "triage.yaml", None, "fail"),
    ("tool-use-clean", "tool-use.yaml", "glm-tiny", "pass"),
    ("tool-use-faulty", "tool-use.yaml", "glm-tiny", "fail"),
]


def _planted_found(run: object, faults_file: Path) -> str:
    """How many of the planted faults (of the checks that ran) the gate found, and how many findings were extra."""
    if not faults_file.exists():
        return "–"
    import json

    ran = {r.name for r in run.results if r.status != "skipped"}  # type: ignore[attr-defined]
    # reworded copies are found by the semantic options, which are opt-in (the demo's contracts leave them off)
    semantic = "semantic_duplicate" in ran
    planted = {(f["check"], f["split"], f["row"]) for f in json.loads(faults_file.read_text())
               if f["check"] in ran and (semantic or "reworded copy" not in f["note"])}
    got = {(f.check, f.split, f.row) for r in run.results for f in r.findings}  # type: ignore[attr-defined]
    extra = len(got - planted)
    return f"{len(planted & got)}/{len(planted)}" + (f", {extra} extra" if extra else "")


def conflict_lines(run: object) -> list[str]:
    """One line per `conflicting_answers` pair of a run: both rows, the prompt similarity, the masked values."""
    out = []
    for r in run.results:  # type: ignore[attr-defined]
        if r.name != "conflicting_answers":
            continue
        for f in r.findings:
            out.append(f"conflicting answers: {f.split} row {f.row} (id {f.row_id}): {f.message}"
                       + (f" ({f.snippet})" if f.snippet else ""))
    return out


def run_data_door(out_dir: str, db: str | None, console: Any,
                  shown_as: str | None = None) -> tuple[int, dict[str, str]]:
    """Checks every fixture dataset; returns the exit code and the `gate check` run id of each.

    `shown_as`: the folder the table names for the reports (the demo's `--out`, which points at this run's folder
    once it has passed), instead of the run folder's own long path."""
    from gate.contract import load_contract
    from gate.data.runner import run_checks
    from gate.data.usecase import exit_code_for
    from gate.report.check_report import write_reports
    from gate.store.db import record_check_run

    runs: dict[str, str] = {}
    table = Table(title="gate demo: the data door on the fixture datasets", title_justify="left")
    for col in ("dataset", "rows", "verdict", "expected", "failed checks", "findings", "planted found", "report"):
        table.add_column(col, no_wrap=True)
    surprises = 0
    conflicts: list[str] = []
    for name, contract_file, tokenizer, expected in DEMO_DATASETS:
        dataset = ROOT / "fixtures" / "datasets" / name
        if not dataset.exists():
            raise GateError("fixture dataset missing (run `python fixtures/generate.py`)", file=str(dataset))
        contract = load_contract(ROOT / "contracts" / contract_file)
        if tokenizer:
            contract = dataclasses.replace(
                contract, tokenizer=TokenizerRef(str(ROOT / "fixtures" / "tokenizers" / tokenizer)))
        run = run_checks(str(dataset), contract)
        code = exit_code_for(run)
        report = Path(out_dir) / name
        write_reports(run, report)
        record_check_run(run, int(code), db)
        runs[name] = run.run_id
        ok = run.verdict == expected
        surprises += not ok
        ran = [r for r in run.results if r.status != "skipped"]
        failed = f"{sum(r.status == 'fail' for r in ran)} of {len(ran)}"
        style = "green" if run.verdict == "pass" else "red"
        found = _planted_found(run, dataset / "FAULTS.json")
        conflicts.extend(f"{name}: {line}" for line in conflict_lines(run))
        table.add_row(name, f"{run.rows:,}", f"[{style}]{run.verdict.upper()}[/]",
                      expected.upper() + ("" if ok else " [bold red](unexpected)[/]"), failed,
                      f"{sum(len(r.findings) for r in run.results):,}", found,
                      f"{Path(shown_as) / name if shown_as else report}/report.md")
    console.print(table)
    for line in conflicts:  # label noise is shown pair by pair: a reviewer decides which answer is right
        console.print(line, markup=False, highlight=False)
    if surprises:
        console.print(f"[bold red]{surprises} dataset(s) did not get the expected verdict[/]")
        return int(ExitCode.ERROR), runs
    console.print("Every dataset got the expected verdict. Open a report.md to see the findings; "
                  "the runs are recorded in the DuckDB file.")
    return int(ExitCode.PASS), runs
