"""`answer_words`: a scorer that judges one answer by its number of words.

A scorer sees one item and one answer and returns a `Score`; gate's score run aggregates the values into metrics,
and a scorecard's gates may reference only the keys it declares.
"""

from __future__ import annotations

from gate.engines.types import Response
from gate.score.types import Item, Score


class AnswerWords:
    type = "answer_words"               # the scorecard's `scorers[].type`
    keys = ("words", "within_limit")    # every metric key it may emit (gates may reference only these)
    primary = "within_limit"            # the key a gate uses when it names none
    options_schema = {                  # the scorecard's `scorers[].options`, checked when the scorecard loads
        "type": "object", "additionalProperties": False,
        "properties": {"max_words": {"type": "integer", "minimum": 1}},
    }

    def __init__(self, max_words: int = 50) -> None:  # the options are the constructor's keyword arguments
        self.max_words = max_words

    def score(self, item: Item, response: Response) -> Score:
        words = len((response.text or "").split())
        return Score({"words": float(words), "within_limit": float(words <= self.max_words)},
                     answer=None, explanation=f"{words} words (limit {self.max_words})")
