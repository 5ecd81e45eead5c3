"""`gate score`'s core: ask each model every suite item through a cached engine, score, record, summarise.

Candidate and baseline get byte-identical requests (`Scorecard.request_for`), so any difference in the scores is the
models'. Answers go through `CachedEngine` keyed on everything that can change them, which is what makes a failed or
interrupted run cheap to resume: the rerun re-asks only what is missing. A run with any request that still failed
after the client's retries is `incomplete`: it is recorded (for diagnosis) but never summarised into a verdict.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gate.score.scorecard import Scorecard
from gate.score.types import Item, Score
from gate.serve.engine import Engine, EngineIdentity, canonical_json, request_to_dict
from gate.serve.types import Response

ROLES = ("candidate", "baseline")
EXAMPLES_PER_SCORER = 5  # failing items quoted (redacted) per suite and scorer in scores.md


@dataclass(frozen=True)
class ModelSpec:
    """One side of the comparison: what to serve. For the url engine `model` is the served model name."""

    role: str
    model: str
    adapter: str | None = None


@dataclass
class ModelRun:
    """One model's pass over the scorecard, as recorded."""

    run_id: str
    spec: ModelSpec
    identity: EngineIdentity
    started_at: datetime
    finished_at: datetime | None = None
    status: str = "incomplete"
    seconds: float = 0.0
    generate_seconds: float = 0.0  # time inside engine.generate (cache lookups included), without engine start
    samples: list[dict[str, Any]] = field(default_factory=list)
    scores: list[dict[str, Any]] = field(default_factory=list)

    @property
    def errors(self) -> int:
        return sum(1 for s in self.samples if s["error"])

    @property
    def cached(self) -> int:
        return sum(1 for s in self.samples if s["cached"])


@dataclass
class ScoreOutcome:
    """Everything one `gate score` produced: the runs (candidate first) and the scorecard they answered."""

    comparison_id: str
    scorecard: Scorecard
    runs: list[ModelRun]

    @property
    def complete(self) -> bool:
        return all(r.status == "complete" for r in self.runs)


EngineFactory = Callable[[ModelSpec], Engine]


def build_engine(kind: str, spec: ModelSpec, *, base_url: str | None = None,
                 tool_parser: str | None = None, reasoning_parser: str | None = None) -> Engine:
    """The engine for one side; imports only the engine asked for (torch is heavy, vLLM runs out of process)."""
    from gate.errors import GateError

    if kind == "embedded":
        from gate.serve.embedded import EmbeddedEngine

        return EmbeddedEngine(spec.model, adapter=spec.adapter)
    if kind == "url":
        if not base_url:
            raise GateError("--engine url needs --base-url")
        if spec.adapter:
            raise GateError("--adapter does not apply to --engine url (name the served adapter as the model)")
        from gate.serve.url import URLEngine

        return URLEngine(base_url, spec.model)
    if kind == "vllm":
        from gate.serve.vllm import VLLMEngine

        # the server parses tool calls and reasoning only when told which format the model writes
        return VLLMEngine(spec.model, adapter=spec.adapter, tool_call_parser=tool_parser,
                          reasoning_parser=reasoning_parser)
    raise GateError(f"unknown engine '{kind}' (embedded, url or vllm)")


def prompt_hash(req: Any) -> str:
    """Digest of the full request: equal hashes mean both models were asked exactly the same thing."""
    return hashlib.sha256(canonical_json(request_to_dict(req)).encode()).hexdigest()


def _score_one(scorer: Any, item: Item, resp: Response) -> Score:
    """A scorer bug on one answer must not lose the run: it becomes that item's evidence (all keys absent)."""
    try:
        return scorer.score(item, resp)
    except Exception as exc:
        return Score({}, None, f"scorer error: {type(exc).__name__}: {exc}", {"error": "scorer_error"})


