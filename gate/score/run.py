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
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gate.engines.engine import Engine, EngineIdentity, canonical_json, request_to_dict
from gate.engines.types import Response
from gate.score.scorecard import Scorecard
from gate.score.types import Item, Score

ROLES = ("candidate", "baseline")
EXAMPLES_PER_SCORER = 5  # failing items quoted (redacted) per suite and scorer in scores.md
PROMPT_CHARS = 500  # the masked prompt kept per sample: enough to recognise the item, never a transcript


@dataclass(frozen=True)
class ModelSpec:
    """One side of the comparison: what to serve. For the url engine `model` is the served model name."""

    role: str
    model: str
    adapter: str | None = None
    model_hash: str | None = None  # url engine: the pinned checkpoint hash (the weights behind a URL are unreadable)


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
    resources: list[dict[str, Any]] = field(default_factory=list)  # run-level measurements (peak memory per suite)
    metrics: list[dict[str, Any]] = field(default_factory=list)  # gate.score.metrics.aggregate of the above

    @property
    def errors(self) -> int:
        return sum(1 for s in self.samples if s["error"])

    @property
    def scorer_errors(self) -> int:
        """Scores a scorer could not give (an exception on one answer): counted apart from engine errors, shown with
        the run, and a decision on a run with any is never PROMOTE (gate.decide.decision)."""
        return sum(1 for s in self.scores if s["key"] == "error")

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
# (role, suite, answers expected) -> advance(n): one progress bar per model and suite, fed as answers come back
# (cache hits at once, then each batch or request); None shows nothing (CI, the service, tests)
ProgressFactory = Callable[[str, str, int], Callable[[int], None]]


def build_engine(kind: str, spec: ModelSpec, *, base_url: str | None = None,
                 tool_parser: str | None = None, reasoning_parser: str | None = None,
                 chat_template: str | None = None, stream: bool = False, concurrency: int = 8) -> Engine:
    """The engine for one side; imports only the engine asked for (torch is heavy, vLLM runs out of process).

    `stream` asks servers for server-sent events, which is how time to first token is measured (operations)."""
    from gate.errors import GateError

    if chat_template and kind == "url":
        raise GateError("--chat-template does not apply to --engine url (the server renders with its own)")
    if spec.model_hash and kind != "url":
        raise GateError("--model-hash applies to --engine url only (local weights are hashed by gate)")
    if kind == "embedded":
        from gate.engines.embedded import EmbeddedEngine

        return EmbeddedEngine(spec.model, adapter=spec.adapter, chat_template=chat_template)
    if kind == "url":
        if not base_url:
            raise GateError("--engine url needs --base-url")
        if spec.adapter:
            raise GateError("--adapter does not apply to --engine url (name the served adapter as the model)")
        from gate.engines.url import URLEngine

        return URLEngine(base_url, spec.model, model_hash=spec.model_hash, stream=stream, concurrency=concurrency)
    if kind == "vllm":
        from gate.engines.vllm import VLLMEngine

        # the server parses tool calls and reasoning only when told which format the model writes
        return VLLMEngine(spec.model, adapter=spec.adapter, tool_call_parser=tool_parser,
                          reasoning_parser=reasoning_parser, chat_template=chat_template, stream=stream,
                          concurrency=concurrency)
    if kind == "sglang":
        from gate.engines.sglang import SGLangEngine

        return SGLangEngine(spec.model, adapter=spec.adapter, tool_call_parser=tool_parser,
                            reasoning_parser=reasoning_parser, chat_template=chat_template, stream=stream,
                            concurrency=concurrency)
    raise GateError(f"unknown engine '{kind}' (embedded, url, vllm or sglang)")


def prompt_text(messages: Any) -> str:
    """What the per-item pages call "the prompt": the item's last user message (else its last message), as text.

    Why not the whole request: the system prompt and tool schemas are the scorecard's, pinned by hash on the release;
    the user message is what differs per item and what a reviewer needs beside the two answers.
    """
    msgs = list(messages or ())
    users = [m.get("content") for m in msgs if m.get("role") == "user"]
    text = users[-1] if users else (msgs[-1].get("content") if msgs else "")
    if text is None:
        return ""
    return text if isinstance(text, str) else json.dumps(text, sort_keys=True)


