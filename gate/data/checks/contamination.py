"""`contamination`: training rows that contain evaluation items.

Evaluation items are the contract's `evaluation_sets` (scorecard suites) and the rows of the evaluation
splits (default: test). A training row is contaminated by an item when

- it shares at least `min_shared` word `ngram`-grams (13 by default, as lm-evaluation-harness's
  decontamination) with the item (its prompt or a long answer), or
- the item's prompt is short (under `ngram` words) and the row *contains* it: prompts of `short_ngram`
  (8) to `ngram` - 1 words by the share of their 8-grams found in the row (`min_containment`, default 1: all of
  them; templated prompts that differ in one slot, such as an order number, share most), prompts of
  `min_words` to `short_ngram` - 1 words as a whole word sequence. A row that adds text around the item ("The
  answer is 42.", a worked answer, a "Please answer:" prefix) still contains it, where a whole-row Jaccard
  would fall below any threshold. Short answers ("42", a label) are never matched alone: many rows share them.
- or it is a MinHash near duplicate (whole-text Jaccard >= `checks.near_duplicate.threshold`) of the item.

N-grams that occur in many training rows are no evidence: one in more than `common_ngram_rows` (20) rows, or
`common_ngram_share` (0.1 %) of them when that is more, is text the rows share (a system prompt, a tool
description, an instruction) and is ignored for both the shared-n-gram and the containment evidence, as
decontamination practice drops frequent n-grams (6,934 Toolformer rows were flagged through the tool
description they share with the evaluation items). Many copies of one item are still near copies (MinHash) and
duplicates.

N-grams are taken inside each message, never across the seam between a prompt and its answer, where structured
answers would make every row look alike. A near copy of a test-split row is left to `leakage` only when
`leakage` reported that training row in the same run (reworded copies, found with `semantic`, too when `leakage` has
`semantic` on): its LSH proposes candidate pairs and may miss one this check sees (gate.data.base `defers_to`).
Every finding says which evidence matched and in which turns of the training row (the prompt: user, system and tool
turns; the answer: assistant turns), and its score grows with the evidence (the share of the item's informative
n-grams the row holds, of a short prompt contained, the Jaccard, the cosine), so one 13-gram of worked-answer
boilerplate no longer reads like a verbatim copy. A row matched only through its answer turns is
rule `contamination.answer_only`, an error, a warning or not reported by `answer_only`. The report names every
contaminated evaluation item.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from gate.contract import Contract
from gate.contract.file_schema import check_options
from gate.data.base import Batch, CheckResult, Finding
from gate.data.checks.near_duplicate import _ClusterCheck
from gate.data.evalsets import EvalItem, load_eval_items
from gate.data.neardup import exact_pair_jaccard
from gate.data.text import message_text
from gate.errors import GateError

# training rows: the `train_splits` present (a validation split is neither trained on nor a protected test set);
# when none of them exists (a single file), every split that is not an evaluation split
OPTIONS = {"ngram": 13, "min_shared": 1, "short_ngram": 8, "min_containment": 1.0, "min_words": 5,
           "eval_splits": ["test"], "train_splits": ["train", "training"], "semantic": False,
           "common_ngram_rows": 20, "common_ngram_share": 0.001, "answer_only": "error"}
ANSWER_ONLY = ("error", "warning", "ignore")
# how a finding names the turns of the training row that matched (`ContaminationCheck._where`)
WHERE_SAYS = {"prompt": "in the prompt: ", "answer": "in the answer only: ", "both": "in the prompt and the answer: ",
              "row": ""}
SEP = "\x1e"  # between messages: n-grams never span it


def _parts(texts: list[str]) -> tuple[list[str], np.ndarray]:
    """The messages of every text (split at SEP), with the index of the text each one belongs to."""
    parts: list[str] = []
    owners: list[int] = []
    for i, text in enumerate(texts):
        if not text:
            continue
        for part in text.split(SEP):
            parts.append(part)
            owners.append(i)
    return parts, np.asarray(owners, dtype=np.int64)


def _answer_flags(texts: list[str], sides: list[str]) -> np.ndarray:
    """Per part of `_parts(texts)`: whether it is an answer (assistant) turn. `sides` holds one letter per message
    of each text ("a" answer, "p" prompt); a text whose parts do not line up with its letters (a message holding the
    separator itself) counts as prompt throughout, so evidence is never moved to the answer by mistake."""
    flags: list[bool] = []
    for text, side in zip(texts, sides, strict=True):
        if not text:
            continue
        n = text.count(SEP) + 1
        flags += [c == "a" for c in side] if len(side) == n else [False] * n
    return np.asarray(flags, dtype=bool)


def _grams(parts: list[str], owners: np.ndarray, cfg: Any, ns: set[int]) -> tuple[np.ndarray, dict[int, Any]]:
    """(token count of each part, {n: shingle batch}) of the parts, tokenised once for every n."""
    from gate.dedup.shingles import ngram_batches

    return ngram_batches(parts, cfg, ns)


def _select(batch: Any, owners: np.ndarray, take: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Hashes and owners of the parts where `take` is true (a part shorter than n gives no n-gram: callers drop it)."""
    sizes = batch.sizes
    keep = np.repeat(take, sizes)
    return batch.hashes[keep], np.repeat(owners, sizes)[keep]


