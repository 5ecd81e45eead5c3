"""near_duplicate, leakage and contamination on small hand-made datasets."""

import json
import random

import yaml

from gate.contract import load_contract
from gate.data.runner import run_checks
from tests.conftest import CONTRACTS, triage_row, write_jsonl

VOCAB = [f"w{i}" for i in range(3000)]


def text(seed, n=60):
    rng = random.Random(seed)
    return " ".join(rng.choice(VOCAB) for _ in range(n))


def edit(t, k, seed):
    rng = random.Random(seed)
    words = t.split()
    for _ in range(k):
        words[rng.randrange(len(words) - 5)] = rng.choice(VOCAB)
    return " ".join(words)


def results(tmp_path, contract, checks):
    run = run_checks(str(tmp_path), contract, checks=checks, progress=False)
    return {r.name: r for r in run.results}


def test_near_duplicates_within_split_and_leakage_across(tmp_path, triage_contract):
    train = [triage_row(i, text(i)) for i in range(50)]
    test = [triage_row(100 + i, text(100 + i)) for i in range(20)]
    train[30] = triage_row(30, edit(train[5]["messages"][1]["content"], 1, 1))  # near dup inside train
    train[40] = triage_row(40, train[6]["messages"][1]["content"].upper())  # exact: exact_duplicate's job
    train[45] = triage_row(45, edit(test[3]["messages"][1]["content"], 1, 2))  # near copy of a test row
    train[46] = triage_row(46, test[4]["messages"][1]["content"])  # exact copy of a test row
    write_jsonl(tmp_path / "train.jsonl", train)
    write_jsonl(tmp_path / "test.jsonl", test)
    res = results(tmp_path, triage_contract, ["near_duplicate", "leakage", "exact_duplicate"])
    assert [(f.split, f.row) for f in res["near_duplicate"].findings] == [("train", 31)]
    assert "near duplicate of row 6" in res["near_duplicate"].findings[0].message
    assert [(f.split, f.row, f.rule) for f in res["leakage"].findings] == [
        ("train", 46, "leakage.near"), ("train", 47, "leakage.exact")]
    assert [(f.split, f.row) for f in res["exact_duplicate"].findings] == [("train", 41)]
    curve = res["near_duplicate"].details["detection_curve"]
    assert curve[0]["jaccard"] == 0.5 and all(0 <= p["p_candidate"] <= 1 for p in curve)


def test_contamination_names_the_evaluation_item(tmp_path):
    suite = tmp_path / "suite.jsonl"
    item = text(999, 30)
    suite.write_text(json.dumps({"id": "q-7", "messages": [{"role": "user", "content": item}]}) + "\n"
                     + json.dumps({"id": "q-8", "prompt": text(998, 30)}) + "\n")
    raw = yaml.safe_load((CONTRACTS / "triage.yaml").read_text())
    raw["evaluation_sets"] = [str(suite)]
    cpath = tmp_path / "c.yaml"
    cpath.write_text(yaml.safe_dump(raw))
    contract = load_contract(cpath)
    train = [triage_row(i, text(i)) for i in range(30)]
    train[12] = triage_row(12, text(5000, 40) + " " + item + " " + text(5001, 40))  # embeds the item
    test = [triage_row(100 + i, text(100 + i)) for i in range(10)]
    train[20] = triage_row(20, text(7000, 50) + " " + " ".join(test[2]["messages"][1]["content"].split()[:20]))
    ds = tmp_path / "ds"
    write_jsonl(ds / "train.jsonl", train)
    write_jsonl(ds / "test.jsonl", test)
    res = results(ds, contract, ["contamination"])["contamination"]
    assert {(f.split, f.row) for f in res.findings} == {("train", 13), ("train", 21)}
    assert "suite.jsonl#q-7" in next(f.message for f in res.findings if f.row == 13)
    assert {d["id"] for d in res.details["contaminated_items"]} == {"q-7", test[2]["id"]}


def test_odd_unicode_and_empty_messages_do_not_crash(tmp_path, triage_contract):
    odd = ["e\u0301\u0301 combining", "\u05e9\u05dc\u05d5\u05dd RTL \u202e reversed", "emoji 👩‍👩‍👧 🧪",
           "zero\u200bwidth", "", " ", "x" * 1_000_000]
    rows = [triage_row(i) for i in range(len(odd))]
    for i, (row, t) in enumerate(zip(rows, odd, strict=True)):
        row["messages"][1]["content"] = t if t in ("", " ") else text(i, 40) + " " + t
    twin = triage_row(50)
    twin["messages"][1]["content"] = rows[3]["messages"][1]["content"].replace("\u200b", "")
    write_jsonl(tmp_path / "train.jsonl", [*rows, twin])
    res = results(tmp_path, triage_contract, ["near_duplicate", "exact_duplicate", "contract", "length"])
    # " " and "" normalise to the same (empty) prompt; the zero-width space is invisible
    dups = [(f.row, f.rule) for f in res["exact_duplicate"].findings]
    assert dups == [(6, "exact_duplicate"), (8, "exact_duplicate")]
    assert {(f.row, f.rule) for f in res["contract"].findings} == {(5, "messages.empty"), (6, "messages.empty")}
    assert [f.row for f in res["length"].findings] == [7]
    assert res["near_duplicate"].findings == []
