"""`gate split`: write a source-grouped train/val/test split with a manifest."""

from __future__ import annotations

from rich.table import Table

from gate.contract import load_contract
from gate.data.splitter import SplitConfig, split_dataset
from gate.errors import ExitCode
from gate.report.console import make_console
from gate.requests import SplitRequest


def run_split_command(req: SplitRequest) -> int:
    contract = load_contract(req.contract)
    cfg = SplitConfig(names=tuple(req.names), ratios=tuple(req.ratios), salt=req.salt,
                      drop_ungrouped=req.drop_ungrouped)
    out, salt = req.out, req.salt
    outcome = split_dataset(req.dataset, contract, out, cfg)
    console = make_console()
    if outcome.ungrouped and not req.drop_ungrouped:
        console.print(f"[bold red]FAIL[/] {len(outcome.ungrouped)} row(s) have no '{contract.group_key}'"
                      + (f" nor '{contract.group_fallback_key}'" if contract.group_fallback_key else "")
                      + "; nothing written (use --drop-ungrouped to leave them out):")
        for split, row, rid in outcome.ungrouped[:20]:
            console.print(f"  {split}:{row}" + (f" (id {rid})" if rid else ""))
        return int(ExitCode.GATE_FAILED)
    table = Table(title=f"gate split · by {contract.group_key} · salt {salt}", title_justify="left")
    for col in ("split", "target", "rows", "groups"):
        table.add_column(col, justify="right" if col != "split" else "left")
    total = sum(outcome.counts.values()) or 1
    for name, ratio in zip(cfg.names, cfg.ratios, strict=True):
        rows = outcome.counts.get(name, 0)
        table.add_row(name, f"{ratio:.0%}", f"{rows:,} ({rows / total:.0%})", f"{outcome.groups.get(name, 0):,}")
    console.print(table)
    console.print(f"{outcome.merged_groups} group(s) merged because they share a duplicate text; "
                  f"{len(outcome.ungrouped)} ungrouped row(s) dropped → {out}/MANIFEST.json")
    return int(ExitCode.PASS)
