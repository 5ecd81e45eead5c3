"""`conflicting_answers`: one prompt, two answers is reported with both rows and the differing fields; templated rows
(prompts that differ in slot values the answers follow) and rows with nothing in common but the system prompt are
not."""

import copy
import json

from gate.data.checks.conflicting_answers import Answer, answer_similarity, differences
from gate.data.runner import run_checks
from tests.conftest import FIXTURES, triage_row, write_jsonl

TICKET = ("Subject: app crashes on start\nMessage: Since this morning the mobile app closes right after the splash "
          "screen on both of our phones, we reinstalled it twice and the crash is still there every time we open it")


def _run(tmp_path, rows, contract):
    write_jsonl(tmp_path / "train.jsonl", rows)
    run = run_checks(str(tmp_path), contract, checks=["conflicting_answers"], progress=False, workers=1)
    return run.results[0]


def _fixture_rows(kind, split):
    return [json.loads(line) for line in (FIXTURES / kind / f"{split}.jsonl").read_text().splitlines()]


def test_same_ticket_two_severities_is_one_finding_naming_the_field_and_both_values(tmp_path, triage_contract):
    a = {"product": "mobile_app", "severity": "high", "next_action": "escalate_engineering"}
    rows = [triage_row(1, TICKET, a), triage_row(2, "Some other ticket about the invoice of march twice"),
            triage_row(3, TICKET.upper(), {**a, "severity": "low"})]
    res = _run(tmp_path, rows, triage_contract)
    assert [(f.row, f.rule, f.field, f.partner_row, f.partner_id, f.score) for f in res.findings] == [
        (3, "conflicting_answers.field", "severity", 1, "tri-000001", 1.0)]
    assert res.findings[0].snippet == "severity low here, high there"
    assert res.details["pairs"] == [{"row": {"split": "train", "row": 3, "id": "tri-000003"},
                                     "partner": {"split": "train", "row": 1, "id": "tri-000001"},
                                     "prompt_similarity": 1.0, "rule": "conflicting_answers.field",
                                     "fields": ["severity"]}]
    assert res.status == "fail"


def test_same_ticket_same_answer_and_empty_prompts_are_not_conflicts(tmp_path, triage_contract):
    a = {"product": "mobile_app", "severity": "high", "next_action": "escalate_engineering"}
    empty = [triage_row(i, "x", a) for i in (3, 4)]
    for r, sev in zip(empty, ("low", "high"), strict=True):  # no user text: nothing to compare (the contract's)
        r["messages"][1]["content"] = ""
        r["messages"][2]["content"] = json.dumps({**a, "severity": sev})
    res = _run(tmp_path, [triage_row(1, TICKET, a), triage_row(2, TICKET.lower(), a), *empty], triage_contract)
    assert res.findings == [] and res.counts["pairs_compared"] == 1


def test_templated_pair_of_the_fixture_is_left_out_and_another_function_is_a_conflict(tmp_path, tool_contract):
    """tool-use-clean train rows 26 and 62 ask the same thing of orders ORD-618363 and ORD-528944 and look each up:
    the prompts differ in the slot value only and the calls follow it."""
    rows = _fixture_rows("tool-use-clean", "train")
    a, b = rows[25], rows[61]
    res = _run(tmp_path, [a, b], tool_contract)
    assert res.findings == [] and res.counts["templated_pairs"] == 1
    # the same pair where the second row calls another function: not explained by the slot
    b2 = copy.deepcopy(b)
    call = next(m for m in b2["messages"] if m.get("tool_calls"))["tool_calls"][0]["function"]
    call["name"] = "update_ticket"
    res = _run(tmp_path, [a, b2], tool_contract)
    assert [(f.row, f.rule, f.field) for f in res.findings] == [(2, "conflicting_answers.tool_call", "tool_calls[0]")]
    assert "lookup_order" in res.findings[0].snippet and "update_ticket" in res.findings[0].snippet


def test_tool_arguments_compare_after_the_scorer_normalisation(tmp_path, tool_contract):
    a = _fixture_rows("tool-use-clean", "train")[25]
    same = copy.deepcopy(a)
    same["id"] = "tu-999999"
    fn = next(m for m in same["messages"] if m.get("tool_calls"))["tool_calls"][0]["function"]
    fn["arguments"] = json.dumps({"order_id": "ord-618363"})  # bfcl normalisation: lowercase, '-' dropped
    assert _run(tmp_path, [a, same], tool_contract).findings == []
    fn["arguments"] = json.dumps({"order_id": "ORD-618364"})  # same prompt, another order: a conflict
    res = _run(tmp_path, [a, same], tool_contract)
    assert [(f.rule, f.field) for f in res.findings] == [
        ("conflicting_answers.tool_call", "tool_calls[0].lookup_order.order_id")]


def test_clean_fixtures_have_no_conflicts_despite_a_shared_system_prompt(tmp_path, tool_contract):
    """Two different short questions (train rows 263 and 285: cancel an order / sign-in codes) reach Jaccard 0.91 on
    system + user text; the user turns alone decide, so they are no pair."""
    rows = _fixture_rows("tool-use-clean", "train")
    res = _run(tmp_path, [rows[262], rows[284]], tool_contract)
    assert res.findings == [] and res.counts.get("pairs_compared", 0) == 0


