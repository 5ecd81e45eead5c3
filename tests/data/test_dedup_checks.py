"""near_duplicate, leakage and contamination on small hand-made datasets."""

import json
import random

import pytest
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
    # issue 33 item 9: the finding (and so the dashboard's cluster) shows the row's text, redacted
    assert res["near_duplicate"].findings[0].snippet  # the row's text, redacted (below, on readable text)
    assert [(f.split, f.row, f.rule) for f in res["leakage"].findings] == [
        ("train", 46, "leakage.near"), ("train", 47, "leakage.exact")]
    assert [(f.split, f.row) for f in res["exact_duplicate"].findings] == [("train", 41)]
    curve = res["near_duplicate"].details["detection_curve"]
    assert curve[0]["jaccard"] == 0.5 and all(0 <= p["p_candidate"] <= 1 for p in curve)


def test_a_near_duplicate_finding_quotes_its_row_redacted(tmp_path, triage_contract):
    """Issue 33 item 9: clusters listed row ids with no text; the finding now carries the row's text, redacted
    like every quoted value (common words kept, an e-mail masked)."""
    body = ("The calendar sync stopped working after the last update and every meeting I add on the phone is "
            "missing on the laptop, please write back to jane.roe@example.org with the steps to restore it; "
            + text(99, 40) + " today")
    rows = [triage_row(i, text(i)) for i in range(10)]
    rows[2], rows[7] = triage_row(2, body), triage_row(7, body.replace("today", "soon"))
    write_jsonl(tmp_path / "train.jsonl", rows)
    (f,) = results(tmp_path, triage_contract, ["near_duplicate"])["near_duplicate"].findings
    assert f.row == 8 and "jane.roe@example.org" not in f.snippet and "j***@e***.org" in f.snippet
    assert "stopped working after the last update" in f.snippet and len(f.snippet) <= 161


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


def test_contamination_findings_carry_the_matched_item_and_similarity(tmp_path):
    """Like near_duplicate's, a contamination finding fills its evidence fields: partner_id is the matched evaluation
    item ("source#id"), partner_row its line when it is a row of an evaluation split, score the match's similarity
    (the fields were None before)."""
    item = text(999, 30)
    contract = _contract_with(tmp_path, [{"id": "q-7", "messages": [{"role": "user", "content": item}]}])
    test = [triage_row(100 + i, text(100 + i)) for i in range(10)]
    train = [triage_row(i, text(i)) for i in range(20)]
    train[4] = triage_row(4, text(5000, 40) + " " + item + " " + text(5001, 40))  # embeds the suite item
    train.append(dict(test[6], id="copy-6"))  # a verbatim copy of test row 7
    ds = tmp_path / "ds"
    write_jsonl(ds / "train.jsonl", train)
    write_jsonl(ds / "test.jsonl", test)
    by_row = {f.row: f for f in results(ds, contract, ["contamination"])["contamination"].findings}
    assert set(by_row) == {5, 21}
    suite_hit, copy = by_row[5], by_row[21]
    assert suite_hit.partner_id is not None and suite_hit.partner_id.endswith("suite.jsonl#q-7")
    assert suite_hit.partner_row is None and suite_hit.score == 1.0
    assert copy.partner_id == f"split:test#{test[6]['id']}" and copy.partner_row == 7 and copy.score == 1.0
    assert set(suite_hit.to_dict()) >= {"partner_row", "partner_id", "score"}


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


PUBLIC = __import__("pathlib").Path(__file__).parent / "public"


def _contract_with(tmp_path, suite_rows=None, **contamination):
    raw = yaml.safe_load((CONTRACTS / "triage.yaml").read_text())
    raw["evaluation_sets"] = []
    if suite_rows is not None:
        suite = tmp_path / "suite.jsonl"
        suite.write_text("".join(json.dumps(r) + "\n" for r in suite_rows))
        raw["evaluation_sets"] = [str(suite)]
    if contamination:
        raw.setdefault("checks", {})["contamination"] = contamination
    cpath = tmp_path / "c.yaml"
    cpath.write_text(yaml.safe_dump(raw))
    return load_contract(cpath)


