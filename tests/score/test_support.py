"""Factual support: claims in hand-made answers checked against the item's passage, with the reason per claim."""

from __future__ import annotations

import json

import pytest

from gate.errors import InputError
from gate.score.scorers.support import FactualSupport
from gate.score.types import Item
from gate.serve.types import Response

PASSAGE = ("Returns are accepted within 30 days of delivery. Items must be unused and in their original packaging. "
           "Refunds go back to the original payment method within 5 business days of the return arriving.")


def item(passages=(PASSAGE,), where="extra"):
    extra = {"passages": list(passages)} if where == "extra" else {}
    expected = {"passages": list(passages)} if where == "expected" else {}
    return Item("kb-1", "returns", ({"role": "user", "content": "How long do I have?"},), expected, line=3,
                extra=extra)


def score(text, **opts):
    return FactualSupport(**opts).score(item(), Response(text=text))


@pytest.mark.parametrize("text,supported,rate,contradiction,why", [
    ("You can return items within 30 days of delivery.", 1, 1.0, 0, "1/1 claims supported"),
    ("Returns are accepted within 30 days. Refunds go back to the original payment method.", 1, 1.0, 0, "2/2"),
    # a changed figure is the commonest invented fact
    ("Returns are accepted within 60 days of delivery.", 0, 0.0, 0, "number(s) not in the passage: 60"),
    # the reverse of what the passage says
    ("Returns are not accepted within 30 days of delivery.", 0, 0.0, 1, "negation differs"),
    # one supported claim and one invented
    ("Returns are accepted within 30 days of delivery. We also offer free gift wrapping for every order.", 0, 0.5,
     0, "claim 2: covered"),
])
def test_claims(text, supported, rate, contradiction, why):
    s = score(text)
    assert (s.value["supported"], s.value["support_rate"], s.value["contradiction"]) == (supported, rate,
                                                                                        contradiction)
    assert why in s.explanation
    assert (s.error is None) == bool(supported)


def test_small_talk_is_skipped_and_nothing_checkable_is_not_support():
    assert score("Thanks! Returns are accepted within 30 days of delivery.").value["supported"] == 1.0
    s = score("Sure!")
    assert s.value["supported"] == 0.0 and s.error == "no_claims"


def test_inflections_match_and_threshold_matters():
    text = "Refunds are returned to the original payment method in 5 business days by the bank."
    assert score(text).value["supported"] == 1.0
    assert score(text, min_coverage=1.0).value["supported"] == 0.0


def test_answer_field_of_a_json_answer_and_passages_in_expected():
    ans = json.dumps({"reply": "Items must be unused and in their original packaging.", "ticket": "T-1"})
    s = FactualSupport(answer_field="reply").score(item(where="expected"), Response(text=ans))
    assert s.value["supported"] == 1.0


def test_explanations_mask_personal_data():
    s = score("Call 4111 1111 1111 1111 or mail jane.doe@example.com about returns within 30 days.")
    assert "1111 1111" not in s.explanation and "jane.doe@example.com" not in s.explanation


def test_engine_error_and_missing_passages():
    s = FactualSupport().score(item(), Response(text="", error="timeout"))
    assert s.value["supported"] == 0.0 and s.error == "engine_error"
    with pytest.raises(InputError) as ei:
        FactualSupport().validate_item(item(passages=()))
    assert ei.value.field == "passages" and ei.value.line == 3
    with pytest.raises(InputError):
        FactualSupport().validate_item(item(passages=(1, 2)))
    with pytest.raises(ValueError):
        FactualSupport(min_coverage=0)
