"""General-capability regression: a small multiple-choice suite, scored the way lm-eval scores it where it can.

Where the engine returns prompt log-likelihoods (embedded transformers, vLLM), each choice is scored by the summed
log-probability of its text as the assistant's answer, and the highest wins (`loglik`), plus the length-normalised
variant (lm-eval `acc_norm`: per byte, so long choices are not penalised). Those numbers do not depend on sampling
and are much less noisy than generation on a small suite, which is what a regression guard needs. Engines without
log-likelihoods (a hosted URL) fall back to generation: the answer must name the right choice (strict: exactly its
letter or text; flexible: the only choice letter or text mentioned). `correct` is the log-likelihood result when
there is one, else the strict generation result, and `method` in the evidence says which.

Suite rows carry `choices` (a list of strings) and `expected.answer` (an index, or the letter A, B, ...).
"""

from __future__ import annotations

import re
import string
from typing import Any

from gate.engines.types import Response
from gate.errors import InputError
from gate.score.types import Item, Score

LETTERS = string.ascii_uppercase


def choices_of(item: Item) -> list[str]:
    ch = item.extra.get("choices")
    return ch if isinstance(ch, list) else []


def answer_index(item: Item) -> int | None:
    exp = item.expected.get("answer") if isinstance(item.expected, dict) else item.expected
    if isinstance(exp, bool):
        return None
    if isinstance(exp, int):
        return exp
    if isinstance(exp, str) and len(exp.strip()) == 1 and exp.strip().upper() in LETTERS:
        return LETTERS.index(exp.strip().upper())
    return None


class MultipleChoice:
    """Options: `continuation` ("text": the choice's text is the answer; "letter": its letter), `stop_on_first`
    (generation fallback reads only the first line, default true)."""

    type = "multiple_choice"
    keys = ("correct", "loglik", "loglik_norm", "generation_strict", "generation_flexible")
    options_schema = {"type": "object", "additionalProperties": False, "properties": {
        "continuation": {"enum": ["text", "letter"]}, "stop_on_first": {"type": "boolean"}}}
    primary = "correct"
    wants_loglikelihood = True

    def __init__(self, continuation: str = "text", stop_on_first: bool = True) -> None:
        if continuation not in ("text", "letter"):
            raise ValueError("continuation must be 'text' or 'letter'")
        self.continuation = continuation
        self.stop_on_first = stop_on_first

    def validate_item(self, item: Item) -> None:
        ch = item.extra.get("choices")
        if not isinstance(ch, list) or len(ch) < 2 or not all(isinstance(c, str) and c.strip() for c in ch):
            raise InputError("choices must be a list of at least two non-empty strings", line=item.line,
                             field="choices")
        if len(ch) > len(LETTERS):
            raise InputError(f"at most {len(LETTERS)} choices", line=item.line, field="choices")
        idx = answer_index(item)
        if idx is None or not 0 <= idx < len(ch):
            raise InputError(f"expected.answer must be a choice index 0..{len(ch) - 1} or a letter",
                             line=item.line, field="expected.answer")

    def continuations(self, item: Item) -> list[str]:
        """What the assistant would say for each choice: these are the strings whose likelihood is measured."""
        ch = choices_of(item)
        return [LETTERS[i] if self.continuation == "letter" else c for i, c in enumerate(ch)]

    def _generation(self, item: Item, text: str) -> tuple[bool, bool, str]:
        ch, idx = choices_of(item), answer_index(item)
        conts = self.continuations(item)
        got = text.strip()
        if self.stop_on_first:
            got = got.splitlines()[0].strip() if got else ""
        norm = got.rstrip(".").strip().lower()
        strict = norm in (conts[idx].lower(), ch[idx].lower(), LETTERS[idx].lower(), f"({LETTERS[idx].lower()})")
        mentioned = {i for i, c in enumerate(ch) if c.lower() in got.lower()}
        mentioned |= {i for i in range(len(ch)) if re.search(rf"(^|[^A-Za-z]){LETTERS[i]}([^A-Za-z]|$)", got)}
        flexible = strict or mentioned == {idx}
        return strict, flexible, got[:80]

    def score(self, item: Item, response: Response) -> Score:
        if response.error:
            return Score({"correct": 0.0, "generation_strict": 0.0, "generation_flexible": 0.0}, None,
                         f"no answer: {response.error}", {"error": "engine_error"})
        idx = answer_index(item)
        assert idx is not None  # validate_item ran before any request
        strict, flexible, got = self._generation(item, response.text or "")
        value = {"generation_strict": float(strict), "generation_flexible": float(flexible)}
        meta: dict[str, Any] = {"answer": idx}
        lls = response.raw.get("choice_logprobs")
        if isinstance(lls, list) and len(lls) == len(choices_of(item)) and all(x is not None for x in lls):
            conts = self.continuations(item)
            pick = max(range(len(lls)), key=lambda i: lls[i])
            norm = [ll / max(1, len(c.encode())) for ll, c in zip(lls, conts, strict=True)]
            pick_n = max(range(len(norm)), key=lambda i: norm[i])
            value["loglik"] = float(pick == idx)
            value["loglik_norm"] = float(pick_n == idx)
            value["correct"] = value["loglik"]
            meta.update(method="loglikelihood", choice_logprobs=lls, picked=pick)
            why = f"log-likelihood picks {LETTERS[pick]}, answer {LETTERS[idx]}"
        else:
            value["correct"] = value["generation_strict"]
            meta["method"] = "generation"
            why = f"generated {got!r}, answer {LETTERS[idx]}"
        if not value["correct"]:
            meta["error"] = "wrong_choice"
        return Score(value, got, why, meta)