def test_contamination_alone_finds_verbatim_copies_of_test_rows(tmp_path):
    """Issue 15.14: copies of test rows were skipped "for leakage" even when `leakage` was not running."""
    contract = _contract_with(tmp_path)
    test = [triage_row(100 + i, text(100 + i)) for i in range(10)]
    train = [triage_row(i, text(i)) for i in range(20)] + [dict(test[k], id=f"copy-{k}") for k in (1, 4, 7)]
    ds = tmp_path / "ds"
    write_jsonl(ds / "train.jsonl", train)
    write_jsonl(ds / "test.jsonl", test)
    alone = results(ds, contract, ["contamination"])["contamination"]
    assert [(f.split, f.row) for f in alone.findings] == [("train", 21), ("train", 22), ("train", 23)]
    assert alone.status == "fail"
    assert f"split:test#{test[4]['id']}" in alone.findings[1].message
    both = results(ds, contract, ["contamination", "leakage"])
    assert both["contamination"].findings == []  # leakage runs: the copies are its findings
    assert [f.row for f in both["leakage"].findings] == [21, 22, 23]


def test_min_shared_is_honoured_for_suite_items(tmp_path):
    """Issue 15.15: `min_shared: 5` still flagged suite items sharing one 13-gram."""
    item = {"id": "q-1", "prompt": text(900, 30)}
    one = " ".join(item["prompt"].split()[:13])  # exactly one shared 13-gram
    many = " ".join(item["prompt"].split()[:20])  # eight
    train = [triage_row(i, text(i)) for i in range(10)]
    train[3] = triage_row(3, text(5000, 40) + " " + one + " " + text(5001, 40))
    train[6] = triage_row(6, text(5002, 40) + " " + many + " " + text(5003, 40))
    write_jsonl(tmp_path / "ds" / "train.jsonl", train)
    default = results(tmp_path / "ds", _contract_with(tmp_path, [item]), ["contamination"])["contamination"]
    assert [f.row for f in default.findings] == [4, 7]
    assert "1 shared 13-gram(s)" in default.findings[0].message
    strict = results(tmp_path / "ds", _contract_with(tmp_path, [item], min_shared=5),
                     ["contamination"])["contamination"]
    assert [f.row for f in strict.findings] == [7]
    assert "8 shared 13-gram(s)" in strict.findings[0].message


def _nq(name):
    return [json.loads(line) for line in (PUBLIC / name).read_text().splitlines()]


def test_short_public_questions_are_found_inside_longer_training_rows(tmp_path):
    """Issue 15.16: on NQ-open questions (real, 8 to 22 words, most under 13) planted with a prefix, an answer
    sentence or a worked answer, every one is found; 300 other NQ questions as training rows give no finding."""
    suite = _nq("nq_open_sample.jsonl")
    items = [{"id": f"nq-{i}", "prompt": q["question"], "answer": q["answer"][0]} for i, q in enumerate(suite)]
    assert sum(len(q["question"].split()) < 13 for q in suite) >= 80
    shapes = ["Please answer: {q}", "{q}? The answer is {a}.", "Question: {q}\nLet me think step by step. "
              "Several sources agree on this, and after checking them the answer is {a}.", "Q: {q} A:"]
    train = []
    for i, q in enumerate(suite):
        body = shapes[i % len(shapes)].format(q=q["question"], a=q["answer"][0])
        train.append(triage_row(i, body))
    negatives = _nq("nq_open_dev_101_400.jsonl")
    train += [triage_row(1000 + i, f"Please answer: {q['question']}") for i, q in enumerate(negatives)]
    write_jsonl(tmp_path / "ds" / "train.jsonl", train)
    res = results(tmp_path / "ds", _contract_with(tmp_path, items), ["contamination"])["contamination"]
    assert sorted(f.row for f in res.findings) == list(range(1, 101))
    assert {d["id"] for d in res.details["contaminated_items"]} == {it["id"] for it in items}
    short = next(f for f in res.findings if f.row == 1)  # "the last time la dodgers won the world series"
    assert "nq-0" in short.message and "contains its 9-word prompt" in short.message
    assert "13-gram" not in short.message


def test_short_answers_alone_are_not_contamination(tmp_path):
    """A short answer ("1988") or a shared label is never matched alone; nor is a prompt under `min_words`."""
    items = [{"id": "a", "prompt": "the last time la dodgers won the world series", "answer": "1988"},
             {"id": "b", "prompt": "who won in 1988"}]
    train = [triage_row(i, t) for i, t in enumerate(["It happened in 1988.", "Nobody knows who won in 1988 at all",
                                                      "the last time la dodgers won the series"])]
    write_jsonl(tmp_path / "ds" / "train.jsonl", train)
    res = results(tmp_path / "ds", _contract_with(tmp_path, items), ["contamination"])["contamination"]
    assert res.findings == []


