"""`gate parity`: parse options, run gate.engines.parity, print the table (or JSON); exit 0 within tolerance,
100 not."""

from __future__ import annotations

import json
import sys

from rich.markup import escape
from rich.table import Table

from gate.report.console import make_console


def run_parity_command(*, model: str, adapter: str | None, engines: str, dtypes: str, merged: bool,
                       prompts: str | None, limit: int | None, max_tokens: int, tolerances: str | None,
                       as_json: bool) -> int:
    from gate.engines.parity import load_tolerances, read_prompts, run_parity

    def split(s: str) -> list[str]:
        return [x.strip() for x in s.split(",") if x.strip()]

    tol = load_tolerances(tolerances)
    report = run_parity(model, adapter=adapter, engines=split(engines), dtypes=split(dtypes), merged=merged,
                        prompts=read_prompts(prompts, limit), max_tokens=max_tokens, tolerances=tol)
    if as_json:
        sys.stdout.write(json.dumps(report.to_json(), indent=2) + "\n")
        return report.exit_code
    console = make_console()
    table = Table(title=f"gate parity · {model}" + (f" · adapter {adapter}" if adapter else ""), title_justify="left")
    for col in ("kind", "reference", "candidate", "exact match", "max |Δ logprob|", "first divergence", "result"):
        table.add_column(col)
    for c in report.comparisons:
        div = next((it for it in c.items if it["first_divergent_token"] is not None), None)
        where = (f"prompt {div['prompt']} token {div['first_divergent_token']}: {div['reference_token']!r} vs "
                 f"{div['candidate_token']!r}") if div else "-"
        lp = "-" if c.max_logprob_diff is None else f"{c.max_logprob_diff:.4f} (≤ {c.tolerance.max_logprob_diff})"
        table.add_row(c.kind, c.reference, c.candidate, f"{c.exact_match:.0%} (≥ {c.tolerance.min_exact_match:.0%})",
                      lp, escape(where), "[green]PASS[/]" if c.passed else "[bold red]FAIL[/]")
    console.print(table)
    console.print("[bold green]PASS[/]" if report.passed else "[bold red]FAIL[/] outside the parity tolerances")
    return report.exit_code