def prompt_masked(req: Any) -> str | None:
    """The prompt as the record may hold it: through the one free-text masker (`gate.pii.redact.value_snippet`),
    one line, at most PROMPT_CHARS, so the record and the live dashboard never hold a raw name or e-mail."""
    from gate.pii.redact import value_snippet

    text = prompt_text(req.messages)
    return value_snippet(text, PROMPT_CHARS) if text.strip() else None


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
              limit: int | None = None, db: str | None = None, options: dict[str, Any] | None = None,
              progress: ProgressFactory | None = None) -> ModelRun:
    """Answers and scores every (limited) suite item with an already wrapped engine; records the run."""
    from gate import __version__
    from gate.engines.cache import CachedEngine
    from gate.engines.engine import watch_answers
    from gate.score.metrics import aggregate
    from gate.store.metrics import record_metrics
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
        epochs = int(scorecard.decoding.get("epochs", 1))
        for suite in scorecard.suites:
            items = list(suite.items[:limit] if limit else suite.items)
            reqs = [scorecard.request_for(it) for it in items]
            specs = scorecard.scorers_for(suite.name)
            choice_lls = _choice_loglikelihoods(engine, [(sp.name, scorers[sp.name]) for sp in specs], items, reqs)
            ops = [sp.name for sp in specs if sp.type == "operations"]
            watch_answers(engine, progress(spec.role, suite.name, len(items) * epochs) if progress else None)
            for e in range(epochs):
                # each epoch asks again (its own cache key), so repeated sampling is real and resumable
                if isinstance(engine, CachedEngine):
                    engine.epoch = epoch + e
                tg = time.perf_counter()
                with _memory(engine.pid if ops else None) as mem:
                    resps = engine.generate(reqs)
                run.generate_seconds += time.perf_counter() - tg
                if mem is not None and mem.peak_bytes:
                    run.resources += [{"suite": suite.name, "scorer": name, "key": "peak_rss_mb",
                                       "value": mem.peak_mb, "epoch": epoch + e} for name in ops]
                for it, req, resp in zip(items, reqs, resps, strict=True):
                    run.samples.append({
                        "run_id": run.run_id, "suite": suite.name, "item_id": it.id, "category": it.category,
                        "prompt_hash": prompt_hash(req), "prompt_masked": prompt_masked(req), "output": resp.text,
                        "tool_calls": json.dumps([{"name": t.name, "arguments": t.arguments}
                                                  for t in resp.tool_calls]),
                        "error": resp.error, "finish_reason": resp.finish_reason, "latency_s": resp.latency_s,
                        "prompt_tokens": resp.prompt_tokens, "completion_tokens": resp.completion_tokens,
                        "cached": resp.cached, "epoch": epoch + e, "ttft_s": resp.ttft_s})
                    for sp in specs:
                        lls = choice_lls.get(sp.name, {}).get(it.id)
                        seen = replace(resp, raw={**resp.raw, "choice_logprobs": lls}) if lls else resp
                        sc = _score_one(scorers[sp.name], it, seen)
                        for key, value in sc.value.items():
                            run.scores.append({"run_id": run.run_id, "suite": suite.name, "item_id": it.id,
                                               "category": it.category, "scorer": sp.name, "key": key,
                                               "value": float(value), "explanation": sc.explanation,
                                               "epoch": epoch + e})
                        if not sc.value:  # keep the evidence of a scorer that could not score
                            run.scores.append({"run_id": run.run_id, "suite": suite.name, "item_id": it.id,
                                               "category": it.category, "scorer": sp.name, "key": "error",
                                               "value": None, "explanation": sc.explanation, "epoch": epoch + e})
        watch_answers(engine, None)
    run.seconds = time.perf_counter() - t0
    run.finished_at = datetime.now(UTC)
    run.status = "complete" if run.errors == 0 else "incomplete"
    finish_score_run(run.run_id, status=run.status, finished_at=run.finished_at, items=len(run.samples),
                     errors=run.errors, cached=run.cached, samples=run.samples,
                     scores=[{k: v for k, v in s.items() if k != "category"} for s in run.scores], path=db)
    run.metrics = aggregate(run.scores, run.resources)
    if run.status == "complete":  # an incomplete run never yields numbers anyone could mistake for a result
        record_metrics(run.run_id, run.metrics, db)
    return run


def _memory(pid: int | None) -> Any:
    """Peak-memory sampling around one suite of an operations run; nothing when the engine has no local process."""
    from contextlib import nullcontext

    if pid is None:
        return nullcontext(None)
    from gate.score.scorers.operations import ProcessMemory

    return ProcessMemory(pid)


def _choice_loglikelihoods(engine: Engine, scorers: list[tuple[str, Any]], items: list[Item],
                           reqs: list[Any]) -> dict[str, dict[str, list[float | None]]]:
    """scorer -> item id -> log-likelihood of each choice, for scorers that want them and engines that give them.

    Asked once per run (not per epoch): a log-likelihood does not depend on sampling. An engine that cannot give
    them (None) leaves the scorer to its generation fallback."""
    out: dict[str, dict[str, list[float | None]]] = {}
    for name, scorer in scorers:
        if not getattr(scorer, "wants_loglikelihood", False):
            continue
        conts = [scorer.continuations(it) for it in items]
        pairs = [(req, c) for req, cs in zip(reqs, conts, strict=True) for c in cs]
        lls = engine.loglikelihood(pairs) if pairs else None
        if lls is None:
            continue
        pos = 0
        per: dict[str, list[float | None]] = {}
        for it, cs in zip(items, conts, strict=True):
            per[it.id] = list(lls[pos:pos + len(cs)])
            pos += len(cs)
        out[name] = per
    return out