def test_a_minhash_only_hit_says_what_matched(tmp_path):
    """Issue 15.17: a near copy with no 13-gram said "shares 1 13-gram(s)"."""
    row = triage_row(0, "thank you, very much!")
    # a 4-word prompt (under min_words) and an 8-word answer: no 13-gram, no containment; only MinHash sees it
    items = [{"id": "t-1", "prompt": "Thank you very much", "answer": row["messages"][2]["content"]}]
    train = [row, triage_row(1, text(1))]
    write_jsonl(tmp_path / "ds" / "train.jsonl", train)
    res = results(tmp_path / "ds", _contract_with(tmp_path, items), ["contamination"])["contamination"]
    assert [f.row for f in res.findings] == [1]
    msg = res.findings[0].message
    assert "near copy, Jaccard 1.00" in msg and "gram" not in msg, msg


def test_exact_and_near_duplicates_share_one_normaliser(tmp_path, triage_contract):
    """Issue 15.20: "Hello world" and "Hello\u200e world" were near (J 1.00) but not exact duplicates."""
    from gate.data.text import normalize
    from gate.dedup.shingles import ShingleConfig
    from gate.dedup.shingles import normalize as shingle_normalize

    odd = ["\u200e", "\u200f", "\u2066", "\u2069", "\u202e", "\ufeff", "\u00ad", "\u200b", "\x00", "\x07", "\x7f",
           "\u00a0", "\u2003", "\u3000", "\x1c", "\u0085", "ﬁ", "Ä", "ß", "\t", "\n", "é"]
    rng = random.Random(3)
    for _ in range(500):
        t = "".join(rng.choice(odd + ["a", "B", " ", ",", "x"]) for _ in range(rng.randrange(1, 30)))
        assert normalize(t) == shingle_normalize(t, ShingleConfig(strip_punct=False)), repr(t)
    base = text(1, 30)
    rows = [triage_row(0, "Hello world " + base), triage_row(1, "Hello\u200e world " + base),
            triage_row(2, "Hello\u2066 world\u2069 " + base.replace(" ", "\x07 ", 1)), triage_row(3, text(2, 30))]
    write_jsonl(tmp_path / "train.jsonl", rows)
    res = results(tmp_path, triage_contract, ["exact_duplicate", "near_duplicate"])
    assert [f.row for f in res["exact_duplicate"].findings] == [2, 3]
    assert res["near_duplicate"].findings == []  # exact copies are exact_duplicate's


def _chain(seed=77, length=6):
    """Rows A0..A5, each one word edit (at a fresh position) from the one before: consecutive pairs have Jaccard
    ~0.84 on 5-word shingles, rows two apart ~0.70, so union-find links all six although A0 and A5 are far apart."""
    rng = random.Random(seed)
    words = text(seed, 60).split()
    out = [" ".join(words)]
    for k in range(1, length):
        words[10 * k - 5] = rng.choice(VOCAB) + "x"
        out.append(" ".join(words))
    return out


def _row_texts(contract):
    """The text the checks compare (user and assistant turns) of the chain rows, by line."""
    from gate.data.text import row_text

    return {3 + k: row_text(triage_row(500 + k, t), contract.text_roles) for k, t in enumerate(_chain())}


def _chain_dataset(tmp_path, keep=None):
    raw = yaml.safe_load((CONTRACTS / "triage.yaml").read_text())
    if keep:
        raw.setdefault("checks", {})["near_duplicate"] = {"keep": keep}
    cpath = tmp_path / f"c-{keep}.yaml"
    cpath.write_text(yaml.safe_dump(raw))
    rows = [triage_row(i, text(i)) for i in range(10)]
    rows[2:2] = [triage_row(500 + k, t) for k, t in enumerate(_chain())]  # lines 3..8
    write_jsonl(tmp_path / "ds" / "train.jsonl", rows)
    return load_contract(cpath), tmp_path / "ds"


def test_star_keep_drops_only_rows_near_a_kept_row_and_cites_the_verified_pair(tmp_path):
    """Issue 15.18/19: findings cited the cluster's kept row even below the threshold (J 0.66 at 0.8); union-find
    chains dropped rows near nothing kept. Default `star`: A1, A3, A5 go (each near a kept row), A2 and A4 stay."""
    from gate.data.neardup import exact_pair_jaccard, neardup_config

    contract, ds = _chain_dataset(tmp_path)
    res = results(ds, contract, ["near_duplicate"])["near_duplicate"]
    texts = _row_texts(contract)
    assert [f.row for f in res.findings] == [4, 6, 8]
    assert [f.partner_row for f in res.findings] == [3, 5, 7]
    cfg = neardup_config(contract)
    for f in res.findings:
        j = exact_pair_jaccard(texts[f.row], texts[f.partner_row], cfg)
        assert f.score == pytest.approx(j, abs=1e-6) and j >= 0.8
        assert f"Jaccard {j:.2f}" in f.message and f"near duplicate of row {f.partner_row} " in f.message
        assert (f.cluster_id, f.cluster_size) == ("train:3", 6) and "kept row 3" in f.message
        assert f.partner_id == f"tri-{500 + f.partner_row - 3:06d}"
    assert res.details["keep"] == "star" and res.details["max_hops_from_kept"] == 1


