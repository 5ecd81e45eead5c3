"""`gate scrub` and `gate check` follow one rule (issue 29, "The scrub" items 1-4): scrub drops exactly the rows the
checks flag with a drop action, on the original text; a row without a finding leaves byte for byte; one value gets
one replacement in every turn of a row; what scrub keeps, check does not report; MANIFEST.json names the rows."""

import json

import pytest
import yaml

from gate.contract import load_contract
from gate.data.runner import run_checks
from gate.data.scrub import scrub_dataset
from gate.pii import ScrubConfig
from gate.pii.hits import Hit

pytest.importorskip("presidio_analyzer")
pytest.importorskip("presidio_anonymizer")
pytest.importorskip("detect_secrets")

DROP_CHECKS = ["contract", "exact_duplicate", "near_duplicate", "leakage", "pii", "secret"]


def _contract(tmp_path, scrub=None, use_ner=False):
    raw = {"name": "scrub-rules", "version": 1, "checks": {"pii": {"use_ner": use_ner}}}
    if scrub is not None:
        raw["scrub"] = scrub
    path = tmp_path / "contract.yaml"
    path.write_text(yaml.safe_dump(raw))
    return load_contract(path)


def _row(rid, user, answer="Thanks, I will look into it and get back to you today."):
    return {"id": rid, "messages": [{"role": "user", "content": user}, {"role": "assistant", "content": answer}]}


