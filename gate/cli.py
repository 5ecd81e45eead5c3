"""The `gate` command line: a thin face over the core. No logic lives here, only argument parsing and output.

Heavy modules are imported inside the commands, so `gate --help` answers at once.
"""

from __future__ import annotations

import os
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from gate import __version__
from gate.errors import ExitCode, GateError

app = typer.Typer(
    name="gate",
    help="Data-and-evaluation gatekeeper: only clean, contract-conforming, leak-free data goes in; only a "
         "checkpoint that provably beats its frozen baseline comes out.\n\n"
         "Exit codes: 0 pass, 100 gate failed, 1 the gate could not run, 2 usage error.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


class FailOn(StrEnum):
    error = "error"
    warning = "warning"
    never = "never"


def _version(value: bool) -> None:
    if value:
        typer.echo(f"gate {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                                help="Print the version and exit.")] = False) -> None:
    pass


@app.command()
def check(
    dataset: Annotated[Path, typer.Argument(help="Dataset directory (train/val/test files), single file, or "
                                                 "Hugging Face save_to_disk directory.")],
    contract: Annotated[Path, typer.Option("--contract", "-c", help="Data contract YAML.")],
    report_dir: Annotated[Path, typer.Option("--report-dir", "-o", help="Where report.md, report.json and "
                                                                        "junit.xml go.")] = Path("gate-report"),
    checks: Annotated[str | None, typer.Option("--checks", help="Comma-separated subset of checks to run.")] = None,
    db: Annotated[str | None, typer.Option("--db", help="DuckDB file for the record [env GATE_DB; default "
                                                        "./gate.duckdb].")] = None,
    no_db: Annotated[bool, typer.Option("--no-db", help="Do not record the run.")] = False,
    workers: Annotated[int | None, typer.Option("--workers", "-j", min=1, help="Worker processes "
                                                                               "[default: all cores].")] = None,
    fail_on: Annotated[FailOn, typer.Option("--fail-on", help="Which check status fails the gate.")] = FailOn.error,
    max_examples: Annotated[int, typer.Option("--max-examples", min=0, help="Findings shown per check in "
                                                                           "report.md.")] = 10,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Only the verdict line.")] = False,
    tokenizer: Annotated[Path | None, typer.Option("--tokenizer", help="Tokenizer directory (with its chat "
                                                                       "template); overrides the contract's "
                                                                       "`tokenizer:` and turns on the template "
                                                                       "audit and token lengths.")] = None,
) -> None:
    """Check a dataset against its data contract; exit 0 pass, 100 fail, 1 could not run."""
    from gate.commands.check import run_check_command

    code = run_check_command(dataset=str(dataset), contract_path=str(contract), report_dir=str(report_dir),
                             checks=[c.strip() for c in checks.split(",") if c.strip()] if checks else None,
                             db=None if no_db else db, record=not no_db, workers=workers, fail_on=fail_on.value,
                             max_examples=max_examples, quiet=quiet,
                             tokenizer=str(tokenizer) if tokenizer else None)
    raise typer.Exit(code)


@app.command()
def split(
    dataset: Annotated[Path, typer.Argument(help="Dataset to split (all its rows are reassigned).")],
    contract: Annotated[Path, typer.Option("--contract", "-c", help="Data contract YAML (its group_key).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output directory (written atomically).")],
    ratios: Annotated[str, typer.Option("--ratios", help="Target shares, in the order of --names.")] = "0.8,0.1,0.1",
    names: Annotated[str, typer.Option("--names", help="Split names.")] = "train,val,test",
    salt: Annotated[str, typer.Option("--salt", help="Changes every assignment at once.")] = "gate-split-v1",
    drop_ungrouped: Annotated[bool, typer.Option("--drop-ungrouped", help="Leave out rows without a group key "
                                                                          "instead of failing.")] = False,
) -> None:
    """Assign whole groups (customer, repo, document, time window) to train/val/test by a stable hash."""
    from gate.commands.split import run_split_command

    try:
        ratio_values = [float(x) for x in ratios.split(",")]
    except ValueError:
        raise typer.BadParameter(f"not a list of numbers: {ratios}", param_hint="--ratios") from None
    raise typer.Exit(run_split_command(dataset=str(dataset), contract_path=str(contract), out=str(out),
                                       ratios=ratio_values, names=[n.strip() for n in names.split(",")], salt=salt,
                                       drop_ungrouped=drop_ungrouped))


@app.command()
def scrub(
    dataset: Annotated[Path, typer.Argument(help="Dataset to scrub (read only).")],
    contract: Annotated[Path, typer.Option("--contract", "-c", help="Data contract YAML (its scrub section).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output directory (written atomically).")],
) -> None:
    """Write a copy without personal data, secrets and duplicates, with MANIFEST.json."""
    from gate.commands.scrub import run_scrub_command

    raise typer.Exit(run_scrub_command(dataset=str(dataset), contract_path=str(contract), out=str(out)))


class ExportFormat(StrEnum):
    ms_swift = "ms-swift"
    nemo_automodel = "nemo-automodel"
    hf = "hf"


@app.command()
def export(
    dataset: Annotated[Path, typer.Argument(help="Dataset directory, single file, or save_to_disk directory.")],
    fmt: Annotated[ExportFormat, typer.Option("--format", "-f", help="The runner's data format.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output directory (written atomically, with "
                                                          "MANIFEST.json).")],
    contract: Annotated[Path | None, typer.Option("--contract", "-c", help="Data contract: its hash goes into the "
                                                                          "manifest, its tokenizer and template "
                                                                          "options into the rows.")] = None,
    tokenizer: Annotated[Path | None, typer.Option("--tokenizer", help="Tokenizer directory; overrides the "
                                                                       "contract's.")] = None,
    skip_invalid: Annotated[bool, typer.Option("--skip-invalid", help="Leave out rows the format cannot "
                                                                      "represent (listed in the manifest) "
                                                                      "instead of failing.")] = False,
) -> None:
    """Write a dataset for NeMo AutoModel, ms-swift or Hugging Face datasets, with a manifest."""
    from gate.commands.export import run_export_command

    raise typer.Exit(run_export_command(dataset=str(dataset), fmt=fmt.value, out=str(out),
                                        contract_path=str(contract) if contract else None,
                                        tokenizer=str(tokenizer) if tokenizer else None, skip_invalid=skip_invalid))


class EngineKind(StrEnum):
    embedded = "embedded"
    url = "url"
    vllm = "vllm"


@app.command()
def score(
    candidate: Annotated[str, typer.Argument(help="Candidate model directory (served model name for --engine url).")],
    scorecard: Annotated[Path, typer.Option("--scorecard", "-s", help="Scorecard YAML.")],
    baseline: Annotated[str | None, typer.Option("--baseline", help="Frozen baseline, asked the same way.")] = None,
    engine: Annotated[EngineKind, typer.Option("--engine", help="How the models are served.")] = EngineKind.embedded,
    adapter: Annotated[str | None, typer.Option("--adapter", help="LoRA adapter of the candidate.")] = None,
    base_url: Annotated[str | None, typer.Option("--base-url", help="Server for --engine url.")] = None,
    db: Annotated[str | None, typer.Option("--db", help="DuckDB file for the record and the response cache "
                                                        "[env GATE_DB; default ./gate.duckdb].")] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Where scores.json and scores.md go (atomically).")]
    = Path("gate-report/score"),
    epoch: Annotated[int, typer.Option("--epoch", min=0, help="Cache epoch: bump to ask again.")] = 0,
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="First N items of each suite.")] = None,
    tool_parser: Annotated[str | None, typer.Option("--tool-parser", help="vLLM tool-call parser (hermes, glm45, "
                                                                          "...) for scorecards with tools.")] = None,
    reasoning_parser: Annotated[str | None, typer.Option("--reasoning-parser",
                                                         help="vLLM reasoning parser (e.g. glm45).")] = None,
) -> None:
    """Score the candidate (and baseline) on a scorecard; exit 0 complete, 1 incomplete (rerun resumes)."""
    from gate.commands.score import run_score_command

    raise typer.Exit(run_score_command(candidate=candidate, scorecard_path=str(scorecard), baseline=baseline,
                                       engine=engine.value, adapter=adapter, base_url=base_url, db=db, out=str(out),
                                       epoch=epoch, limit=limit, tool_parser=tool_parser,
                                       reasoning_parser=reasoning_parser))