def run_score(scorecard: Scorecard, models: list[ModelSpec], factory: EngineFactory, *, cache_path: str,
              epoch: int = 0, limit: int | None = None, db: str | None = None,
              options: dict[str, Any] | None = None, progress: ProgressFactory | None = None) -> ScoreOutcome:
    """Runs every model in turn (one engine up at a time: two models rarely fit side by side) through the cache."""
    from gate.engines.cache import CachedEngine, ResponseCache

    validate_items(scorecard, limit)
    cache = ResponseCache(cache_path)
    outcome = ScoreOutcome(comparison_id=uuid.uuid4().hex, scorecard=scorecard, runs=[])
    for spec in models:
        engine = CachedEngine(factory(spec), cache, epoch=epoch, bypass=scorecard.kind == "operations")
        outcome.runs.append(run_model(scorecard, spec, engine, comparison_id=outcome.comparison_id, epoch=epoch,
                                      limit=limit, db=db, options=options, progress=progress))
    return outcome


def validate_items(scorecard: Scorecard, limit: int | None = None) -> None:
    """Scorer-specific row checks (choices, passages...) before any engine starts: a malformed row is bad input
    (one line naming file, line and field, exit 1), never a zero score discovered after an hour of generation."""
    from gate.errors import GateError

    scorers = scorecard.build_scorers()
    for suite in scorecard.suites:
        checks = [scorers[sp.name] for sp in scorecard.scorers_for(suite.name)
                  if hasattr(scorers[sp.name], "validate_item")]
        for it in (suite.items[:limit] if limit else suite.items) if checks else ():
            for sc in checks:
                try:
                    sc.validate_item(it)
                except GateError as exc:
                    raise type(exc)(exc.message, file=suite.path, line=exc.line or it.line, field=exc.field) from None


def summarize(outcome: ScoreOutcome) -> dict[str, Any]:
    """suite -> category ('all' first) -> scorer -> key -> role -> metric row (mean, n, stderr, p50/p95/p99,
    epochs; see gate.score.metrics); the shape scores.json carries."""
    from gate.score.metrics import METRIC_FIELDS, aggregate

    out: dict[str, Any] = {}
    for run in outcome.runs:
        for m in run.metrics or aggregate(run.scores, run.resources):
            node = out.setdefault(m["suite"], {}).setdefault(m["category"], {}).setdefault(m["scorer"], {})
            node.setdefault(m["key"], {})[run.spec.role] = {f: m[f] for f in METRIC_FIELDS}
    return out


def _examples(outcome: ScoreOutcome) -> list[dict[str, Any]]:
    """A few failing items per suite, scorer and role, with masked explanations (reports never carry raw text)."""
    from gate.score.scorers import scorer_class

    primary = {sp.name: scorer_class(sp.type).primary for sp in outcome.scorecard.scorers}
    keep = _tool_names(outcome.scorecard.tools)  # function names are not personal data: never masked
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
                        "explanation": _explanation(s["explanation"] or "", keep)})
    return out


def _explanation(text: str, keep: set[str], width: int = 100) -> str:
    """The report's one-line explanation: masked like any quoted value, except the declared tool names."""
    from gate.pii.redact import value_snippet as snippet
    from gate.score.scorers.tools import mask_except

    text = " ".join(text.split())[: 4 * width]
    out = mask_except(text, keep, lambda part: snippet(part, 8 * width))
    return out if len(out) <= width else out[: width - 1] + "…"


def _tool_names(tools: Any) -> set[str]:
    """The declared tool names in both spellings (`a.b` and `a_b`), as the tool scorer names them."""
    names = {str((t.get("function") or t).get("name")) for t in tools or () if isinstance(t, dict)
             and isinstance((t.get("function") or t).get("name"), str)}
    return names | {n.replace(".", "_") for n in names}


def report_json(outcome: ScoreOutcome) -> dict[str, Any]:
    sc = outcome.scorecard
    return {
        "comparison_id": outcome.comparison_id,
        "scorecard": {"name": sc.name, "version": sc.version, "sha256": sc.sha256, "suite_hashes": sc.suite_hashes,
                      "decoding": sc.decoding},
        "runs": {r.spec.role: {"run_id": r.run_id, "model": r.spec.model, "adapter": r.spec.adapter,
                               "identity_fp": r.identity.fingerprint(), "engine": r.identity.engine,
                               "status": r.status, "items": len(r.samples), "errors": r.errors,
                               "scorer_errors": r.scorer_errors, "cached": r.cached,
                               "seconds": round(r.seconds, 3)} for r in outcome.runs},
        "summary": summarize(outcome),
        "examples": _examples(outcome),
    }


def _fmt(cell: dict[str, Any] | None) -> str:
    from gate.score.metrics import cell as metric_cell

    return metric_cell(cell)


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
                     f"{r['items']} items, {r['cached']} cached, {r['errors']} errors, "
                     f"{r.get('scorer_errors', 0)} scorer errors · {r['status']}")
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