def test_chain_keep_drops_the_closure_and_reports_hops(tmp_path):
    from gate.data.neardup import exact_pair_jaccard, neardup_config

    contract, ds = _chain_dataset(tmp_path, keep="chain")
    res = results(ds, contract, ["near_duplicate"])["near_duplicate"]
    texts = _row_texts(contract)
    assert [f.row for f in res.findings] == [4, 5, 6, 7, 8]
    cfg = neardup_config(contract)
    for f in res.findings:  # every cited pair is a verified one, at or above the threshold
        assert exact_pair_jaccard(texts[f.row], texts[f.partner_row], cfg) >= 0.8 <= f.score
        assert "hop(s) from it" in f.message and f.cluster_size == 6
    assert exact_pair_jaccard(texts[3], texts[8], cfg) < 0.5  # what `chain` drops: far from the kept row
    assert res.details["keep"] == "chain" and res.details["max_hops_from_kept"] == 5


def test_scrub_uses_the_keep_rule(tmp_path):
    from gate.data.scrub import scrub_dataset

    for keep, dropped in ((None, 3), ("chain", 5)):
        contract, ds = _chain_dataset(tmp_path, keep=keep)
        out = scrub_dataset(str(ds), contract, str(tmp_path / f"out-{keep}"))
        assert out.dropped["near_duplicate"] == dropped
        assert out.rows_out == 16 - dropped


def test_unknown_keep_rule_is_a_contract_error(tmp_path):
    import subprocess
    import sys

    contract, ds = _chain_dataset(tmp_path)
    raw = yaml.safe_load((CONTRACTS / "triage.yaml").read_text())
    raw["checks"] = {"near_duplicate": {"keep": "tree"}}
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(raw))
    res = subprocess.run([sys.executable, "-m", "gate", "check", str(ds), "-c", str(tmp_path / "bad.yaml"),
                          "--checks", "near_duplicate", "--no-db", "-o", str(tmp_path / "rep")],
                         capture_output=True, text=True)
    assert res.returncode == 1 and "Traceback" not in res.stderr
    assert "keep" in res.stderr and "bad.yaml" in res.stderr


def test_near_duplicate_evidence_in_report_json_and_duckdb_with_migration(tmp_path):
    """The structured fields reach report.json and the DuckDB findings table, also in a record made by schema 1."""
    import duckdb

    from tests.conftest import run_gate

    _, ds = _chain_dataset(tmp_path)
    db = tmp_path / "g.duckdb"
    con = duckdb.connect(str(db))  # a schema-1 record, as gate made it before the bump
    con.execute("""CREATE TABLE findings (run_id VARCHAR, "check" VARCHAR, split VARCHAR, "row" BIGINT,
                   field VARCHAR, rule VARCHAR, severity VARCHAR, message VARCHAR, snippet VARCHAR, row_id VARCHAR)""")
    con.execute("INSERT INTO findings VALUES ('old', 'contract', 'train', 1, 'x', 'r', 'error', 'm', NULL, NULL)")
    con.close()
    res = run_gate("check", str(ds), "-c", str(CONTRACTS / "triage.yaml"), "--checks", "near_duplicate",
                   "-o", str(tmp_path / "rep"), "--db", str(db))
    assert res.returncode == 100, res.stderr
    report = json.loads((tmp_path / "rep" / "report.json").read_text())
    got = [(f["row"], f["partner_row"], f["cluster_id"], f["cluster_size"]) for f in report["findings"]]
    assert got == [(4, 3, "train:3", 6), (6, 5, "train:3", 6), (8, 7, "train:3", 6)]
    assert all(f["score"] >= 0.8 and f["partner_id"].startswith("tri-") for f in report["findings"])
    con = duckdb.connect(str(db), read_only=True)
    rows = con.execute('SELECT "row", partner_row, partner_id, score, cluster_id, cluster_size FROM findings '
                       "WHERE \"check\" = 'near_duplicate' ORDER BY \"row\"").fetchall()
    assert [(r[0], r[1], r[4], r[5]) for r in rows] == got and all(r[3] >= 0.8 for r in rows)
    assert con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("2",)
    assert con.execute("SELECT count(*) FROM findings WHERE run_id = 'old'").fetchone() == (1,)


