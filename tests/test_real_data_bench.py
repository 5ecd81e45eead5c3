"""The real-data benchmark's scoring (bench/real_data/evaluate.py): how a planted fault counts as found.

Why: recall is the benchmark's headline; a matching rule that misses how a check names its partner row (exact
duplicates name it in the message, near duplicates in `partner_id`) reported recall 0 for found faults once.
"""

from __future__ import annotations

from bench.real_data.evaluate import recall, sample


def _f(check: str, row_id: str, message: str = "", partner_id: str | None = None, rule: str | None = None) -> dict:
    return {"check": check, "rule": rule or check, "row_id": row_id, "message": message, "partner_id": partner_id,
            "cluster_id": None, "field": None, "snippet": None}


def test_planted_duplicates_count_by_their_pair_either_way_round() -> None:
    planted = [{"id": "a-exact000", "kind": "exact_duplicate", "detail": "a"},
               {"id": "b-near_001", "kind": "near_duplicate", "detail": "b"},
               {"id": "c-exact002", "kind": "exact_duplicate", "detail": "c"}]
    found = [_f("exact_duplicate", "a", "same normalised text as row 7 (id a-exact000)"),  # the source flagged
             _f("near_duplicate", "b-near_001", "near duplicate", partner_id="b"),
             _f("exact_duplicate", "c-exact002", "same normalised text as row 9 (id zzz)")]  # another pair
    out = recall(found, planted)
    assert (out["exact_duplicate"]["found"], out["near_duplicate"]["found"]) == (1, 1)
    assert [p["id"] for p in out["exact_duplicate"]["missed"]] == ["c-exact002"]


def test_a_fault_counts_only_for_its_own_check() -> None:
    planted = [{"id": "r1", "kind": "secret", "detail": "AKIA..."}, {"id": "r2", "kind": "pii", "detail": "x"}]
    out = recall([_f("pii", "r1"), _f("pii", "r2")], planted)
    assert out["secret"]["recall"] == 0.0 and out["pii"]["recall"] == 1.0


def test_sample_sees_every_rule_and_is_stable() -> None:
    found = [_f("pii", f"r{i}", rule="pii.URL") for i in range(50)] + [_f("pii", "p", rule="pii.PHONE_NUMBER")]
    first = sample(found, 5, 29)
    assert len(first) == 5 and "pii.PHONE_NUMBER" in {f["rule"] for f in first}
    assert first == sample(list(reversed(found)), 5, 29)