@app.command()
def demo(
    out: Annotated[Path, typer.Option("--out", help="Where the demo's reports go.")] = Path("gate-report/demo"),
    db: Annotated[str | None, typer.Option("--db", help="DuckDB file [env GATE_DB; default ./gate.duckdb].")] = None,
) -> None:
    """Run the whole loop on the bundled fixtures with embedded defaults (no servers, no GPU)."""
    from gate.commands.demo import run_demo

    raise typer.Exit(run_demo(str(out), db))


# ---- area: training runners (train, plan) -- issue 5 ----
# ---- end: training runners ----

# ---- area: probe -- issue 5 ----
# ---- end: probe ----

# ---- area: release decision (decide, promote, rollback, watch, release) -- issue 7 ----
# ---- end: release decision ----

# ---- area: service (serve, token) -- issue 8 ----
# ---- end: service ----

# ---- area: dashboard / report html -- issue 8 ----
# ---- end: dashboard ----

# ---- area: incremental index / ray -- issue 9 ----
# ---- end: incremental index ----

def main() -> None:
    """Entry point: maps every failure to its exit code and one line, never a traceback."""
    try:
        rc = app(standalone_mode=False)
    except GateError as exc:
        typer.echo(f"gate: error: {exc}", err=True)
        sys.exit(ExitCode.ERROR)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        typer.echo("gate: interrupted", err=True)
        sys.exit(130)
    except Exception as exc:  # click usage errors and genuine bugs
        # typer vendors click as typer._click in recent releases; look the classes up by name on the MRO
        kinds = {cls.__name__ for cls in type(exc).__mro__}
        if "UsageError" in kinds:
            exc.show()  # type: ignore[attr-defined]
            sys.exit(ExitCode.USAGE)
        if "ClickException" in kinds:
            exc.show()  # type: ignore[attr-defined]
            sys.exit(ExitCode.ERROR)
        if os.environ.get("GATE_DEBUG"):
            raise
        typer.echo(f"gate: internal error: {type(exc).__name__}: {exc} (set GATE_DEBUG=1 for a traceback)",
                   err=True)
        sys.exit(ExitCode.ERROR)
    sys.exit(rc if isinstance(rc, int) else 0)
