"""`conflicting_answers`: one prompt, two answers. Rows whose prompts (the system and user turns) are the same or
near the same but whose assistant answers disagree teach the model two behaviours for one input: label noise.

Which rows share a prompt: the near-duplicate machinery (gate.dedup: shingles, MinHash, LSH, every pair verified by
exact Jaccard) run on the prompt text alone, under `checks.near_duplicate`'s shingling and this check's
`prompt_threshold`; exact copies of the prompt score 1.0. Every pair of a prompt cluster is compared (at most
`max_cluster` members per cluster; past that, each member against the cluster's kept row). How two answers
disagree depends on what they are:

- `conflicting_answers.field`: structured answers (the contract's `output` is JSON) differ in a top-level field;
- `conflicting_answers.tool_call`: the assistant calls another function, another number of functions, or the same
  function with another argument value after the tool scorer's normalisation (gate.score.scorers.tools);
- `conflicting_answers.text`: free-text answers whose own similarity (word 2-gram Jaccard) is below
  `answer_threshold`, and, when both are prose (not code), whose content words (less stop words) are too: a
  paraphrase of the same answer keeps its words and changes its word pairs. Answers that state other numbers, or
  of which one negates, disagree however many words they share.

Templated rows are not conflicts: when the prompts differ (not a copy) and every differing answer value is
explained by the words the prompts differ in (a slot value: order ORD-1 in one prompt, ORD-2 in the other, and
the call's `order_id` follows), the pair is counted as templated and not reported. Free-text answers (code, prose)
follow their request to the symbol, so for them near prompts must be one request (`same_request`): another number,
identifier or code operator in one prompt is another question, whose other answer is no conflict; a reworded
instruction ("Write" / "Implement") is the same one. Tool calls and structured fields are decisions a slot value
cannot change unless the answer carries it (the templated rule above).
A finding sits on the later
row of a pair, cites the other (`partner_row`, `partner_id`), the prompt Jaccard (`score`) and the prompt cluster,
and names every differing field with both values, masked like every snippet. No default scrub action: which answer
is right is a reviewer's call (a correction with its reason, `gate apply`), not a drop.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gate.contract import Contract
from gate.contract.file_schema import check_options
from gate.data.base import Batch, Check, CheckResult, Finding
from gate.data.neardup import neardup_config
from gate.data.text import english_stop_words, normalize, row_text
from gate.io.digest import text_digest

PROMPT_ROLES = ("system", "user")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")  # a function name (shown unmasked, as the tool scorer does)
_TOKEN = re.compile(r"\w+(?:[-.@/]\w+)*")


@dataclass(frozen=True, slots=True)
class Answer:
    """What a row answers, small and picklable: its tool calls `(name, {arg: raw value})` over every assistant turn
    (None when it calls none), its final answer as a JSON object when the contract's output is JSON (else None),
    and the final answer's text."""

    calls: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...] | None
    fields: tuple[tuple[str, Any], ...] | None
    text: str


@dataclass(frozen=True, slots=True)
class Difference:
    """One way two answers disagree: the field path and both raw values (masked only when reported)."""

    path: str
    left: Any
    right: Any
    #: False for a difference no slot value can explain: another function, or a call only one answer makes
    slot: bool = True


def answer_of(row: dict[str, Any], structured: bool) -> Answer:
    """The answer of one row (see `Answer`); rows without messages answer nothing (empty text)."""
    msgs = row.get("messages") if isinstance(row.get("messages"), list) else []
    calls: list[tuple[str, tuple[tuple[str, Any], ...]]] = []
    final: str = ""
    for m in msgs:
        if not isinstance(m, dict) or m.get("role") != "assistant":
            continue
        for call in m.get("tool_calls") or []:
            fn = call.get("function") if isinstance(call, dict) else None
            if not isinstance(fn, dict):
                continue
            args = fn.get("arguments")
            if isinstance(args, str):
                try:
                    args = json.loads(args)
                except ValueError:
                    args = {"<arguments>": args}  # unparsable: the contract check reports it; compared as text
            if not isinstance(args, dict):
                args = {"<arguments>": args}
            calls.append((str(fn.get("name", "")), tuple(sorted(args.items()))))
        content = m.get("content")
        if isinstance(content, str):
            final = content
        elif isinstance(content, list):
            final = "\n".join(p.get("text", "") for p in content if isinstance(p, dict)
                              and isinstance(p.get("text"), str))
    fields = None
    if structured and final.strip().startswith("{"):
        try:
            obj = json.loads(final)
        except ValueError:
            obj = None
        if isinstance(obj, dict):
            fields = tuple(sorted(obj.items()))
    return Answer(tuple(calls) if calls else None, fields, final)