def test_star_keep_equals_a_brute_force_greedy_on_templated_clusters(tmp_path, triage_contract):
    """The vectorised rounds of `star` give exactly the greedy rule: in line order, a row is dropped iff some row
    kept before it is within the threshold (checked here pair by pair with exact Jaccard), else it is kept."""
    from gate.data.checks.near_duplicate import NearDuplicateCheck
    from gate.data.neardup import exact_pair_jaccard
    from gate.data.text import row_text

    rng = random.Random(11)
    rows = []
    for b in range(25):
        base = text(3000 + b, 60)
        for v in range(rng.randrange(1, 9)):
            rows.append(triage_row(len(rows), edit(base, rng.randrange(1, 4), 100 * b + v) if v else base))
    rng.shuffle(rows)
    write_jsonl(tmp_path / "train.jsonl", rows)
    check = NearDuplicateCheck(triage_contract)
    res = results(tmp_path, triage_contract, ["near_duplicate"])["near_duplicate"]
    texts = [row_text(r, triage_contract.text_roles) for r in rows]
    cfg = check._config
    # brute force over every row (not only clustered ones): candidates are all earlier kept rows
    from gate.data.text import normalize

    expected, kept, seen = {}, [], set()
    for i, t in enumerate(texts):
        if normalize(t) in seen:
            continue  # an exact copy: exact_duplicate's
        seen.add(normalize(t))
        near = [k for k in kept if exact_pair_jaccard(t, texts[k], cfg) >= cfg.threshold]
        if near:
            expected[i + 1] = near
        else:
            kept.append(i)
    got = {f.row: f.partner_row for f in res.findings}
    assert set(got) == set(expected) and len(got) > 20
    assert all(got[r] - 1 in expected[r] for r in got)  # the cited partner is one of the kept rows near it


def test_the_check_reports_the_buckets_it_split_and_still_finds_the_copy(tmp_path, triage_contract):
    # 150 rows of one template (one slot word differs, J ~0.8): a band holds ~40 % of them, so its buckets are over
    # split_bucket (32) and are joined by the exact prefix filter, which the report must count
    base = text(7, 50).split()
    rows = []
    for i in range(150):
        words = list(base)
        words[25] = f"slot{i}"
        rows.append(triage_row(i, " ".join(words)))
    write_jsonl(tmp_path / "train.jsonl", rows)
    res = results(tmp_path, triage_contract, ["near_duplicate"])["near_duplicate"]
    counters = res.details["counters"]
    assert counters["split_buckets"] > 0, counters
    assert counters["clusters"] == 1 and counters["rows_in_clusters"] == 150


def test_a_cluster_size_is_stated_as_the_lower_bound_the_verified_pairs_give(tmp_path):
    """Issue 32 item 5: a cluster was reported with 79 rows where the true component had 80 (LSH missed every pair of
    one member) and each finding stated 79 as exact. Here LSH (seed 1, 128 permutations, 0.7) misses both pairs of
    row 3 (Jaccard 0.74 and 0.71 with rows 1 and 2): the finding says the size is at least 2, and details say why."""
    from gate.data.neardup import exact_pair_jaccard, neardup_config
    from gate.data.text import row_text

    raw = yaml.safe_load((CONTRACTS / "triage.yaml").read_text())
    raw.setdefault("checks", {})["near_duplicate"] = {"threshold": 0.7}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(raw))
    contract = load_contract(tmp_path / "c.yaml")
    rng = random.Random(7)
    a = [rng.choice(VOCAB) for _ in range(200)]
    b, c = list(a), list(a)
    b[100] = "zz"
    for k in random.Random(550).sample(range(10, 190), 6):
        c[k] = f"q550x{k}"
    rows = [triage_row(i, " ".join(w)) for i, w in enumerate((a, b, c))]
    write_jsonl(tmp_path / "ds" / "train.jsonl", rows)
    res = results(tmp_path / "ds", contract, ["near_duplicate"])["near_duplicate"]
    texts = [row_text(r, contract.text_roles, contract.include_tool_calls) for r in rows]
    cfg = neardup_config(contract)
    assert exact_pair_jaccard(texts[0], texts[2], cfg) >= 0.7 and exact_pair_jaccard(texts[1], texts[2], cfg) >= 0.7
    (f,) = res.findings  # the true component has 3 rows; LSH proposed only rows 1 and 2
    assert f.row == 2 and f.cluster_size == 2
    assert "cluster train:1 of at least 2 row(s) (joined by verified pairs)" in f.message, f.message
    assert res.details["cluster_size"].startswith("a lower bound")