def _select_train(batch: Any, owners: np.ndarray, answer: np.ndarray,
                  take: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`_select` for training parts, with whether each n-gram lies in an answer turn."""
    h, o = _select(batch, owners, take)
    return h, o, np.repeat(answer, batch.sizes)[np.repeat(take, batch.sizes)]


#: Training message parts shingled at once: memory holds one chunk's n-grams, not every n-gram of the data.
TRAIN_CHUNK = 16384


def _train_grams(parts: list[str], owners: np.ndarray, answer: np.ndarray, cfg: Any,
                 wanted: dict[int, np.ndarray]) -> dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per n: (hashes, rows, is-answer flags) of the training n-grams whose hash is in `wanted[n]` (the items'),
    shingled `TRAIN_CHUNK` parts at a time. Only these can be shared with an item, and whether one is common
    (`common_limit`) is counted over its rows all the same, so the evidence is what all n-grams at once would give;
    memory holds them and one chunk, where all n-grams at once took ~5 KB per training row."""
    got: dict[int, list[list[np.ndarray]]] = {n: [[], [], []] for n in wanted}
    for s in range(0, len(parts), TRAIN_CHUNK):
        own, ans = owners[s:s + TRAIN_CHUNK], answer[s:s + TRAIN_CHUNK]
        tokens, grams = _grams(parts[s:s + TRAIN_CHUNK], own, cfg, set(wanted))
        for n, want in wanted.items():
            h, o, a = _select_train(grams[n], own, ans, tokens >= n)
            keep = np.isin(h, want)
            for acc, arr in zip(got[n], (h[keep], o[keep], a[keep]), strict=True):
                acc.append(arr)
    empty = (np.zeros(0, np.uint64), np.zeros(0, np.int64), np.zeros(0, bool))
    return {n: tuple(np.concatenate(acc) if acc else e for acc, e in zip(got[n], empty, strict=True))
            for n in wanted}  # type: ignore[misc]


def _distinct(h: np.ndarray, o: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(hash, owner) pairs without repeats, ordered by hash: a repeated n-gram counts once."""
    order = np.lexsort((o, h))
    h, o = h[order], o[order]
    if h.size < 2:
        return h, o
    new = np.concatenate(([True], (h[1:] != h[:-1]) | (o[1:] != o[:-1])))
    return h[new], o[new]


def common_limit(opts: dict[str, Any], n_train: int) -> int:
    """The most training rows an n-gram may occur in and still be evidence: max(`common_ngram_rows`,
    `common_ngram_share` x training rows). Above it the n-gram is text many rows share (a system prompt, a tool
    description, an instruction), which says nothing about an evaluation item having leaked; decontamination
    practice drops such frequent n-grams the same way."""
    return max(int(opts["common_ngram_rows"]), int(np.ceil(float(opts["common_ngram_share"]) * n_train)))


def _common(th: np.ndarray, to: np.ndarray, max_rows: int) -> np.ndarray:
    """The hashes (sorted) of the n-grams in more than `max_rows` rows, from distinct (hash, row) pairs ordered
    by hash."""
    if th.size == 0:
        return th
    starts = np.flatnonzero(np.concatenate(([True], th[1:] != th[:-1])))
    rows_per_gram = np.diff(np.append(starts, th.size))
    return th[starts[rows_per_gram > max_rows]]


def _without(h: np.ndarray, o: np.ndarray, common: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if not common.size or not h.size:
        return h, o
    keep = ~np.isin(h, common)
    return h[keep], o[keep]


def _pairs(th: np.ndarray, to: np.ndarray, eh: np.ndarray, eo: np.ndarray,
           n_items: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(owner, item, distinct shared n-grams) for every pair sharing one, from distinct (hash, owner) pairs of each
    side ordered by hash, vectorised."""
    from gate.dedup._arrays import ranks_within

    lo = np.searchsorted(eh, th, side="left")
    cnt = np.searchsorted(eh, th, side="right") - lo
    sel = cnt > 0
    cnt = cnt[sel]
    rows = np.repeat(to[sel], cnt)
    items = eo[np.repeat(lo[sel], cnt) + ranks_within(cnt)]
    keys, counts = np.unique(rows * np.int64(n_items) + items, return_counts=True)
    return keys // n_items, keys % n_items, counts


def _shared(tr: tuple[np.ndarray, np.ndarray, np.ndarray], ev: tuple[np.ndarray, np.ndarray], n_items: int,
            max_rows: int) -> tuple[dict[tuple[int, int], tuple[int, int, int]], np.ndarray]:
    """{(training row, item): (distinct shared n-grams, of them in the row's prompt turns, in its answer turns)} for
    every pair sharing an n-gram that occurs in at most `max_rows` training rows (`common_limit`), and the hashes
    of the common n-grams dropped. `tr` is (hashes, rows, is-answer flags) of the training n-grams."""
    th, to, answer = tr
    sh, so = _distinct(th, to * 2 + answer.astype(np.int64))  # (hash, row and side), ordered by both
    rows = so // 2  # one sort for both: a row's two sides are neighbours under each hash
    first = np.concatenate(([True], (sh[1:] != sh[:-1]) | (rows[1:] != rows[:-1]))) if sh.size else sh.astype(bool)
    rh, ro = sh[first], rows[first]
    common = _common(rh, ro, max_rows)
    rh, ro = _without(rh, ro, common)
    sh, so = _without(sh, so, common)
    eh, eo = _distinct(*ev)
    out: dict[tuple[int, int], tuple[int, int, int]] = {}
    for r, it, c in zip(*(a.tolist() for a in _pairs(rh, ro, eh, eo, n_items)), strict=True):
        out[(r, it)] = (c, 0, 0)
    for o, it, c in zip(*(a.tolist() for a in _pairs(sh, so, eh, eo, n_items)), strict=True):
        total, pc, ac = out[(o // 2, it)]
        out[(o // 2, it)] = (total, pc, ac + c) if o % 2 else (total, pc + c, ac)
    return out, common


class ContaminationCheck(_ClusterCheck):
    name = "contamination"
    rules = ("contamination",)
    order = 80
    incremental = "full"
    finding_fields = ("partner_row", "partner_id", "score")  # the matched evaluation item and similarity
    defers_to = ("leakage",)  # near copies of a test-split row that `leakage` reported
    version = "2"  # findings say which turns matched; the score is the share of the item found, not a flat 1.0
    options_schema = check_options({  # defaults in OPTIONS above
        "ngram": {"type": "integer", "minimum": 1, "description":
                  "Word n-gram length compared between a training message and an evaluation item."},
        "min_shared": {"type": "integer", "minimum": 1, "description":
                       "Shared n-grams a training row needs with an item to contain it."},
        "short_ngram": {"type": "integer", "minimum": 1, "description":
                        "N-gram length for short prompts (fewer words than `ngram`), matched by containment."},
        "min_containment": {"type": "number", "exclusiveMinimum": 0, "maximum": 1, "description":
                            "Share of a short prompt's n-grams a training message must contain."},
        "min_words": {"type": "integer", "minimum": 1, "description":
                      "Items with fewer words are matched only as a whole prompt (too short for n-grams)."},
        "eval_splits": {"type": "array", "items": {"type": "string"}, "description":
                        "Splits of the dataset that are evaluation data (besides `evaluation_sets`)."},
        "train_splits": {"type": "array", "items": {"type": "string"}, "description":
                         "Splits whose rows are checked against the evaluation items."},
        # reworded items: cosine of all-MiniLM-L6-v2 embeddings >= checks.semantic_duplicate.threshold (gate.embed)
        "semantic": {"type": "boolean", "description":
                     "Also report reworded items: each prompt message of a training row (user, system, tool turns, "
                     "one by one) against each item's question, cosine of all-MiniLM-L6-v2 embeddings at or above "
                     "`checks.semantic_duplicate.threshold` (needs the model wheel)."},
        "common_ngram_rows": {"type": "integer", "minimum": 1, "description": (
            "An n-gram in more training rows than this (or than `common_ngram_share` of them, whichever is more) "
            "is text many rows share (a system prompt, a tool description, an instruction), not evidence: it "
            "is ignored, as decontamination practice drops frequent n-grams.")},
        "common_ngram_share": {"type": "number", "minimum": 0, "maximum": 1, "description": (
            "The share of training rows above which an n-gram is common and ignored (see `common_ngram_rows`).")},
        "answer_only": {"enum": list(ANSWER_ONLY), "description": (
            "What a match found only in a training row's answer (assistant) turns is: `error` (the default, as any "
            "contamination), `warning` (reported as rule contamination.answer_only, the check does not fail on "
            "it) or `ignore` (not reported; counted as answer_only_ignored). Answer boilerplate restating part "
            "of an item is most such matches.")},
    })

    def __init__(self, contract: Contract) -> None:
        super().__init__(contract)
        opts = contract.options("contamination")
        unknown = set(opts) - set(OPTIONS)
        if unknown:
            raise GateError(f"unknown option(s) {sorted(unknown)} in checks.contamination (known: "
                            f"{sorted(OPTIONS)})", file=contract.path)
        self.opts = {**OPTIONS, **opts}
        self._items = load_eval_items(contract.evaluation_sets, contract.path)
        self._leaked_items: dict[tuple[str, str], int] = defaultdict(int)
        self._prompts: list[str] = []
        self._sides: list[str] = []  # per row, one letter per message: "p" prompt turn, "a" answer (assistant) turn
        self._msg_at: list[tuple[int, ...]] = []  # per row, each text part's index in the row's `messages`
        if self.opts["answer_only"] not in ANSWER_ONLY:
            raise GateError(f"checks.contamination.answer_only: {self.opts['answer_only']!r} is not one of "
                            f"{', '.join(ANSWER_ONLY)}", file=contract.path)

    def map(self, batch: Batch) -> Any:
        roles = set(self.contract.text_roles)
        tools = self.contract.include_tool_calls
        is_eval = (self.contract.split_kind(batch.split) or batch.split) in set(self.opts["eval_splits"])
        out = []
        for line, row in batch.rows:
            msgs = [m for m in row.get("messages") or [] if isinstance(m, dict)] \
                if isinstance(row.get("messages"), list) else []
            at = tuple(i for i, m in enumerate(msgs) if m.get("role") in roles)
            said = [msgs[i] for i in at]
            parts = [message_text(m, tools) for m in said]
            # which turns are the answer: a match only there may be treated apart (`answer_only`)
            sides = "".join("a" if m.get("role") == "assistant" else "p" for m in said)
            # an evaluation row's prompt (its user turns) is what short-item containment looks for
            prompt = SEP.join(message_text(m, False) for m in msgs if m.get("role") == "user") if is_eval else ""
            rid = row.get("id") if isinstance(row.get("id"), str) else None
            out.append((line, SEP.join(parts), rid, b"", prompt, sides, at))
        return batch.split, out, None

    def reduce(self, partial: Any) -> None:
        split, rows, sketch = partial
        self._prompts.extend(r[4] for r in rows)
        self._sides.extend(r[5] for r in rows)
        self._msg_at.extend(r[6] for r in rows)
        super().reduce((split, [r[:4] for r in rows], sketch))

    def _evidence(self, items: list[EvalItem], train_texts: list[str],
                  train_sides: list[str]) -> dict[tuple[int, int], dict[str, Any]]:
        """Per (training row, item): the n-gram evidence that they overlap (shared long n-grams, short-prompt
        containment), for every pair with any shared n-gram, each also counted in the row's prompt turns alone and
        in its answer turns alone, with the item's own number of informative long n-grams (the score's base)."""
        from gate.dedup import ShingleConfig

        opts = self.opts
        n_long, n_short, min_words = int(opts["ngram"]), int(opts["short_ngram"]), int(opts["min_words"])
        cfg = ShingleConfig(n=n_long, strip_punct=True)
        ev_parts, ev_owner = _parts([it.text for it in items])
        pr_parts, pr_owner = _parts([it.prompt for it in items])
        tr_parts, tr_owner = _parts(train_texts)
        tr_answer = _answer_flags(train_texts, train_sides)
        pr_tokens, _ = _grams(pr_parts, pr_owner, cfg, set())
        # n for each short prompt part: `short_ngram` for the longer ones, the whole part below that
        short_n = np.where(pr_tokens >= n_short, n_short, pr_tokens)
        short_ok = (pr_tokens >= min_words) & (pr_tokens < n_long)
        ns = {n_long} | {int(n) for n in np.unique(short_n[short_ok])}
        ev_tokens, ev_grams = _grams(ev_parts, ev_owner, cfg, {n_long})
        n_items = len(items)
        # the items' side first: long n-grams of every part of the item (prompt and answer), and per short n the
        # n-grams (or whole prompts) of the short prompts; only training n-grams among these are read
        ev = _select(ev_grams[n_long], ev_owner, ev_tokens >= n_long)
        short_total = np.zeros(n_items, dtype=np.int64)
        short_ev: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        for n in sorted(ns - {n_long}):
            take = short_ok & (short_n == n)
            if not take.any():
                continue
            _, pr_grams = _grams([p for p, t in zip(pr_parts, take.tolist(), strict=True) if t],
                                 pr_owner[take], cfg, {n})
            short_ev[n] = _distinct(pr_grams[n].hashes, np.repeat(pr_owner[take], pr_grams[n].sizes))
            short_total += np.bincount(short_ev[n][1], minlength=n_items)
        train = _train_grams(tr_parts, tr_owner, tr_answer, cfg, {n_long: ev[0], **{n: e[0] for n, e in
                                                                                   short_ev.items()}})
        out: dict[tuple[int, int], dict[str, Any]] = {}
        limit = self._common_limit = common_limit(opts, len(train_texts))
        # n-grams common in training are no evidence
        shared, common = _shared(train[n_long], ev, n_items, limit)
        self.counts["common_ngrams_ignored"] += int(common.size)
        eh, eo = _without(*_distinct(*ev), common)
        item_grams = np.bincount(eo, minlength=n_items)  # informative long n-grams of each item: the score's base
        for (r, it), (c, pc, ac) in shared.items():
            out[(r, it)] = {"shared": c, "item_grams": int(item_grams[it]), "prompt": {"shared": pc},
                            "answer": {"shared": ac}}
        # short prompts: containment of the prompt's n-grams (or of the whole prompt) in the row
        shared_short: dict[tuple[int, int], list[int]] = {}
        for n, ev in short_ev.items():
            shared, common = _shared(train[n], ev, n_items, limit)
            self.counts["common_ngrams_ignored"] += int(common.size)
            for key, counts in shared.items():
                acc = shared_short.setdefault(key, [0, 0, 0])
                for k in range(3):
                    acc[k] += counts[k]
        for (r, it), (c, pc, ac) in shared_short.items():
            e = out.setdefault((r, it), {"prompt": {}, "answer": {}})
            e["short_shared"], e["short_total"] = c, int(short_total[it])
            e["prompt"]["short_shared"], e["answer"]["short_shared"] = pc, ac
            e["prompt_words"] = self._prompt_words(items[it].prompt, cfg)
        return out

    @staticmethod
    def _prompt_words(prompt: str, cfg: Any) -> int:
        from gate.dedup.shingles import tokenize

        return sum(len(tokenize(p, cfg)) for p in prompt.split(SEP))

    def finish(self) -> None:
        from gate.dedup import NearDupIndex

        # a file a contract `splits` rule maps (train_more -> train) is read as the split it is mapped to
        kinds = self.contract.split_kinds(self._splits)
        eval_splits = {s for s in self._splits if kinds[s] in set(self.opts["eval_splits"])}
        items: list[EvalItem] = list(self._items)
        split_item_pos: dict[int, int] = {}  # item index -> position in self._texts (for test-split items)
        for pos, (s, line) in enumerate(self._keys):
            if self._splits[s] in eval_splits:
                split_item_pos[len(items)] = pos
                items.append(EvalItem(f"split:{self._splits[s]}", self._ids[pos] or f"row-{line}", self._texts[pos],
                                      self._prompts[pos]))
        train_splits = ({s for s in self._splits if kinds[s] in set(self.opts["train_splits"])}
                        or set(self._splits) - eval_splits)
        train_pos = [p for p, (s, _) in enumerate(self._keys) if self._splits[s] in train_splits]
        self.counts["scanned"] = len(train_pos)
        self.counts["evaluation_items"] = len(items)
        if not items or not train_pos:
            return
        evidence = self._evidence(items, [self._texts[p] for p in train_pos], [self._sides[p] for p in train_pos])
        # near copies of items as whole texts (MinHash, verified by exact Jaccard); a test row's near copies are
        # left to `leakage` below, each only when it reported the training row
        leakage_runs = "leakage" in self.handed
        indexed = list(range(len(self._items))) + sorted(split_item_pos)
        if indexed:
            index = NearDupIndex([items[i].text.replace(SEP, "\n") for i in indexed], None, self._config)
            for pair in index.query([self._texts[p].replace(SEP, "\n") for p in train_pos]).pairs:
                e = evidence.setdefault((pair.query_index, indexed[pair.index_index]), {})
                e["jaccard"] = max(e.get("jaccard", 0.0), pair.jaccard)
        if self.opts.get("semantic"):
            for (k, it), (cos, msg) in self._semantic(items, train_pos).items():
                e = evidence.setdefault((k, it), {})
                e["cosine"], e["cosine_message"] = cos, msg
                e.setdefault("prompt", {})["cosine"] = cos
        threshold = self._config.threshold
        per_row: dict[int, list[tuple[int, str, float, str]]] = defaultdict(list)
        for (k, it), e in sorted(evidence.items()):
            said, score = self._verdict(e)
            if not said:
                continue
            pos = train_pos[k]
            if it in split_item_pos and leakage_runs and self.reported_by("leakage", self._splits[self._keys[pos][0]],
                                                                           self._keys[pos][1]):
                jac = e.get("jaccard") or exact_pair_jaccard(self._texts[pos].replace(SEP, "\n"),
                                                            self._texts[split_item_pos[it]].replace(SEP, "\n"),
                                                            self._config)
                if jac >= threshold:
                    continue  # a near copy of a test row, and `leakage` runs: it reports it
                if "cosine" in e and self.contract.options("leakage").get("semantic"):
                    continue  # a reworded copy of a test row: `leakage` with `semantic` reports it
            where = self._where(e)
            if where == "answer" and self.opts["answer_only"] == "ignore":
                self.counts["answer_only_ignored"] += 1
                continue
            per_row[k].append((it, WHERE_SAYS[where] + "; ".join(said), score, where))
        self._report(per_row, items, train_pos, split_item_pos)

    def _semantic(self, items: list[EvalItem], train_pos: list[int]) -> dict[tuple[int, int], tuple[float, int]]:
        """Reworded copies, per message: each prompt turn of a training row (user, system, tool; one by one)
        against each item's prompt (its question; the whole item where it has none), best cosine per (row, item)
        and the message it came from. The whole row (question plus worked answer) against the whole item (question
        plus "18") was below the threshold for 29 of 50 verbatim GSM8K copies and found none the n-grams missed,
        at 200 times the time; the question alone against the question is what a reworded copy shares."""
        from gate.data.checks.semantic_duplicate import embedding_memo, semantic_matches

        msgs: list[str] = []
        owner: list[tuple[int, int]] = []
        for k, p in enumerate(train_pos):
            text, side = self._texts[p], self._sides[p]
            parts = text.split(SEP) if text else []
            if len(side) != len(parts) and text.strip():  # a message holding the separator itself: the whole row
                msgs.append(text.replace(SEP, "\n"))
                owner.append((k, -1))
                continue
            for m, part in enumerate(parts):
                if len(side) == len(parts) and side[m] == "p" and part.strip():
                    msgs.append(part)
                    owner.append((k, self._msg_at[p][m]))
        prompts = [(i.prompt or i.text).replace(SEP, "\n") for i in items]
        best: dict[tuple[int, int], tuple[float, int]] = {}
        for j, it, cos in semantic_matches(self.contract, prompts, msgs, memo=embedding_memo(self.context)):
            k, m = owner[j]
            if cos > best.get((k, it), (-1.0, 0))[0]:
                best[(k, it)] = (cos, m)
        return best

    def _verdict(self, e: dict[str, Any]) -> tuple[list[str], float]:
        """What one (training row, item) pair's evidence says, against the options: the reasons, in report
        order, and the pair's score, the best of its evidence: the share of the item's informative long n-grams
        the row holds (one shared 13-gram of 54 is 0.02, a verbatim copy 1.0), the share of a short prompt it
        contains, the Jaccard, the cosine. No reasons: clean."""
        said: list[str] = []
        score = 0.0
        if e.get("shared", 0) >= int(self.opts["min_shared"]):
            said.append(f"{e['shared']} shared {self.opts['ngram']}-gram(s) of the item's {e['item_grams']}, each "
                        f"in at most {getattr(self, '_common_limit', 0)} training rows")
            score = max(score, min(1.0, e["shared"] / max(e["item_grams"], 1)))
        if e.get("short_total") and e.get("short_shared", 0) / e["short_total"] >= float(self.opts["min_containment"]):
            cont = e["short_shared"] / e["short_total"]
            said.append(f"contains its {e['prompt_words']}-word prompt" if cont >= 1 else
                        f"contains {cont:.0%} of its {e['prompt_words']}-word prompt")
            score = max(score, cont)
        if "jaccard" in e:
            said.append(f"near copy, Jaccard {e['jaccard']:.2f}")
            score = max(score, e["jaccard"])
        if "cosine" in e:
            from gate.data.checks.semantic_duplicate import semantic_options
            from gate.embed.model import MODEL_NAME

            where = f" in messages[{e['cosine_message']}]" if e.get("cosine_message", -1) >= 0 else ""
            said.append(f"reworded copy of its prompt{where}, cosine {e['cosine']:.3f} >= "
                        f"{semantic_options(self.contract)[1]} ({MODEL_NAME})")
            score = max(score, e["cosine"])
        return said, score

    def _where(self, e: dict[str, Any]) -> str:
        """Which turns of the training row match the item: "prompt" (its user/system/tool turns alone hold enough
        evidence), "answer" (only its assistant turns do: answer boilerplate that restates part of an item, half
        of the false alarms on GSM8K, or a memorised answer), "both", or "row" (whole-row evidence, MinHash or
        cosine, or n-grams that are enough only together)."""
        base = {k: e[k] for k in ("item_grams", "short_total", "prompt_words") if k in e}
        prompt = bool(self._verdict({**base, **e.get("prompt", {})})[0])
        answer = bool(self._verdict({**base, **e.get("answer", {})})[0])
        if prompt:
            return "both" if answer else "prompt"
        return "answer" if answer and "jaccard" not in e and "cosine" not in e else "row"

    def _report(self, per_row: dict[int, list[tuple[int, str, float, str]]], items: list[EvalItem],
                train_pos: list[int], split_item_pos: dict[int, int]) -> None:
        """One finding per contaminated training row (`per_row`: its matched items, why, score, which turns),
        naming up to three items, and the per-item tally `details` shows. A row matched through its answer turns
        only is rule `contamination.answer_only`, with the severity `answer_only` gives it."""
        for k, matched in sorted(per_row.items()):
            pos = train_pos[k]
            s, line = self._keys[pos]
            for it, _, _, _ in matched:
                self._leaked_items[(items[it].source, items[it].item_id)] += 1
            names = ", ".join(f"{items[it].source}#{items[it].item_id} ({why})" for it, why, _, _ in matched[:3])
            # the evidence fields, as near_duplicate fills them: the best-matched item ("source#id"; its line when
            # it is a row of an evaluation split) and that match's score
            best, _, best_score, _ = max(matched, key=lambda m: m[2])
            best_line = self._keys[split_item_pos[best]][1] if best in split_item_pos else None
            answer_only = all(m[3] == "answer" for m in matched)
            if answer_only:
                self.counts["answer_only"] += 1
            self.findings.append(Finding(
                "contamination", self._splits[s], line, "messages",
                "contamination.answer_only" if answer_only else "contamination",
                str(self.opts["answer_only"]) if answer_only else "error",
                f"contains evaluation item(s) {names}"
                + (f" and {len(matched) - 3} more" if len(matched) > 3 else ""), None, self._ids[pos],
                partner_row=best_line, partner_id=f"{items[best].source}#{items[best].item_id}",
                score=round(best_score, 6)))

    def details(self) -> dict[str, Any]:
        return {"options": self.opts, "evaluation_sets": list(self.contract.evaluation_sets),
                "contaminated_items": [{"source": s, "id": i, "training_rows": n}
                                       for (s, i), n in sorted(self._leaked_items.items())]}

    def result(self) -> CheckResult:
        res = super().result()
        kinds = self.contract.split_kinds(self._splits)
        if not self._items and not any(kinds[self._splits[s]] in set(self.opts["eval_splits"]) for s, _ in self._keys):
            res.status = "skipped"
            res.summary = "no evaluation sets in the contract and no evaluation split"
        else:
            res.summary = (f"{len(self.findings)} training row(s) contain {len(self._leaked_items)} evaluation "
                           f"item(s) of {self.counts['evaluation_items']}")
            if self.counts["answer_only"]:
                res.summary += (f"; {self.counts['answer_only']} of them through the answer turns only "
                                f"({self.opts['answer_only']}s)")
            if self.counts["answer_only_ignored"]:
                res.summary += f"; {self.counts['answer_only_ignored']} answer-only match(es) ignored"
        return res
