"""The `gate score` use case: run candidate (and baseline) over a scorecard, record, write the reports, then decide
on the scorecard's gates.

Why in the core and not in gate/commands: the CLI and the service's job worker both run it, and nothing may print
from a service thread (the service once ran the command, whose rich tables went to the service's terminal). It
returns a `Scored`; the command prints it (gate.commands.score), the service keeps its exit code in the job.
Two steps, `prepare_score` (load and validate: bad input fails here, before anything starts or is recorded) and
`run_prepared`, so the command can say its warnings before the progress bars take the terminal.

The response cache lives in the same DuckDB file as the record: one file to keep, move or archive with the runs it
explains, and resuming needs nothing but the same `--db`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gate.errors import ExitCode, GateError, InputError


@dataclass
class ScorePlan:
    """A validated `gate score` request: the scorecard loaded, the models named, the engine options."""

    scorecard: Any  # gate.score.scorecard.Scorecard
    models: list[Any]  # gate.score.run.ModelSpec, candidate first
    engine: str
    base_url: str | None
    db: str | None
    out: str
    epoch: int
    limit: int | None
    options: dict[str, Any]
    warnings: list[str] = field(default_factory=list)


@dataclass
class Scored:
    """What one `gate score` produced: the runs, the report data (None when incomplete) and the decision."""

    plan: ScorePlan
    outcome: Any  # gate.score.run.ScoreOutcome
    data: dict[str, Any] | None
    decided: Any = None  # gate.decide.usecase.Decided, when the scorecard has gates

    @property
    def complete(self) -> bool:
        return bool(self.outcome.complete)

    @property
    def exit_code(self) -> int:
        """0 PROMOTE (or the baseline-only target check passed, or no gates), 100 BLOCK, 1 incomplete."""
        if not self.complete:
            return int(ExitCode.ERROR)
        return self.decided.exit_code if self.decided is not None else int(ExitCode.PASS)

    def incomplete_runs(self) -> list[str]:
        """'candidate 3 of 120' for each run that did not complete."""
        return [f"{r.spec.role} {r.errors} of {len(r.samples)}" for r in self.outcome.runs if r.status != "complete"]


def prepare_score(*, candidate: str, scorecard_path: str, baseline: str | None, engine: str, adapter: str | None,
                  base_url: str | None, db: str | None, out: str, epoch: int, limit: int | None,
                  tool_parser: str | None = None, reasoning_parser: str | None = None,
                  baseline_adapter: str | None = None, chat_template: str | None = None,
                  model_hash: str | None = None, baseline_model_hash: str | None = None, concurrency: int = 8,
                  strict: bool = False) -> ScorePlan:
    """Loads the scorecard and checks the request; raises on bad input, starts nothing."""
    from gate.score.run import ModelSpec
    from gate.score.scorecard import load_scorecard

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
    warnings = []
    if engine == "url" and not all(m.model_hash for m in models):
        # the key still separates URL and model name, but a redeployed model under the same name would match
        warnings.append("--engine url without --model-hash (and --baseline-model-hash): cached answers are tied to "
                        "the URL and model name only")
    options = {"engine": engine, "base_url": base_url, "limit": limit, "epoch": epoch, "tool_parser": tool_parser,
               "reasoning_parser": reasoning_parser, "baseline_adapter": baseline_adapter,
               "chat_template": chat_template, "model_hash": model_hash, "baseline_model_hash": baseline_model_hash,
               "concurrency": concurrency}
    return ScorePlan(scorecard, models, engine, base_url, db, out, epoch, limit, options, warnings)


def run_prepared(plan: ScorePlan, *, progress: Any = None) -> Scored:
    """Runs the models through the cache, writes scores.md/json and, when the scorecard has gates, decides
    (gate.decide.usecase). `progress`: a gate.score.run.ProgressFactory, or None (the service, CI)."""
    from gate.score.run import build_engine, run_score, write_reports
    from gate.store.db import db_path

    o = plan.options
    stream = plan.scorecard.kind == "operations"  # time to first token needs a streamed answer

    def factory(spec: Any) -> Any:
        return build_engine(plan.engine, spec, base_url=plan.base_url, tool_parser=o["tool_parser"],
                            reasoning_parser=o["reasoning_parser"], chat_template=o["chat_template"], stream=stream,
                            concurrency=o["concurrency"])

    outcome = run_score(plan.scorecard, plan.models, factory, cache_path=db_path(plan.db), epoch=plan.epoch,
                        limit=plan.limit, db=plan.db, options=o, progress=progress)
    if not outcome.complete:
        return Scored(plan, outcome, None)
    scored = Scored(plan, outcome, write_reports(outcome, plan.out))
    if plan.scorecard.gates:  # the release decision is the last step: PROMOTE 0 / BLOCK 100, or the target
        from gate.decide.usecase import decide_after_score

        # an adapter scored alone (--adapter, or a name the server lists as a LoRA module of a base model) is a
        # trained candidate, not the baseline before training: no baseline-first pass for it
        lone = outcome.runs[0] if len(outcome.runs) == 1 else None
        alone = lone is not None and bool(lone.spec.adapter or lone.identity.adapter_hash)
        scored.decided = decide_after_score(plan.scorecard, {r.spec.role: r.run_id for r in outcome.runs},
                                            out=plan.out, db=plan.db, candidate_alone=alone)
    return scored


def prepare_request(req: Any, *, db: str | None = None, out: str | None = None) -> ScorePlan:
    """`prepare_score` for the one request object (gate.requests.ScoreRequest) every face builds; `db` and `out`
    replace the request's where the caller decides them (the service: its record, the job's report folder)."""
    return prepare_score(candidate=req.candidate, scorecard_path=req.scorecard, baseline=req.baseline,
                         engine=req.engine, adapter=req.adapter, base_url=req.base_url,
                         db=db if db is not None else req.db, out=out if out is not None else req.out,
                         epoch=req.epoch, limit=req.limit, tool_parser=req.tool_parser,
                         reasoning_parser=req.reasoning_parser, baseline_adapter=req.baseline_adapter,
                         chat_template=req.chat_template, model_hash=req.model_hash,
                         baseline_model_hash=req.baseline_model_hash, concurrency=req.concurrency,
                         strict=req.strict)


def score_request(req: Any, *, db: str | None = None, out: str | None = None, progress: Any = None) -> Scored:
    """`prepare_request` then `run_prepared`: the whole use case, for callers that show nothing while it runs."""
    return run_prepared(prepare_request(req, db=db, out=out), progress=progress)
