"""What a person sees in the terminal after `gate check`: the verdict, a table to compare checks, where to look.

The run is sanitized already (gate.report.sanitize); text from the data is also escaped as rich markup, so a
split or contract name such as "[link=...]" prints as written."""

from __future__ import annotations

import sys

from rich.markup import escape
from rich.table import Table

from gate.data.runner import CheckRun
from gate.pii.redact import mask_ident
from gate.report.console import make_console

_STYLE = {"pass": "green", "fail": "bold red", "warn": "yellow", "skipped": "dim"}


def print_check_run(run: CheckRun, report_dir: str, *, quiet: bool = False) -> None:
    console = make_console()
    verdict = "[bold green]PASS[/]" if run.verdict == "pass" else "[bold red]FAIL[/]"
    if not quiet:
        table = Table(title=escape(f"gate check · {run.dataset} · contract {run.contract.name} "
                                   f"v{run.contract.version}"),
                      title_justify="left")
        for col, kw in (("check", {"no_wrap": True}), ("status", {}), ("scanned", {"justify": "right"}),
                        ("flagged rows", {"justify": "right"}), ("findings", {"justify": "right"}), ("summary", {})):
            table.add_column(col, **kw)
        for r in run.results:
            table.add_row(r.name, f"[{_STYLE.get(r.status, '')}]{r.status}[/]", f"{r.counts.get('scanned', 0):,}",
                          f"{r.counts.get('flagged_rows', 0):,}", f"{r.counts.get('findings', 0):,}",
                          escape(r.summary))
        console.print(table)
    for r in run.results:  # a check that ran with less than asked (pii without its NER model): one line each
        for line in r.details.get("warnings", []):
            print(f"warning: {r.name}: {mask_ident(line)}", file=sys.stderr)
    # the run id with the verdict, quiet or not: `gate release create --data-check RUN` needs it
    recorded = "" if "db" in run.options else " (not recorded)"
    if run.options.get("base_commit"):  # `--base`: say the verdict is on the new rows only
        recorded += f"; incremental against {str(run.options['base_commit'])[:12]}: " \
                    f"{run.options.get('changed_rows', 0):,} new row(s)"
    elif (run.options.get("novelty") or {}).get("full_because"):  # asked for incremental, got the full path
        recorded += f"; full check, not incremental: {mask_ident(run.options['novelty']['full_because'])}"
    # how many fail the gate, beside all findings: "1,302 finding(s)" alone read as 1,302 problems where 146 failed
    total, errors = sum(len(r.findings) for r in run.results), sum(r.errors for r in run.results)
    found = f"{total:,} finding(s)" + (f" ({errors:,} error(s))" if errors < total else "")
    console.print(f"{verdict} {escape(run.dataset)}: {run.rows:,} rows, {found}, {run.seconds:.1f} s, "
                  f"run {run.run_id}{recorded} → {escape(mask_ident(str(report_dir)))}/report.md", soft_wrap=True)