def test_planted_conflict_of_the_faulty_fixture_is_found_exactly(triage_contract):
    planted = [f for f in json.loads((FIXTURES / "triage-faulty" / "FAULTS.json").read_text())
               if f["check"] == "conflicting_answers"]
    run = run_checks(str(FIXTURES / "triage-faulty"), triage_contract, checks=["conflicting_answers"],
                     progress=False, workers=1)
    found = run.results[0].findings
    assert [(f.split, f.row) for f in found] == [(p["split"], p["row"]) for p in planted] == [("train", 172)]
    assert found[0].partner_row == 83 and found[0].field == "next_action"
    # values the output schema enumerates are configuration: shown as they are
    assert found[0].snippet == "next_action reply_with_kb here, escalate_engineering there"


def test_free_text_answers_conflict_below_the_answer_threshold():
    def text(t):
        return Answer(None, None, t)
    assert differences(text("positive"), text("negative"), "bfcl", 0.5)[1]
    assert not differences(text("Positive"), text("positive "), "bfcl", 0.5)[1]
    long_a = "Restart the router, wait a minute and then sign in again with your usual password"
    assert answer_similarity(long_a, long_a + " please") > 0.5
    assert not differences(text(long_a), text(long_a + " please"), "bfcl", 0.5)[1]


def test_the_same_question_under_another_system_prompt_is_another_input(tmp_path, triage_contract):
    a = {"product": "mobile_app", "severity": "high", "next_action": "escalate_engineering"}
    one, two = triage_row(1, TICKET, a), triage_row(2, TICKET, {**a, "severity": "low"})
    two["messages"][0]["content"] = ("You answer for the archive team: every ticket here is an old one, closed long "
                                     "ago, and you grade it for a retrospective of how the support queue was run.")
    res = _run(tmp_path, [one, two], triage_contract)
    assert res.findings == [] and res.counts["pairs_compared"] == 1
    two["messages"][0]["content"] = one["messages"][0]["content"]
    assert [f.row for f in _run(tmp_path, [one, two], triage_contract).findings] == [2]


def _text_rows(pairs):
    return [{"id": f"r{i}", "messages": [{"role": "user", "content": q}, {"role": "assistant", "content": a}]}
            for i, (q, a) in enumerate(pairs)]


def _text_contract(tmp_path):
    from gate.contract import load_contract

    (tmp_path / "c.yaml").write_text(json.dumps({"name": "text", "version": "1",
                                                 "messages": {"roles": ["user", "assistant"]}}))
    return load_contract(tmp_path / "c.yaml")


def test_real_data_false_conflicts_and_missed_ones(tmp_path):
    """Issue 29's real-data bench (bench/results/real_data.md), in strings written here in the shapes it found:
    - false: the same question answered by two paraphrases (word 2-gram Jaccard 0.35: FastChat's identity rows, 21
      pairs), and near prompts that ask different things (another number, operator or identifier in the code);
    - missed: the same word problem answered with two numbers ("The answer is 709." / "The answer is 208.": 2-gram
      Jaccard 0.5, so "agreeing"), and "approved" / "not approved"."""
    q = "Who made you and what is your name?"
    rows = _text_rows([
        (q, "I'm a language model called Vega, and I was trained by researchers of the Orbit Lab."),
        (q, "My name is Vega, and I'm a language model developed by the Orbit Lab researchers."),
        ("james has 1222 balloons and amy has 513. how many more does james have?", "The answer is 709."),
        ("James has 1222 balloons and Amy has 513. How many more does James have?", "The answer is 208."),
        ("Was my refund for order 5521 approved?", "Yes, the refund for order 5521 was approved yesterday."),
        ("Was my refund for order 5521 approved?", "No, the refund for order 5521 was not approved yesterday."),
        ("Ann runs 3 laps per minute. How many minutes for 10 laps?", "The answer is 3.333."),
        ("Ann runs 3 laps per minute. How many minutes for 10 laps?", "The answer is 3.33333."),
        ("Fix the bug in this method:\n\npublic int size ( ) { return ( data . size ( ) ) + 1 ; }",
         "public int size ( ) { return data . size ( ) ; }"),
        ("Fix the bug in this method:\n\npublic int size ( ) { return data . size ( ) ; }",
         "public int size ( ) { return data == null ? 0 : data . size ( ) ; }"),
        ("Translate to C#:\n\npublic String join() {return Utils.join(parts.iterator(), \"||\");}",
         "public override string Join(){return Utils.Join(\"||\", parts);}"),
        ("Translate to C#:\n\npublic String join() {return Utils.join(parts.iterator(), \"&&\");}",
         "public override string Join(){return Utils.Join(\"&&\", parts);}"),
        ("Write a C++ function that returns the factorial of a given number.\n5",
         "int f(int n) { return n <= 1 ? 1 : n * f(n - 1); }"),
        ("Implement a C++ function that returns the factorial of a given number.\n5",
         "#include <string>\nstd::string greet() { return \"hello\"; }"),
    ])
    res = _run(tmp_path, rows, _text_contract(tmp_path))
    found = sorted((f.row_id, f.partner_id) for f in res.findings)
    assert found == [("r13", "r12"), ("r3", "r2"), ("r5", "r4")], found
    assert res.counts["different_requests"] == 2