def _call_text(call: tuple[str, tuple[tuple[str, Any], ...]] | None) -> str:
    if call is None:
        return "no call"
    name, args = call
    return f"{name}({', '.join(f'{k}={json.dumps(v, ensure_ascii=False)}' for k, v in args)})"


def differences(a: Answer, b: Answer, arg_mode: str, answer_threshold: float) -> tuple[str, list[Difference]]:
    """(rule, how `a` and `b` disagree); no differences when they agree. Tool calls decide when either row calls a
    tool (the final text then depends on tool results, which are not the prompt); else structured fields when both
    answers are JSON objects; else the text (`answers_agree`)."""
    from gate.score.scorers.tools import normalize_value, tool_key

    if a.calls is not None or b.calls is not None:
        ca, cb = a.calls or (), b.calls or ()
        diffs: list[Difference] = []
        for i in range(max(len(ca), len(cb))):
            x = ca[i] if i < len(ca) else None
            y = cb[i] if i < len(cb) else None
            if x is None or y is None or tool_key(x[0]) != tool_key(y[0]):
                diffs.append(Difference(f"tool_calls[{i}]", _call_text(x), _call_text(y), slot=False))
                continue
            ax, ay = dict(x[1]), dict(y[1])
            for k in sorted(set(ax) | set(ay)):
                vx, vy = ax.get(k, _MISSING), ay.get(k, _MISSING)
                if vx is _MISSING or vy is _MISSING or normalize_value(vx, arg_mode) != normalize_value(vy, arg_mode):
                    diffs.append(Difference(f"tool_calls[{i}].{x[0]}.{k}", vx, vy))
        return "conflicting_answers.tool_call", diffs
    if a.fields is not None and b.fields is not None:
        fa, fb = dict(a.fields), dict(b.fields)
        diffs = [Difference(k, fa.get(k, _MISSING), fb.get(k, _MISSING)) for k in sorted(set(fa) | set(fb))
                 if normalize_value(fa.get(k, _MISSING), "basic") != normalize_value(fb.get(k, _MISSING), "basic")]
        return "conflicting_answers.field", diffs
    if answers_agree(a.text, b.text, answer_threshold):
        return "conflicting_answers.text", []
    return "conflicting_answers.text", [Difference("content", a.text, b.text)]


class _Missing:
    def __repr__(self) -> str:
        return "(absent)"


_MISSING: Any = _Missing()


def answer_similarity(a: str, b: str) -> float:
    """Word 2-gram Jaccard of two normalised answers (an answer shorter than 2 words is one whole-text shingle, so
    `positive` and `negative` score 0 and two equal labels 1)."""
    ta, tb = normalize(a).split(), normalize(b).split()
    sa = {tuple(ta[i:i + 2]) for i in range(max(len(ta) - 1, 1))} if ta else set()
    sb = {tuple(tb[i:i + 2]) for i in range(max(len(tb) - 1, 1))} if tb else set()
    union = sa | sb
    return len(sa & sb) / len(union) if union else 1.0


#: Marks of code that prose rarely has (braces, semicolons, `=`, comparisons, brackets, a call `name(`): an answer
#: with more than `CODE_SHARE` of its characters such marks is code. A parenthesis after a space is prose's own.
_CODE_MARK = re.compile(r"[{};=<>\[\]]|\w\(")
CODE_SHARE = 0.02


def is_prose(text: str) -> bool:
    """Prose, not code: at most 2% of the characters are code marks (`_CODE_MARK`)."""
    return len(_CODE_MARK.findall(text)) <= CODE_SHARE * max(len(text), 1)


def content_similarity(a: str, b: str) -> float:
    """Jaccard of the two answers' content words (normalised words less spaCy's English stop words)."""
    stop = english_stop_words()
    wa = {w for w in tokens(a) if w not in stop}
    wb = {w for w in tokens(b) if w not in stop}
    union = wa | wb
    return len(wa & wb) / len(union) if union else 1.0


