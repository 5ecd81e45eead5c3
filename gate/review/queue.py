"""The hard-case queue: which training rows a reviewer should read first, and why.

Three sources, in this order in the queue:

1. `model_disagrees`: rows where the model (the baseline, or a trained candidate) answers otherwise than the row's
   gold answer, compared the way `conflicting_answers` compares two answers (tool calls after the tool scorer's
   normalisation, structured fields, free-text facts and words). Ranked by how confidently the model disagrees:
   the engine's log-likelihood of its own answer minus that of the gold answer, both as continuations of the same
   prompt (lm-eval's recipe). A positive margin means the model finds its answer likelier than the label, the
   confident-learning signal that the label may be wrong. Where the engine gives no log-likelihoods (tool-call
   answers, servers without the extensions) the margin is unknown and those rows follow the ranked ones.
   A classification dataset (at most MAX_LABELS distinct plain-text gold answers, each given at least twice) is not
   generated at all: the model's answer is the label it finds likeliest, so a small model that does not follow the
   answer format still ranks the labels (as cleanlab reads a classifier's probabilities).
2. every `conflicting_answers` pair: one prompt, two answers;
3. rows other checks flag at warning level (a near copy, a template pattern): worth a look, not a failure.

Why a queue and not a drop: which answer is right is a reviewer's call, recorded as a correction with its reason
(`gate apply`). Every text in a case is masked like every snippet (gate.pii.redact.value_snippet), so the page, the
JSONL and the record never hold a raw name, e-mail or secret."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, replace
from typing import Any

SNIPPET = 160
DEFAULT_MAX_TOKENS = 256
MAX_LABELS = 20  # at most this many distinct gold answers (each given twice) make a classification dataset


@dataclass(frozen=True)
class Case:
    """One entry of the queue. `margin` is log P(model answer) - log P(gold) under the model (None: not measured)."""

    rank: int
    reason: str
    split: str
    row: int | None
    row_id: str | None
    detail: str
    prompt: str | None = None
    gold: str | None = None
    answer: str | None = None
    margin: float | None = None
    partner_row: int | None = None
    partner_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Review:
    """The queue and what it was built from (hashes and names, so a page or record says what it reviewed)."""

    dataset: str
    contract: str
    contract_sha256: str
    model: str | None
    engine: str | None
    cases: list[Case] = field(default_factory=list)
    rows_asked: int = 0
    rows_agreeing: int = 0
    engine_errors: list[str] = field(default_factory=list)
    by_reason: dict[str, int] = field(default_factory=dict)


def masked(text: Any) -> str | None:
    """A text as every face of the queue may show it (one line, masked)."""
    from gate.pii.redact import value_snippet

    if text is None:
        return None
    s = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False, sort_keys=True)
    return value_snippet(s, SNIPPET) if s.strip() else ""


def split_turns(row: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]] | None:
    """(the messages before the row's last assistant turn, that turn): the prompt the model is asked and the gold
    answer it is compared with; None for a row without an assistant turn."""
    msgs = row.get("messages")
    if not isinstance(msgs, list):
        return None
    last = next((i for i in range(len(msgs) - 1, -1, -1)
                 if isinstance(msgs[i], dict) and msgs[i].get("role") == "assistant"), None)
    if last is None or last == 0:
        return None
    return [dict(m) for m in msgs[:last] if isinstance(m, dict)], dict(msgs[last])


def _answer_text(turn: dict[str, Any]) -> str:
    """What a reviewer reads as an answer: its text, or its calls as `name(args)`."""
    calls = turn.get("tool_calls") or []
    if calls:
        parts = []
        for c in calls:
            fn = (c or {}).get("function") or {}
            args = fn.get("arguments")
            shown = args if isinstance(args, str) else json.dumps(args, sort_keys=True)
            parts.append(f"{fn.get('name', '')}({shown})")
        return "; ".join(parts)
    content = turn.get("content")
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False) if content else ""


def _response_turn(resp: Any) -> dict[str, Any]:
    """The engine's answer as an assistant turn (the shape `answer_of` reads)."""
    calls = [{"type": "function", "function": {"name": c.name, "arguments": c.arguments}}
             for c in (resp.tool_calls or ())]
    return {"role": "assistant", "content": resp.text or "", **({"tool_calls": calls} if calls else {})}


def _training_rows(dataset: str, contract: Any, limit: int | None) -> Iterator[tuple[str, int, dict[str, Any]]]:
    """(split, line, row) of the training splits, in file order, at most `limit` rows."""
    from gate.io.rows import iter_dataset

    n = 0
    for split, line, row, _ in iter_dataset(dataset, lambda s: contract.split_kind(s) == "train"):
        if limit is not None and n >= limit:
            return
        n += 1
        yield split, line, row


def model_cases(dataset: str, contract: Any, engine: Any, *, scorecard: Any = None, limit: int | None = None,
                batch: int = 16, progress: Callable[[int, int], None] | None = None,
                max_tokens: int = DEFAULT_MAX_TOKENS) -> tuple[list[Case], int, int, list[str]]:
    """The rows the model answers otherwise than their gold answer, ranked; returns (cases, rows asked, agreeing,
    the rows the engine could not answer as `split:line: error`).

    The request is the row's own prompt (and tools) under the scorecard's system wrapper and decoding when one is
    given, else greedy decoding; answers are compared with `conflicting_answers.differences` under the contract's
    options for that check."""
    from gate.data.checks.conflicting_answers import answer_of, differences
    from gate.engines.types import Request

    opts = contract.options("conflicting_answers")
    arg_mode = str(opts.get("argument_normalization", "bfcl"))
    threshold = float(opts.get("answer_threshold", 0.5))
    structured = contract.output_format == "json"
    todo: list[tuple[str, int, dict[str, Any], Any, dict[str, Any]]] = []
    for split, line, row in _training_rows(dataset, contract, limit):
        turns = split_turns(row)
        if turns is None:
            continue
        prompt, gold = turns
        tools = tuple(row["tools"]) if isinstance(row.get("tools"), list) and row["tools"] else None
        if scorecard is not None:
            from gate.score.types import Item

            req = scorecard.request_for(Item(id=str(row.get("id", line)), category="", messages=tuple(prompt),
                                             expected=None))
            if tools and not req.tools:
                req = replace(req, tools=tools)
        else:
            req = Request(messages=tuple(prompt), tools=tools, temperature=0.0, max_tokens=max_tokens, seed=0)
        todo.append((split, line, row, req, gold))
    labels = label_set(todo, structured)
    if labels is not None:
        ranked = label_cases(engine, todo, labels, progress)
        if ranked is not None:
            cases, agreeing = ranked
            return cases, len(todo), agreeing, []
    found: list[tuple[Case, str | None]] = []
    agreeing = 0
    done = 0
    errors: list[str] = []
    for start in range(0, len(todo), batch):
        part = todo[start:start + batch]
        responses = engine.generate([t[3] for t in part])
        for (split, line, row, req, gold), resp in zip(part, responses, strict=True):
            if resp.error:  # counted and shown, never read as agreement
                errors.append(f"{split}:{line}: {resp.error}")
                continue
            mine = _response_turn(resp)
            rule, diffs = differences(answer_of({"messages": [gold]}, structured),
                                      answer_of({"messages": [mine]}, structured), arg_mode, threshold)
            if not diffs:
                agreeing += 1
                continue
            what = ", ".join(d.path for d in diffs[:5]) + (f" (+{len(diffs) - 5})" if len(diffs) > 5 else "")
            rid = row.get("id")
            text_answer = None if mine.get("tool_calls") or gold.get("tool_calls") else (resp.text or "")
            found.append((Case(0, "model_disagrees", split, line, str(rid) if rid is not None else None,
                               f"{rule.split('.')[-1]} differs: {what}", masked(_prompt_of(req.messages)),
                               masked(_answer_text(gold)), masked(_answer_text(mine))), text_answer))
        done += len(part)
        if progress:
            progress(done, len(todo))
    margins = _margins(engine, todo, found)
    cases = [replace(c, margin=m) for (c, _), m in zip(found, margins, strict=True)]
    cases.sort(key=lambda c: (c.margin is None, -(c.margin or 0.0), c.split, c.row or 0))
    return cases, len(todo), agreeing, errors


def label_set(todo: list[Any], structured: bool, max_labels: int = MAX_LABELS) -> list[str] | None:
    """The answers of a classification dataset: the distinct gold texts when the rows give at most `max_labels` of
    them, each at least twice, as plain text without tool calls; None for any other dataset (generation decides)."""
    if structured or len(todo) < 2 * 2:
        return None
    counts: dict[str, int] = {}
    for *_, gold in todo:
        text = gold.get("content")
        if gold.get("tool_calls") or not isinstance(text, str) or not text.strip():
            return None
        counts[text] = counts.get(text, 0) + 1
        if len(counts) > max_labels:
            return None
    if len(counts) < 2 or min(counts.values()) < 2:
        return None
    return sorted(counts)


def label_cases(engine: Any, todo: list[Any], labels: list[str],
                progress: Callable[[int, int], None] | None = None) -> tuple[list[Case], int] | None:
    """A finite label set: the model's answer is the label it finds likeliest as the continuation of the prompt (its
    answer constrained to the labels, as confident learning reads a classifier); a row is listed when that label is
    not its gold, ranked by log P(that label) - log P(gold). None when the engine gives no log-likelihoods."""
    cases, agreeing = [], 0
    for start in range(0, len(todo), 16):
        part = todo[start:start + 16]
        lls = engine.loglikelihood([(t[3], lab) for t in part for lab in labels])
        if not lls or any(x is None for x in lls):
            return None
        for j, (split, line, row, req, gold) in enumerate(part):
            mine = lls[j * len(labels):(j + 1) * len(labels)]
            best = max(range(len(labels)), key=lambda i: mine[i])
            g = labels.index(gold["content"])
            if best == g:
                agreeing += 1
                continue
            rid = row.get("id")
            cases.append(Case(0, "model_disagrees", split, line, str(rid) if rid is not None else None,
                              f"label differs: the model finds another of the {len(labels)} labels likelier",
                              masked(_prompt_of(req.messages)), masked(gold["content"]), masked(labels[best]),
                              round(float(mine[best]) - float(mine[g]), 4)))
        if progress:
            progress(start + len(part), len(todo))
    cases.sort(key=lambda c: (-(c.margin or 0.0), c.split, c.row or 0))
    return cases, agreeing


def _prompt_of(messages: Any) -> str:
    from gate.score.run import prompt_text

    return prompt_text(messages)


def _margins(engine: Any, todo: list[Any], found: list[tuple[Case, str | None]]) -> list[float | None]:
    """log P(model answer) - log P(gold answer) per found case whose both answers are text; None elsewhere."""
    by_row = {(t[0], t[1]): t for t in todo}
    pairs, where = [], []
    for i, (case, text_answer) in enumerate(found):
        _, _, _, req, gold = by_row[(case.split, case.row)]
        gold_text = gold.get("content") if isinstance(gold.get("content"), str) else None
        if text_answer and gold_text:
            pairs += [(req, text_answer), (req, gold_text)]
            where.append(i)
    out: list[float | None] = [None] * len(found)
    if not pairs:
        return out
    lls = engine.loglikelihood(pairs) or [None] * len(pairs)
    for k, i in enumerate(where):
        mine, gold = lls[2 * k], lls[2 * k + 1]
        if mine is not None and gold is not None:
            out[i] = round(float(mine) - float(gold), 4)
    return out


def check_cases(run: Any) -> list[Case]:
    """Every `conflicting_answers` pair, then every warning-level finding of the other checks."""
    conflicts, warnings = [], []
    for res in run.results:
        for f in res.findings:
            if res.name == "conflicting_answers":
                conflicts.append(Case(0, "conflicting_answers", f.split, f.row, f.row_id, f.message,
                                      prompt=f.snippet, partner_row=f.partner_row, partner_id=f.partner_id))
            elif f.severity == "warning" and f.row is not None:
                warnings.append(Case(0, f"{res.name}: {f.rule}", f.split, f.row, f.row_id, f.message,
                                     prompt=f.snippet, partner_row=f.partner_row, partner_id=f.partner_id))
    return conflicts + warnings


def build_review(req: Any, *, progress: bool | None = None) -> Review:
    """The queue for one `ReviewRequest`: checks first (cheap, they read the data once), then the model's answers."""
    from gate.contract import load_contract
    from gate.data.runner import run_checks, show_progress

    contract = load_contract(req.contract)
    review = Review(req.dataset, req.contract, contract.sha256, req.model, req.engine if req.model else None)
    run = run_checks(req.dataset, contract, checks=list(req.checks) if req.checks else None,
                     progress=progress, workers=1)
    cases = check_cases(run)
    if req.model:
        from gate.score.run import ModelSpec, build_engine

        scorecard = None
        if req.scorecard:
            from gate.score.scorecard import load_scorecard

            scorecard = load_scorecard(req.scorecard, load_suites=False)
        engine = build_engine(req.engine, ModelSpec(role="candidate", model=req.model), base_url=req.base_url)
        bar, close = _bar(progress if progress is not None else show_progress())
        try:
            engine.start()
            mcases, review.rows_asked, review.rows_agreeing, review.engine_errors = model_cases(
                req.dataset, contract, engine, scorecard=scorecard, limit=req.limit, progress=bar)
        finally:
            close()
            engine.stop()
        cases = mcases[:req.top] + cases
    review.cases = [replace(c, rank=i + 1) for i, c in enumerate(cases)]
    for c in review.cases:
        review.by_reason[c.reason] = review.by_reason.get(c.reason, 0) + 1
    return review


def _bar(enabled: bool) -> tuple[Callable[[int, int], None] | None, Callable[[], None]]:
    """A progress bar over the rows the model answers, on a terminal only (quiet in CI and in pipes)."""
    if not enabled:
        return None, lambda: None
    from rich.progress import Progress

    p = Progress(transient=True)
    task = p.add_task("model answers", total=None)
    p.start()

    def update(done: int, total: int) -> None:
        p.update(task, completed=done, total=total)

    return update, p.stop