def _write(path, rows):
    """JSON with spaces after separators and ASCII escapes: a re-serialised row could not match these bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(json.dumps(r, ensure_ascii=True).encode() + b"\n" for r in rows))
    return path


def _lines(path):
    return {json.loads(x)["id"]: x for x in path.read_bytes().splitlines()}


def test_scrub_drops_exactly_the_rows_check_flags_and_copies_the_rest(tmp_path):
    contract = _contract(tmp_path, scrub={"operators": {"CREDIT_CARD": "drop_row"}})
    train = [
        # the same ticket but for the address: one row each after rewriting, yet no check flags either
        _row("r-mail-1", "Please send the invoice to jane.roe@example.org before friday, thanks"),
        _row("r-mail-2", "Please send the invoice to bob.stone@example.net before friday, thanks"),
        _row("r-exact-1", "The café dashboard export has been broken since the last release"),
        _row("jane.doe@example.com", "The café dashboard export has been broken since the last release"),
        _row("r-near-1", "My order 1182 arrived with a cracked screen and a missing charger cable in the box."),
        _row("r-near-2", "My order 1182 arrived with a cracked screen and a missing charger cable in the box!!"),
        _row("r-empty", "Where is my refund for the duplicate payment on the premium plan?", answer=""),
        _row("r-card", "Card 4111 1111 1111 1111 was charged twice for the yearly renewal fee"),
        _row("r-leak", "How do I rotate the signing certificate of the partner portal integration?"),
        _row("r-clean", "Ünïcode and quotes \"stay\" as they were written in the ticket body"),
    ]
    test = [_row("t-1", "How do I rotate the signing certificate of the partner portal integration?")]
    _write(tmp_path / "ds" / "train.jsonl", train)
    _write(tmp_path / "ds" / "test.jsonl", test)
    run = run_checks(str(tmp_path / "ds"), contract, checks=DROP_CHECKS, progress=False)
    flagged = {f.row_id for r in run.results for f in r.findings if f.row_id}
    drop = [f for r in run.results for f in r.findings  # the drop actions: copies, leaks, empty turns, drop_row
            if f.check in ("exact_duplicate", "near_duplicate", "leakage")
            or f.rule in ("messages.empty", "pii.CREDIT_CARD")]
    expected = {f.row_id for f in drop}
    assert expected == {"jane.doe@example.com", "r-near-2", "r-empty", "r-card", "r-leak"}  # the data's premise

    out = scrub_dataset(str(tmp_path / "ds"), contract, str(tmp_path / "out"))
    kept = _lines(tmp_path / "out" / "train.jsonl") | _lines(tmp_path / "out" / "test.jsonl")
    assert set(kept) == {r["id"] for r in train + test} - expected
    manifest = json.loads((tmp_path / "out" / "MANIFEST.json").read_text())
    listed = {(e["split"], e["row"]) for v in manifest["by_rule"].values() for e in v["dropped"]}
    assert listed == {(f.split, f.row) for f in drop}
    assert sum(len(v["dropped"]) for v in manifest["by_rule"].values()) == len(expected) == out.rows_in - out.rows_out
    assert [e["row"] for e in manifest["by_rule"]["exact_duplicate"]["dropped"]] == [4]
    assert manifest["by_rule"]["messages.empty"]["dropped"][0]["id"] == "r-empty"
    assert manifest["by_rule"]["pii.CREDIT_CARD"]["dropped"][0]["id"] == "r-card"
    assert manifest["by_rule"]["leakage.exact"]["dropped"][0] == {"split": "train", "row": 9, "id": "r-leak"}
    # ids that are contact data are masked with the snippets' helper; line numbers still say which row
    assert "jane.doe@example.com" not in json.dumps(manifest)
    assert manifest["by_rule"]["exact_duplicate"]["dropped"][0]["id"] == "j***@e***.com"
    changed = {e["id"] for e in manifest["by_rule"]["pii.EMAIL_ADDRESS"]["changed"]}
    assert changed == {"r-mail-1", "r-mail-2"}
    # kept (no check flagged it), but named: once rewritten it reads as r-mail-1 does
    assert manifest["identical_after_rewrite"] == [{"split": "train", "row": 2, "id": "r-mail-2"}]
    # a row without a finding leaves as it came, byte for byte; a changed row is one with a finding
    source = _lines(tmp_path / "ds" / "train.jsonl") | _lines(tmp_path / "ds" / "test.jsonl")
    for rid, line in kept.items():
        assert (line == source[rid]) == (rid not in flagged), rid


def test_one_value_one_replacement_in_every_turn():
    from gate.pii import anonymize_texts

    texts = ["My name is Betty Lou and my colleague is Tom Reyes.", "Hello Betty Lou, I will call Tom Reyes."]

    def hit(entity, i, value):
        return Hit(entity, texts[i].index(value), texts[i].index(value) + len(value), 0.85, "spacy")

    # NER missed Tom in the answer, and took Betty there for a place
    hits = [[hit("PERSON", 0, "Betty Lou"), hit("PERSON", 0, "Tom Reyes")], [hit("LOCATION", 1, "Betty Lou")]]
    tags = [r.text for r in anonymize_texts(texts, hits)]
    assert tags == ["My name is <PERSON> and my colleague is <PERSON>.", "Hello <PERSON>, I will call <PERSON>."]
    names = [r.text for r in anonymize_texts(texts, hits, ScrubConfig(default_operator="pseudonym"))]
    assert names == ["My name is <PERSON_1> and my colleague is <PERSON_2>.",
                     "Hello <PERSON_1>, I will call <PERSON_2>."]


def test_scrub_pseudonyms_are_consistent_across_a_conversation_with_ner(tmp_path):
    from gate.pii import PiiConfig, ner_available

    if not ner_available(PiiConfig()):
        pytest.skip("the spaCy NER model is not installed")
    contract = _contract(tmp_path, scrub={"operators": {"PERSON": "pseudonym"}}, use_ner=True)
    # The NER model finds "Michael" only in the question (after "thanks") and "Sarah" only in the answer (after
    # "Dear"); a lone given name in a word problem is not a finding by itself (gate.pii.context), nor is one after
    # "to" in prose ("gives 5 of them to Michael"), so each turn alone would keep one name.
    rows = [_row("w-2", "Sarah has 12 apples and says: thanks Michael, take 5 of them. "
                        "How many apples does Sarah keep?",
                 answer="Dear Sarah, you keep 12 - 5 = 7 apples, and Michael now has 5 apples.")]
    _write(tmp_path / "ds" / "train.jsonl", rows)
    scrub_dataset(str(tmp_path / "ds"), contract, str(tmp_path / "out"))
    out = {json.loads(x)["id"]: [m["content"] for m in json.loads(x)["messages"]]
           for x in (tmp_path / "out" / "train.jsonl").read_bytes().splitlines()}
    question, answer = out["w-2"]
    assert "Sarah" not in str(out["w-2"]) and "Michael" not in str(out["w-2"]), out["w-2"]
    sarah = question.split(" has 12", 1)[0]
    michael = question.split("thanks ", 1)[1].split(",", 1)[0]
    assert {sarah, michael} == {"<PERSON_1>", "<PERSON_2>"}, question  # numbered per row, one tag per value
    assert question.count(sarah) == 2 and answer.startswith(f"Dear {sarah}, you keep"), (question, answer)
    assert f"{michael} now has" in answer, answer


def test_what_scrub_keeps_check_does_not_fail_on_and_the_recheck_passes(tmp_path):
    contract = _contract(tmp_path, scrub={"operators": {"URL": "keep"}})
    rows = [_row("u-1", "The setup guide at https://docs.acme-corp.net/setup/agents says to restart the agent"),
            _row("u-2", "Mail the logs to ops.team@example.org and restart the ingestion worker tonight"),
            _row("u-3", "What does the error code E42 on the status page mean?", answer="  ")]
    _write(tmp_path / "ds" / "train.jsonl", rows)
    run = run_checks(str(tmp_path / "ds"), contract, checks=["pii"], progress=False)
    (pii,) = run.results
    assert {f.rule for f in pii.findings} == {"pii.EMAIL_ADDRESS"} and pii.counts["kept_by_scrub_rule"] == 1
    scrub_dataset(str(tmp_path / "ds"), contract, str(tmp_path / "out"))
    text = (tmp_path / "out" / "train.jsonl").read_text()
    assert "https://docs.acme-corp.net/setup/agents" in text and "ops.team" not in text and "u-3" not in text
    recheck = run_checks(str(tmp_path / "out"), contract, checks=DROP_CHECKS, progress=False)
    assert {r.name: [f.rule for f in r.findings] for r in recheck.results} == {n: [] for n in DROP_CHECKS}
    assert recheck.verdict == "pass"


def test_a_rule_scrub_keeps_is_info_for_check_and_stays_in_the_scrubbed_copy(tmp_path):
    contract = _contract(tmp_path, scrub={"operators": {"messages.empty": "keep"}})
    _write(tmp_path / "ds" / "train.jsonl", [_row("e-1", "Is the status page down again?", answer=""),
                                             _row("e-2", "How do I export the audit log as CSV?")])
    (res,) = run_checks(str(tmp_path / "ds"), contract, checks=["contract"], progress=False).results
    assert [(f.rule, f.severity) for f in res.findings] == [("messages.empty", "info")] and res.status != "fail"
    out = scrub_dataset(str(tmp_path / "ds"), contract, str(tmp_path / "out"))
    assert out.rows_out == 2 and not out.dropped


def test_a_column_rule_set_to_drop_row_drops_the_rows_the_contract_check_flags(tmp_path):
    raw = {"name": "cols", "version": 1, "checks": {"pii": {"use_ner": False}},
           "fields": {"id": {"type": "string", "pattern": "^k-[0-9]+$"}},
           "scrub": {"operators": {"field.pattern": "drop_row"}}}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(raw))
    contract = load_contract(tmp_path / "c.yaml")
    _write(tmp_path / "ds" / "train.jsonl", [_row("k-1", "Reset my router password please"),
                                             _row("bad id", "The fan of the server rack is loud")])
    (res,) = run_checks(str(tmp_path / "ds"), contract, checks=["contract"], progress=False).results
    assert [(f.rule, f.row) for f in res.findings] == [("field.pattern", 2)]
    out = scrub_dataset(str(tmp_path / "ds"), contract, str(tmp_path / "out"))
    assert out.dropped == {"field.pattern": 1} and list(_lines(tmp_path / "out" / "train.jsonl")) == ["k-1"]