def answers_agree(a: str, b: str, threshold: float) -> bool:
    """Two free-text answers agree when they state the same numbers and the same polarity (`_facts`) and their word
    2-grams reach `threshold`, or, both being prose, their content words do.

    Why two measures: a paraphrase reorders words, so its word pairs change while its words stay ("My name
    is Vicuna, a model by LMSYS" / "I'm a language model called Vicuna, trained by LMSYS": 2-gram Jaccard 0.35,
    content words 0.62; 5 of 10 false findings in 40 sampled on the real-data bench); in code the order and the
    symbols are the meaning (`Add(string text)` / `Add(ICharSequence text)` share most words and disagree)."""
    (na, nega), (nb, negb) = _facts(a), _facts(b)
    if nega != negb or not (_numbers_within(na, nb) and _numbers_within(nb, na)):
        return False  # another number, or one negates: however many words they share
    if answer_similarity(a, b) >= threshold:
        return True
    return is_prose(a) and is_prose(b) and content_similarity(a, b) >= threshold


def _same_number(x: str, y: str) -> bool:
    """Equal numbers, or two decimals of which one is the other rounded or cut to fewer places (3.333 / 3.33333)."""
    from decimal import ROUND_DOWN, ROUND_HALF_UP, Decimal, InvalidOperation

    try:
        dx, dy = Decimal(x), Decimal(y)
    except InvalidOperation:
        return x == y
    if dx == dy:
        return True
    places = min(-dx.as_tuple().exponent, -dy.as_tuple().exponent)  # type: ignore[operator]
    if places < 1:
        return False
    q = Decimal(1).scaleb(-places)
    return any(dx.quantize(q, rounding=r) == dy.quantize(q, rounding=r) for r in (ROUND_HALF_UP, ROUND_DOWN))


def _numbers_within(xs: frozenset[str], ys: frozenset[str]) -> bool:
    return all(any(_same_number(x, y) for y in ys) for x in xs)


_NEGATION = frozenset({"not", "no", "never", "cannot", "none", "nothing", "neither", "nor", "without"})


def _facts(text: str) -> tuple[frozenset[str], bool]:
    """What a paraphrase must keep and stop words hide: the numbers, and whether the answer negates ("not" and "no"
    are stop words: "the refund was approved" / "was not approved" share every content word)."""
    words = tokens(text)
    negated = bool(words & _NEGATION) or "n't" in text.lower() or "n’t" in text.lower()
    return frozenset(_NUMBER.findall(text)), negated


_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w.]*\w)")


