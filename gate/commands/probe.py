"""`gate probe`: run the compatibility proof and print its table (or JSON); exit 0 pass, 100 a step failed."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from rich.markup import escape
from rich.table import Table

from gate.report.console import make_console


def run_probe_command(*, model: str, lora: str | None, as_json: bool, data: str | None, rows: int, max_tokens: int,
                      steps: str | None, work_dir: str | None) -> int:
    from gate.probe.runner import ProbeOptions, parse_steps, run_probe

    opts = ProbeOptions(model_dir=Path(model), spec_path=lora, data=data, rows=rows, max_tokens=max_tokens,
                        steps=parse_steps(steps), work_dir=Path(work_dir) if work_dir else None)
    console = make_console()
    live = console.is_terminal and not as_json and not os.environ.get("CI")
    if live:
        with console.status("probing...") as status:
            report = run_probe(opts, progress=lambda msg: status.update(msg))
    else:
        report = run_probe(opts)
    if as_json:
        sys.stdout.write(json.dumps(report.to_json(), indent=2) + "\n")
        return report.exit_code
    table = Table(title=f"gate probe · {model}" + (f" · LoRA {lora}" if lora else " · full fine-tuning"),
                  title_justify="left", show_lines=True)
    table.add_column("#", justify="right")
    table.add_column("step")
    table.add_column("result")
    table.add_column("evidence", overflow="fold")
    colours = {"pass": "green", "warn": "yellow", "fail": "bold red", "skip": "dim"}
    for s in report.steps:
        evidence = escape(s.evidence) + "".join(f"\n[yellow]WARNING[/] {escape(w)}" for w in s.warnings)
        table.add_row(str(s.number), s.name, f"[{colours[str(s.status)]}]{str(s.status).upper()}[/]", evidence)
    console.print(table)
    failed = [s.number for s in report.steps if str(s.status) == "fail"]
    warned = sum(len(s.warnings) for s in report.steps)
    verdict = f"[bold red]FAIL[/] step(s) {', '.join(map(str, failed))}" if failed else "[bold green]PASS[/]"
    console.print(f"{verdict} · {warned} warning(s) · {report.seconds:.1f}s")
    return report.exit_code
