"""`gate score`: run candidate (and baseline) over a scorecard, record, report, then decide on the scorecard's
gates: exit 0 PROMOTE (or the baseline-only target check), 100 BLOCK, 1 could not run or incomplete.

The response cache lives in the same DuckDB file as the record: one file to keep, move or archive with the runs it
explains, and resuming needs nothing but the same `--db`. Writes to it are sequential short-lived connections, so
the single-writer rule of DuckDB is never hit.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rich.table import Table

from gate.errors import ExitCode
from gate.report.console import make_console


def show_progress(console: Any) -> bool:
    """Bars only for a person at a terminal: in CI (`CI` set) or piped into a log they would be thousands of
    carriage-return lines, and the summary printed at the end says everything a log needs."""
    return bool(console.is_terminal) and not os.environ.get("CI")


@contextmanager
def progress_bars(console: Any, *, enabled: bool = True) -> Iterator[Any]:
    """A rich bar per model and suite ("candidate · triage-heldout  37/120  0:00:41"), or None where
    `show_progress` says no; the factory is what `run_score(progress=...)` calls."""
    if not (enabled and show_progress(console)):
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    bars = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=console)

    def factory(role: str, suite: str, total: int) -> Any:
        task = bars.add_task(f"{role} · {suite}", total=total)
        return lambda n: bars.advance(task, n)

    with bars:
        yield factory


def run_score_command(*, candidate: str, scorecard_path: str, baseline: str | None, engine: str,
                      adapter: str | None, base_url: str | None, db: str | None, out: str, epoch: int,
                      limit: int | None, quiet: bool = False, tool_parser: str | None = None,
                      reasoning_parser: str | None = None, baseline_adapter: str | None = None,
                      chat_template: str | None = None, model_hash: str | None = None,
                      baseline_model_hash: str | None = None, concurrency: int = 8, strict: bool = False) -> int:
    from gate.errors import GateError, InputError
    from gate.score.run import ModelSpec, build_engine, run_score, summary_rows, write_reports
    from gate.score.scorecard import load_scorecard
    from gate.store.db import db_path

    scorecard = load_scorecard(scorecard_path, strict=strict)
    if chat_template and not Path(chat_template).is_file():
        raise InputError("chat template file not found", file=chat_template)
    if baseline_adapter and not baseline:
        raise GateError("--baseline-adapter needs --baseline (the base model the adapter applies to)")
    models = [ModelSpec("candidate", candidate, adapter, model_hash)]
    if baseline:
        models.append(ModelSpec("baseline", baseline, baseline_adapter, baseline_model_hash))
    if engine in ("vllm", "sglang") and scorecard.tools and not tool_parser:
        raise GateError(f"this scorecard offers tools: --engine {engine} needs --tool-parser (hermes for "
                        "ChatML/Qwen templates, glm45 / glm47 for GLM)", file=scorecard_path)
    console = make_console()
    if engine == "url" and not all(m.model_hash for m in models):
        # the key still separates URL and model name, but a redeployed model under the same name would match
        import sys

        # on stderr: stdout stays the one result (or error) line CI logs show
        print("gate: warning: --engine url without --model-hash (and --baseline-model-hash): cached answers are "
              "tied to the URL and model name only", file=sys.stderr)
    options = {"engine": engine, "base_url": base_url, "limit": limit, "epoch": epoch, "tool_parser": tool_parser,
               "reasoning_parser": reasoning_parser, "baseline_adapter": baseline_adapter,
               "chat_template": chat_template, "model_hash": model_hash, "baseline_model_hash": baseline_model_hash,
               "concurrency": concurrency}
    stream = scorecard.kind == "operations"  # time to first token needs a streamed answer
    with progress_bars(console, enabled=not quiet) as progress:
        outcome = run_score(scorecard, models, lambda spec: build_engine(engine, spec, base_url=base_url,
                                                                         tool_parser=tool_parser,
                                                                         reasoning_parser=reasoning_parser,
                                                                         chat_template=chat_template, stream=stream,
                                                                         concurrency=concurrency),
                            cache_path=db_path(db), epoch=epoch, limit=limit, db=db, options=options,
                            progress=progress)
    if not outcome.complete:
        bad = [f"{r.spec.role} {r.errors} of {len(r.samples)}" for r in outcome.runs if r.status != "complete"]
        console.print(f"gate: run incomplete: requests failed after retries ({', '.join(bad)}); "
                      "rerun the same command to resume from the cache", soft_wrap=True, markup=False)
        return int(ExitCode.ERROR)
    data = write_reports(outcome, out)
    if not quiet:
        table = Table(title=f"gate score · {scorecard.name} {scorecard.version}", title_justify="left")
        for col in ("suite", "category", "scorer", "key", "candidate", "baseline"):
            table.add_column(col, no_wrap=True)
        for row in summary_rows(data["summary"]):
            table.add_row(*row)
        console.print(table)
    for r in outcome.runs:
        console.print(f"{r.spec.role}: run {r.run_id} · {len(r.samples)} items, {r.cached} cached · "
                      f"{r.seconds:.1f}s", markup=False)
    console.print(f"reports: {out}/scores.md, {out}/scores.json · record: {db_path(db)}", markup=False)
    if scorecard.gates:  # the release decision is the last step (issue 7): PROMOTE 0 / BLOCK 100, or the target check
        from gate.commands.decide import decide_after_score

        return decide_after_score(scorecard, {r.spec.role: r.run_id for r in outcome.runs}, out=out, db=db,
                                  quiet=quiet)
    return int(ExitCode.PASS)