def tokens(value: Any) -> set[str]:
    """The words of a value as the slot rule compares them (normalised; `ORD-123456` and `a.b@c.org` stay whole)."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return set(_TOKEN.findall(normalize(text)))


def explained_by_slots(prompt_a: str, prompt_b: str, diffs: list[Difference], rule: str) -> bool:
    """Whether the prompts differ only in slot values that the answers follow: the prompts are not copies, and every
    differing answer value holds a word its own prompt has and the other prompt lacks. Why token-level: a template
    fills slots with values (ids, names, amounts), and an answer that copies or acts on the slot differs exactly
    there; an answer that differs anywhere else (a severity, another function) is not explained."""
    ta, tb = tokens(prompt_a), tokens(prompt_b)
    only_a, only_b = ta - tb, tb - ta
    if not only_a and not only_b:
        return False
    for d in diffs:
        if not d.slot:
            return False
        left, right = d.left, d.right
        if rule == "conflicting_answers.text":  # the words the answers differ in, not the whole texts
            wl, wr = tokens(left), tokens(right)
            left, right = " ".join(sorted(wl - wr)), " ".join(sorted(wr - wl))
        ours = left is not _MISSING and tokens(left) & only_a
        theirs = right is not _MISSING and tokens(right) & only_b
        if not (ours or theirs):
            return False
    return True


#: Words, numbers and the operators code reads: `!`, `||`, `+ 1` change what a line of code asks.
_REQUEST_TOKEN = re.compile(r"\w+|[!=<>]=?|&&|\|\||[-+*/%^&|~]")
_CAMEL = re.compile(r"[a-z][A-Z]")


def _code_token(token: str) -> bool:
    """A number, an operator or an identifier (`INT_1`, `writeDouble`, `la1tokens`): a token whose change changes
    what a request asks, where a changed English word ("Write" / "Implement") mostly does not."""
    return (not token.isalpha() and not token.replace("_", "").isalpha()) or "_" in token \
        or bool(_CAMEL.search(token))


def same_request(prompt_a: str, prompt_b: str) -> bool:
    """Whether two near prompts ask the same thing: neither has a number, operator or identifier the other lacks
    (compared case-folded). "Write a C++ function ..." / "Implement a C++ function ..." is one request; `return ;` /
    `return INT_1 ;`, `"||"` / `"&&"`, `new boolean[33]` / `[34]` are two, whose different answers are no conflict:
    on the real-data bench 11 of 40 sampled findings were such pairs, and every true one had the same prompt."""
    ta = {t.lower(): t for t in _REQUEST_TOKEN.findall(prompt_a)}
    tb = {t.lower(): t for t in _REQUEST_TOKEN.findall(prompt_b)}
    return not any(_code_token(ta[t]) for t in ta.keys() - tb.keys()) and \
        not any(_code_token(tb[t]) for t in tb.keys() - ta.keys())


def _prompt(system: str, user: str) -> str:
    """The prompt text compared: the system turns, then the user turns."""
    return f"{system}\n{user}" if system else user


class ConflictingAnswersCheck(Check):
    name = "conflicting_answers"
    rules = ("conflicting_answers.field", "conflicting_answers.tool_call", "conflicting_answers.text")
    drop_action = None  # which answer is right is a reviewer's call (a correction), not a drop
    order = 35
    fields = ("id", "messages")
    finding_fields = ("partner_row", "partner_id", "score", "cluster_id", "cluster_size")
    version = "1"
    options_schema = check_options({
        "prompt_threshold": {"type": "number", "exclusiveMinimum": 0, "maximum": 1, "default": 0.8, "description": (
            "Exact Jaccard of two prompts' shingle sets (shingled as `checks.near_duplicate` says) at or above "
            "which they are one prompt: both the whole prompts (system and user turns) and their user turns alone "
            "must reach it, so a shared system prompt does not make short questions alike.")},
        "answer_threshold": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.5, "description": (
            "Free-text answers to one prompt conflict when their word 2-gram Jaccard is below this.")},
        "argument_normalization": {"enum": ["bfcl", "basic", "none"], "default": "bfcl", "description": (
            "How tool-call argument values are normalised before they are compared (the tool scorer's "
            "`normalize_value`: bfcl drops ` ,./-_*^` and lowercases, basic casefolds and collapses spaces).")},
        "templated": {"type": "boolean", "default": True, "description": (
            "Leave out pairs whose prompts differ only in slot values the answers follow (every differing answer "
            "value holds a word only its own prompt has).")},
        "max_cluster": {"type": "integer", "minimum": 2, "default": 200, "description": (
            "Prompt clusters up to this size compare every pair; a larger one compares each member with its "
            "kept row only.")},
    })

    def __init__(self, contract: Contract) -> None:
        super().__init__(contract)
        opts = contract.options(self.name)
        base = neardup_config(contract)
        threshold = float(opts.get("prompt_threshold", 0.8))
        self._config = dataclasses.replace(base, minhash=dataclasses.replace(base.minhash, threshold=threshold))
        self._answer_threshold = float(opts.get("answer_threshold", 0.5))
        self._arg_mode = str(opts.get("argument_normalization", "bfcl"))
        self._templated = bool(opts.get("templated", True))
        self._max_cluster = int(opts.get("max_cluster", 200))
        self._structured = contract.output_format == "json"
        #: per output field, the values its schema enumerates: configuration, shown unmasked (as tool names are)
        props = (contract.output_schema or {}).get("properties") or {}
        self._enums = {k: {json.dumps(v) for v in p.get("enum") or ()}
                       for k, p in props.items() if isinstance(p, Mapping)}
        self._users: list[str] = []  # the user turns: what LSH clusters (a shared system prompt would join all)
        #: each row's system prompt, one shared object per distinct text (most datasets have one: kept once, not
        #: once per row); the whole prompt is `_prompt(system, user)`
        self._systems: list[str] = []
        self._system_texts: dict[str, str] = {}
        self._keys: list[tuple[int, int]] = []
        self._ids: list[str | None] = []
        self._digests: list[bytes | None] = []  # of the normalised prompt; None: no user text
        self._answers: list[Answer] = []
        self._splits: list[str] = []
        self._sketches: list[Any] = []
        #: the evidence of every reported pair: both rows (split, row, id), the prompt similarity, the fields
        self._pairs: list[dict[str, Any]] = []

    def map(self, batch: Batch) -> Any:
        from gate.dedup import compute_signatures, sketch_signatures

        out = []
        users = []
        systems: dict[str, str] = {}  # one object per distinct system prompt: pickled once per batch
        for line, row in batch.rows:
            user = row_text(row, ("user",), include_tool_calls=False)
            system = row_text(row, ("system",), include_tool_calls=False)
            system = systems.setdefault(system, system)
            rid = row.get("id")
            users.append(user)
            out.append((line, user, system,
                        str(rid) if isinstance(rid, str | int) and not isinstance(rid, bool) else None,
                        text_digest(normalize(_prompt(system, user))) if user.strip() else None,
                        answer_of(row, self._structured)))
        sig, counts = compute_signatures(users, self._config)
        return batch.split, out, sketch_signatures(sig, counts, self._config.plan())

    def reduce(self, partial: Any) -> None:
        split, rows, sketch = partial
        if split not in self._splits:
            self._splits.append(split)
        s = self._splits.index(split)
        for line, user, system, rid, digest, answer in rows:
            self._users.append(user)
            self._systems.append(self._system_texts.setdefault(system, system))
            self._keys.append((s, line))
            self._ids.append(rid)
            self._digests.append(digest)
            self._answers.append(answer)
        if sketch is not None:
            self._sketches.append(sketch)
        self.counts["scanned"] += len(rows)

    def _prompt_of(self, pos: int) -> str:
        return _prompt(self._systems[pos], self._users[pos])

    def _groups(self) -> list[tuple[int, ...]]:
        """Prompt clusters (positions, kept first): the verified near-duplicate clusters of the user turns, and the
        rows whose normalised prompts are equal (one group each, so LSH chance never loses an exact copy). Why the
        user turns: most datasets share one system prompt, which would make every short question near every other
        (two different tool-use questions reach prompt Jaccard 0.91 on the fixtures); the whole prompt must reach
        the threshold as well (`finish`), so rows under different system prompts are different inputs."""
        from gate.dedup import Sketch, find_near_duplicates

        sketch = Sketch.concat(self._sketches, self._config.plan().bands)
        self._sketches.clear()
        result = find_near_duplicates(self._users, self._keys, self._config, sketch)
        groups = [c.members for c in result.clusters]
        cluster_of = {pos: i for i, g in enumerate(groups) for pos in g}
        by_digest: dict[bytes, list[int]] = {}
        for pos, digest in enumerate(self._digests):
            if digest is not None:
                by_digest.setdefault(digest, []).append(pos)
        for members in by_digest.values():  # a group LSH already joined in one cluster adds nothing
            if len(members) > 1 and len({cluster_of.get(p, -1 - p) for p in members}) > 1:
                groups.append(tuple(members))
        return groups

    def finish(self) -> None:
        if not self._users:
            return
        from gate.data.neardup import exact_pair_jaccard

        reported: set[tuple[int, int]] = set()
        for members in self._groups():
            self.counts["prompt_clusters"] += 1
            self.counts["rows_in_prompt_clusters"] += len(members)
            kept = members[0]
            pairs = ([(members[i], members[j]) for i in range(len(members)) for j in range(i + 1, len(members))]
                     if len(members) <= self._max_cluster else [(kept, m) for m in members[1:]])
            for a, b in pairs:
                a, b = sorted((a, b), key=lambda p: self._keys[p])
                if (a, b) in reported:
                    continue
                rule, diffs = differences(self._answers[a], self._answers[b], self._arg_mode,
                                          self._answer_threshold)
                self.counts["pairs_compared"] += 1
                if not diffs:
                    continue
                exact = self._digests[a] is not None and self._digests[a] == self._digests[b]
                jac = 1.0 if exact else min(exact_pair_jaccard(self._users[a], self._users[b], self._config),
                                            exact_pair_jaccard(self._prompt_of(a), self._prompt_of(b), self._config))
                if jac < self._config.threshold:  # joined through others, or another system prompt
                    continue
                if self._templated and not exact and explained_by_slots(self._prompt_of(a), self._prompt_of(b), diffs,
                                                                        rule):
                    self.counts["templated_pairs"] += 1
                    continue
                if rule == "conflicting_answers.text" and not exact and not same_request(self._prompt_of(a),
                                                                                         self._prompt_of(b)):
                    self.counts["different_requests"] += 1
                    continue
                reported.add((a, b))
                self.counts["conflicting_pairs"] += 1
                self.findings.append(self._finding(a, b, kept, len(members), rule, diffs, jac))

    def _finding(self, a: int, b: int, kept: int, size: int, rule: str, diffs: list[Difference],
                 jac: float) -> Finding:
        from gate.pii.redact import value_snippet
        from gate.score.scorers.tools import mask_except

        (sa, la), (sb, lb) = self._keys[a], self._keys[b]
        split_a, split_b = self._splits[sa], self._splits[sb]
        partner = (f"row {la}" if sa == sb else f"{split_a} row {la}") + (
            f" (id {self._ids[a]})" if self._ids[a] else "")
        free = rule == "conflicting_answers.text"

        def shown(path: str, v: Any) -> str:
            if v is _MISSING:
                return "(absent)"
            if rule == "conflicting_answers.field" and json.dumps(v) in self._enums.get(path, ()):
                return str(v)
            if rule == "conflicting_answers.tool_call" and isinstance(v, str):  # function names stay readable
                return mask_except(v, names, lambda t: value_snippet(t, 40))
            return value_snippet(v, 40, words=free)

        names = {c[0] for i in (a, b) for c in self._answers[i].calls or () if _NAME.fullmatch(c[0])}

        parts = [f"{d.path} {shown(d.path, d.right)} here, {shown(d.path, d.left)} there" for d in diffs[:4]]
        more = f" (+{len(diffs) - 4} more)" if len(diffs) > 4 else ""
        what = "answer" if free else ", ".join(d.path for d in diffs)
        snippet = "; ".join(parts) + more if self.context.snippets else None
        cluster_id = f"{self._splits[self._keys[kept][0]]}:{self._keys[kept][1]}"
        sim = (f", answer similarity {answer_similarity(self._answers[a].text, self._answers[b].text):.2f}"
               if free else "")
        self._pairs.append({"row": {"split": split_b, "row": lb, "id": self._ids[b]},
                            "partner": {"split": split_a, "row": la, "id": self._ids[a]},
                            "prompt_similarity": round(jac, 6), "rule": rule, "fields": [d.path for d in diffs]})
        return Finding(
            self.name, split_b, lb, diffs[0].path, rule, "error",
            f"same prompt as {partner} (prompt Jaccard {jac:.2f}) but a different {what}{sim}",
            snippet, self._ids[b], partner_row=la, partner_id=self._ids[a], score=round(jac, 6),
            cluster_id=cluster_id, cluster_size=size)

    def flagged_rows(self) -> int:
        return len({(f.split, f.row) for f in self.findings if f.row is not None})

    def details(self) -> dict[str, Any]:
        return {"prompt_roles": list(PROMPT_ROLES), "prompt_threshold": self._config.threshold,
                "answer_threshold": self._answer_threshold, "argument_normalization": self._arg_mode,
                "templated_pairs_left_out": self.counts.get("templated_pairs", 0),
                "different_requests_left_out": self.counts.get("different_requests", 0),
                "pairs": self._pairs[:200]}

    def result(self) -> CheckResult:
        res = super().result()
        res.summary = (f"{self.counts.get('conflicting_pairs', 0)} prompt pair(s) with conflicting answers "
                       f"(prompt Jaccard >= {self._config.threshold:g}; "
                       f"{self.counts.get('templated_pairs', 0)} templated pair(s) and "
                       f"{self.counts.get('different_requests', 0)} pair(s) asking different things left out)")
        return res
