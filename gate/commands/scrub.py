"""`gate scrub`: write a scrubbed copy of a dataset and say what was changed."""

from __future__ import annotations

from rich.table import Table

from gate.contract import load_contract
from gate.data.scrub import scrub_dataset
from gate.errors import ExitCode
from gate.report.console import make_console
from gate.requests import ScrubRequest


def run_scrub_command(req: ScrubRequest) -> int:
    contract = load_contract(req.contract)
    dataset, out = req.dataset, req.out
    outcome = scrub_dataset(dataset, contract, out)
    console = make_console()
    table = Table(title=f"gate scrub · {dataset} → {out}", title_justify="left")
    table.add_column("what")
    table.add_column("count", justify="right")
    table.add_row("rows in", f"{outcome.rows_in:,}")
    for entity, n in sorted(outcome.entities.items()):
        table.add_row(f"rewritten {entity}", f"{n:,}")
    for rule, n in sorted(outcome.rows_changed.items()):
        table.add_row(f"rows changed: {rule}", f"{n:,}")
    for rule, n in sorted(outcome.dropped.items()):
        table.add_row(f"dropped: {rule}", f"{n:,}")
    if outcome.identical_after_rewrite:
        table.add_row("kept, identical to another row once rewritten (operator `hash` keeps values apart)",
                      f"{outcome.identical_after_rewrite:,}")
    table.add_row("rows out", f"{outcome.rows_out:,}")
    console.print(table)
    console.print(f"→ {out}/MANIFEST.json (the rows of each rule: by_rule)")
    return int(ExitCode.PASS)
