from gate.data.runner import run_checks
from tests.conftest import write_jsonl

SIGNATURE = ("Thank you for contacting the support desk of our company.\nThis message and any attachment are "
             "confidential and intended for the addressee only.\nPlease rate your experience in the survey that "
             "follows this conversation.")
WORDS = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa".split()


def _row(i, answer):
    return {"id": f"tu-{i:06d}", "source": "chat", "customer": f"cus-{i:05d}", "created_at": "2026-01-01T00:00:00Z",
            "language": "en", "messages": [{"role": "system", "content": "be helpful"},
                                           {"role": "user", "content": f"question {i}"},
                                           {"role": "assistant", "content": answer}]}


def _unique(i, n=12):
    return " ".join(WORDS[(i * 7 + k * 3) % len(WORDS)] + str(i) for k in range(n)) + "."


def test_rows_dominated_by_a_repeated_block_are_found(tmp_path, tool_contract):
    rows = [_row(i, _unique(i)) for i in range(30)]
    for i in (4, 9, 14, 19, 24, 29):
        rows[i] = _row(i, _unique(i, 4) + "\n" + SIGNATURE)
    rows[2] = _row(2, _unique(2, 40) + "\n" + SIGNATURE.splitlines()[0])  # a little boilerplate: not dominated
    write_jsonl(tmp_path / "train.jsonl", rows)
    res = run_checks(str(tmp_path), tool_contract, checks=["boilerplate"], progress=False).results[0]
    assert {f.row for f in res.findings} == {5, 10, 15, 20, 25, 30}
    assert res.status == "fail"
    assert res.details["top_segments"][0]["rows"] == 7
    assert "Thank" not in str(res.details)  # snippets are masked


def test_json_answers_are_not_measured(tmp_path, triage_contract):
    write_jsonl(tmp_path / "train.jsonl", [_row(i, '{"a": 1}') for i in range(10)])
    res = run_checks(str(tmp_path), triage_contract, checks=["boilerplate"], progress=False).results[0]
    assert res.status == "skipped" and res.findings == []
