"""Factual support: is every claim in the answer backed by the item's reference passage(s)?

The explainable method comes first (evaluation notes §2: judges flake around thresholds and must be pinned and
cached; deepeval #3110). It is deterministic and says, per claim, why it failed:
- the answer is split into claims (sentences; a JSON answer's string fields when `answer_field` is given);
- a claim is *supported* when one passage sentence covers at least `min_coverage` of its content words (after
  lower-casing, dropping stop words and a light suffix strip, so "refunds" meets "refund"), every number in the
  claim appears in that passage (a changed figure is the commonest unsupported claim), and the claim does not
  negate what the passage asserts or the reverse (a "not" on one side only);
- claims with fewer than `min_words` content words ("Thanks!", "Sure.") carry no fact and are skipped.
`supported` = every claim supported (the gate key: one invented fact fails the item), `support_rate` = the share of
supported claims, `contradiction` = a negation mismatch was seen (the worst kind of unsupported claim).
"""

from __future__ import annotations

import re
from typing import Any

from gate.errors import InputError
from gate.pii.redact import mask_loose
from gate.score.types import Item, Score
from gate.serve.types import Response

STOP = frozenset("""a an the and or but if then so of to in on at by for with from as is are was were be been being it
its this that these those there here i you he she we they me him her us them my your our their what which who whom
whose when where why how do does did done have has had can could will would shall should may might must just also
very please thanks thank hi hello dear yes ok okay about into over under than too more most some any each per via
up out off again further once all both few other such own same only""".split())
NEGATIONS = frozenset({"not", "no", "never", "none", "nothing", "cannot", "can't", "won't", "isn't", "aren't",
                       "doesn't", "don't", "didn't", "wasn't", "weren't", "hasn't", "haven't", "without", "neither",
                       "nor"})
_WORD = re.compile(r"[a-z0-9]+(?:['.][a-z0-9]+)*")
_NUM = re.compile(r"\d+(?:[.,]\d+)*")
_SENT = re.compile(r"(?<=[.!?])\s+|\n+")


def _stem(w: str) -> str:
    for suf in ("ing", "ed", "es", "s"):
        if len(w) > len(suf) + 3 and w.endswith(suf):
            return w[: -len(suf)]
    return w


def content_words(text: str) -> set[str]:
    return {_stem(w) for w in _WORD.findall(text.lower()) if w not in STOP and w not in NEGATIONS and len(w) > 1}


def numbers(text: str) -> set[str]:
    return {n.replace(",", "").rstrip(".") for n in _NUM.findall(text)}


def negated(text: str) -> bool:
    return any(w in NEGATIONS or w.endswith("n't") for w in _WORD.findall(text.lower().replace("’", "'")))


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENT.split(text or "") if s.strip()]


class FactualSupport:
    """Options: `passages_field` (row key, or key of `expected`, holding a string or a list of strings; default
    "passages"), `answer_field` (check only this field of a JSON answer), `min_coverage` (default 0.7),
    `min_words` (default 2). No claims at all (empty or all small talk) counts as unsupported: an answer that says
    nothing checkable has not shown support."""

    type = "factual_support"
    keys = ("supported", "support_rate", "contradiction")
    primary = "supported"

    def __init__(self, passages_field: str = "passages", answer_field: str | None = None, min_coverage: float = 0.7,
                 min_words: int = 2) -> None:
        if not 0 < min_coverage <= 1:
            raise ValueError("min_coverage must be in (0, 1]")
        self.passages_field = passages_field
        self.answer_field = answer_field
        self.min_coverage = min_coverage
        self.min_words = max(1, min_words)

    def passages(self, item: Item) -> list[str]:
        raw = item.extra.get(self.passages_field)
        if raw is None and isinstance(item.expected, dict):
            raw = item.expected.get(self.passages_field)
        if isinstance(raw, str):
            raw = [raw]
        return raw if isinstance(raw, list) and raw and all(isinstance(p, str) for p in raw) else []

    def validate_item(self, item: Item) -> None:
        """Called once per item before any request: a suite row without passages is bad input, not a low score."""
        if not self.passages(item):
            raise InputError(f"factual_support needs '{self.passages_field}': a non-empty string or list of strings",
                             line=item.line, field=self.passages_field)

    def _answer_text(self, response: Response) -> str:
        if not self.answer_field:
            return response.text or ""
        from gate.score.extract import flexible_json

        ok, val = flexible_json(response.text or "")
        got = val.get(self.answer_field) if ok and isinstance(val, dict) else None
        return got if isinstance(got, str) else ""

    def check_claim(self, claim: str, passage_sents: list[str]) -> tuple[bool, bool, str]:
        """(supported, contradicted, why) for one claim against every passage sentence."""
        words = content_words(claim)
        nums = numbers(claim)
        best, best_sent, best_missing = -1.0, "", words
        for sent in passage_sents:
            pw = content_words(sent)
            cov = len(words & pw) / len(words)
            if cov > best:
                best, best_sent, best_missing = cov, sent, words - pw
        all_nums = set().union(*(numbers(s) for s in passage_sents))
        missing_nums = nums - all_nums
        contradicted = best >= self.min_coverage and negated(claim) != negated(best_sent)
        ok = best >= self.min_coverage and not missing_nums and not contradicted
        if ok:
            return True, False, f"covered {best:.0%}"
        if missing_nums:
            return False, contradicted, f"number(s) not in the passage: {', '.join(sorted(missing_nums))}"
        if contradicted:
            return False, True, "negation differs from the passage"
        missing = ", ".join(sorted(best_missing)[:5])
        return False, False, f"covered {best:.0%} < {self.min_coverage:.0%}; missing: {missing}"

    def score(self, item: Item, response: Response) -> Score:
        if response.error:
            return Score({k: 0.0 for k in self.keys}, None, f"no answer: {response.error}", {"error": "engine_error"})
        passage_sents = [s for p in self.passages(item) for s in sentences(p)]
        claims = [c for c in sentences(self._answer_text(response)) if len(content_words(c)) >= self.min_words]
        if not claims:
            return Score({"supported": 0.0, "support_rate": 0.0, "contradiction": 0.0}, "",
                         "no checkable claim in the answer", {"error": "no_claims", "claims": 0})
        results = [(c, *self.check_claim(c, passage_sents)) for c in claims]
        n_ok = sum(1 for _, ok, _, _ in results if ok)
        contra = any(ct for _, _, ct, _ in results)
        value = {"supported": float(n_ok == len(claims)), "support_rate": n_ok / len(claims),
                 "contradiction": float(contra)}
        bad = [(i, why) for i, (_, ok, _, why) in enumerate(results) if not ok]
        why = f"{n_ok}/{len(claims)} claims supported"
        if bad:
            why += "; " + "; ".join(f"claim {i + 1}: {w}" for i, w in bad[:3])
        meta: dict[str, Any] = {"claims": len(claims), "per_claim": [{"supported": ok, "why": w}
                                                                     for _, ok, _, w in results]}
        if bad:
            meta["error"] = "contradiction" if contra else "unsupported_claim"
        # the explanation quotes words of the answer: mask what looks like personal data before it is stored
        return Score(value, None, mask_loose(why), meta)