def run_model(scorecard: Scorecard, spec: ModelSpec, engine: Engine, *, comparison_id: str, epoch: int = 0,
              limit: int | None = None, db: str | None = None, options: dict[str, Any] | None = None) -> ModelRun:
    """Answers and scores every (limited) suite item with an already wrapped engine; records the run."""
    from gate import __version__
    from gate.store.scores import begin_score_run, finish_score_run

    scorers = scorecard.build_scorers()
    t0 = time.perf_counter()
    with engine:
        ident = engine.identity
        run = ModelRun(run_id=uuid.uuid4().hex, spec=spec, identity=ident, started_at=datetime.now(UTC))
        begin_score_run({
            "run_id": run.run_id, "comparison_id": comparison_id, "role": spec.role, "scorecard": scorecard.name,
            "scorecard_version": scorecard.version, "scorecard_sha256": scorecard.sha256,
            "suite_hashes": scorecard.suite_hashes, "model": spec.model, "adapter": spec.adapter,
            "identity_fp": ident.fingerprint(), "engine": ident.engine, "engine_identity": ident.to_dict(),
            "decoding": scorecard.decoding, "epoch": epoch, "started_at": run.started_at, "status": "incomplete",
            "gate_version": __version__, "options": options or {}}, db)
        for suite in scorecard.suites:
            items = list(suite.items[:limit] if limit else suite.items)
            reqs = [scorecard.request_for(it) for it in items]
            tg = time.perf_counter()
            resps = engine.generate(reqs)
            run.generate_seconds += time.perf_counter() - tg
            specs = scorecard.scorers_for(suite.name)
            for it, req, resp in zip(items, reqs, resps, strict=True):
                run.samples.append({
                    "run_id": run.run_id, "suite": suite.name, "item_id": it.id, "category": it.category,
                    "prompt_hash": prompt_hash(req), "output": resp.text,
                    "tool_calls": json.dumps([{"name": t.name, "arguments": t.arguments} for t in resp.tool_calls]),
                    "error": resp.error, "finish_reason": resp.finish_reason, "latency_s": resp.latency_s,
                    "prompt_tokens": resp.prompt_tokens, "completion_tokens": resp.completion_tokens,
                    "cached": resp.cached})
                for sp in specs:
                    sc = _score_one(scorers[sp.name], it, resp)
                    for key, value in sc.value.items():
                        run.scores.append({"run_id": run.run_id, "suite": suite.name, "item_id": it.id,
                                           "category": it.category, "scorer": sp.name, "key": key,
                                           "value": float(value), "explanation": sc.explanation})
                    if not sc.value:  # keep the evidence of a scorer that could not score
                        run.scores.append({"run_id": run.run_id, "suite": suite.name, "item_id": it.id,
                                           "category": it.category, "scorer": sp.name, "key": "error",
                                           "value": None, "explanation": sc.explanation})
    run.seconds = time.perf_counter() - t0
    run.finished_at = datetime.now(UTC)
    run.status = "complete" if run.errors == 0 else "incomplete"
    finish_score_run(run.run_id, status=run.status, finished_at=run.finished_at, items=len(run.samples),
                     errors=run.errors, cached=run.cached, samples=run.samples,
                     scores=[{k: v for k, v in s.items() if k != "category"} for s in run.scores], path=db)
    return run


def run_score(scorecard: Scorecard, models: list[ModelSpec], factory: EngineFactory, *, cache_path: str,
              epoch: int = 0, limit: int | None = None, db: str | None = None,
              options: dict[str, Any] | None = None) -> ScoreOutcome:
    """Runs every model in turn (one engine up at a time: two models rarely fit side by side) through the cache."""
    from gate.serve.cache import CachedEngine, ResponseCache

    cache = ResponseCache(cache_path)
    outcome = ScoreOutcome(comparison_id=uuid.uuid4().hex, scorecard=scorecard, runs=[])
    for spec in models:
        engine = CachedEngine(factory(spec), cache, epoch=epoch, bypass=scorecard.kind == "operations")
        outcome.runs.append(run_model(scorecard, spec, engine, comparison_id=outcome.comparison_id, epoch=epoch,
                                      limit=limit, db=db, options=options))
    return outcome


def summarize(outcome: ScoreOutcome) -> dict[str, Any]:
    """suite -> category ('all' first) -> scorer -> key -> role -> {mean, n}; the shape scores.json carries."""
    acc: dict[tuple[str, str, str, str, str], list[float]] = defaultdict(list)
    for run in outcome.runs:
        for s in run.scores:
            if s["value"] is None:
                continue
            for cat in ("all", s["category"]):
                acc[(s["suite"], cat, s["scorer"], s["key"], run.spec.role)].append(s["value"])
    out: dict[str, Any] = {}
    for (suite, cat, scorer, key, role), vals in sorted(acc.items(), key=lambda kv: (kv[0][0], kv[0][1] != "all",
                                                                                      kv[0][1:])):
        node = out.setdefault(suite, {}).setdefault(cat, {}).setdefault(scorer, {}).setdefault(key, {})
        node[role] = {"mean": sum(vals) / len(vals), "n": len(vals)}
    return out


