"""`gate export`: write a dataset in a training runner's format, with a manifest; print what was written."""

from __future__ import annotations

from rich.table import Table

from gate.contract import load_contract
from gate.contract.model import TokenizerRef
from gate.errors import ExitCode
from gate.report.console import make_console


def run_export_command(*, dataset: str, fmt: str, out: str, contract_path: str | None, tokenizer: str | None,
                       skip_invalid: bool) -> int:
    from gate.export import export_dataset

    contract = load_contract(contract_path) if contract_path else None
    outcome = export_dataset(dataset, fmt, out, contract=contract, skip_invalid=skip_invalid,
                             tokenizer=TokenizerRef(tokenizer) if tokenizer else None)
    console = make_console()
    table = Table(title=f"gate export · {fmt}", title_justify="left")
    table.add_column("split")
    table.add_column("rows", justify="right")
    for split, n in outcome.counts.items():
        table.add_row(split, f"{n:,}")
    console.print(table)
    if outcome.skipped:
        console.print(f"[yellow]{len(outcome.skipped)} row(s) left out (--skip-invalid), listed in MANIFEST.json[/]")
    for w in outcome.warnings:
        console.print(f"[yellow]warning:[/] {w}")
    console.print(f"→ {out}/MANIFEST.json")
    return int(ExitCode.PASS)