def _examples(outcome: ScoreOutcome) -> list[dict[str, Any]]:
    """A few failing items per suite, scorer and role, with masked explanations (reports never carry raw text)."""
    from gate.report.redact import snippet
    from gate.score.scorers import scorer_class

    primary = {sp.name: scorer_class(sp.type).primary for sp in outcome.scorecard.scorers}
    out: list[dict[str, Any]] = []
    for run in outcome.runs:
        seen: dict[tuple[str, str], int] = defaultdict(int)
        for s in run.scores:
            if s["key"] != primary.get(s["scorer"]) or s["value"] is None or s["value"] >= 1.0:
                continue
            k = (s["suite"], s["scorer"])
            if seen[k] >= EXAMPLES_PER_SCORER:
                continue
            seen[k] += 1
            out.append({"role": run.spec.role, "suite": s["suite"], "scorer": s["scorer"], "item_id": s["item_id"],
                        "explanation": snippet(s["explanation"] or "", 100)})
    return out


def report_json(outcome: ScoreOutcome) -> dict[str, Any]:
    sc = outcome.scorecard
    return {
        "comparison_id": outcome.comparison_id,
        "scorecard": {"name": sc.name, "version": sc.version, "sha256": sc.sha256, "suite_hashes": sc.suite_hashes,
                      "decoding": sc.decoding},
        "runs": {r.spec.role: {"run_id": r.run_id, "model": r.spec.model, "adapter": r.spec.adapter,
                               "identity_fp": r.identity.fingerprint(), "engine": r.identity.engine,
                               "status": r.status, "items": len(r.samples), "errors": r.errors, "cached": r.cached,
                               "seconds": round(r.seconds, 3)} for r in outcome.runs},
        "summary": summarize(outcome),
        "examples": _examples(outcome),
    }


def _fmt(cell: dict[str, Any] | None) -> str:
    return "–" if not cell else f"{cell['mean']:.3f} (n={cell['n']})"


def summary_rows(summary: dict[str, Any]) -> list[tuple[str, str, str, str, str, str]]:
    """(suite, category, scorer, key, candidate, baseline) rows for the markdown and terminal tables."""
    rows = []
    for suite, cats in summary.items():
        for cat, scorers in cats.items():
            for scorer, keys in scorers.items():
                for key, roles in keys.items():
                    rows.append((suite, cat, scorer, key, _fmt(roles.get("candidate")), _fmt(roles.get("baseline"))))
    return rows


def report_md(data: dict[str, Any]) -> str:
    lines = [f"# gate score · {data['scorecard']['name']} {data['scorecard']['version']}", "",
             f"scorecard sha256 `{data['scorecard']['sha256'][:16]}`", ""]
    for role, r in data["runs"].items():
        adapter = f" + {r['adapter']}" if r["adapter"] else ""
        lines.append(f"- **{role}**: `{r['model']}{adapter}` via {r['engine']} · run `{r['run_id']}` · "
                     f"{r['items']} items, {r['cached']} cached, {r['errors']} errors · {r['status']}")
    lines += ["", "| suite | category | scorer | key | candidate | baseline |", "|---|---|---|---|---|---|"]
    lines += [f"| {' | '.join(row)} |" for row in summary_rows(data["summary"])]
    if data["examples"]:
        lines += ["", "## Failing items (explanations redacted)", "", "| model | suite | scorer | item | why |",
                  "|---|---|---|---|---|"]
        lines += [f"| {e['role']} | {e['suite']} | {e['scorer']} | {e['item_id']} | "
                  f"{e['explanation'].replace('|', '/')} |" for e in data["examples"]]
    return "\n".join(lines) + "\n"


def write_reports(outcome: ScoreOutcome, out_dir: str | Path) -> dict[str, Any]:
    """scores.json and scores.md, appearing together or not at all."""
    from gate.io.atomic import atomic_dir

    data = report_json(outcome)
    with atomic_dir(out_dir) as tmp:
        (tmp / "scores.json").write_text(json.dumps(data, indent=2, sort_keys=False) + "\n", encoding="utf-8")
        (tmp / "scores.md").write_text(report_md(data), encoding="utf-8")
    return data
