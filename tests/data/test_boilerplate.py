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


#: The header every Java/C++ answer repeats (issue 29, Code Alpaca: such rows were flagged as boilerplate).
_HEADER = ["#include <bits/stdc++.h>", "using namespace std;", "import java.util.Scanner;",
           "import java.util.ArrayList;", "public static void main(String[] args) {",
           "Scanner sc = new Scanner(System.in);"]


def test_code_lines_are_not_boilerplate(tmp_path, tool_contract):
    """Rows whose answers share only code (fenced or not) are not dominated by boilerplate; rows sharing a
    prose signature in the same set still are."""
    rows = []
    for i in range(30):
        code = "\n".join([*_HEADER, f"    System.out.println({i} * x{i});", "}"])
        rows.append(_row(i, f"Sure, here it is {WORDS[i % 16]}{i}:\n```java\n{code}\n```" if i % 2 else code))
    for i in (3, 8, 13, 18, 23, 28):
        rows[i] = _row(i, _unique(i, 4) + "\n" + SIGNATURE)
    write_jsonl(tmp_path / "train.jsonl", rows)
    res = run_checks(str(tmp_path), tool_contract, checks=["boilerplate"], progress=False).results[0]
    assert {f.row for f in res.findings} == {4, 9, 14, 19, 24, 29}, [(f.row, f.message) for f in res.findings]


def test_a_finding_quotes_its_repeated_line_masked(tmp_path, tool_contract):
    """A finding said "N% is boilerplate" without the line: the reader could not see what repeats."""
    from gate.data.text import normalize
    from gate.pii.redact import value_snippet

    rows = [_row(i, _unique(i)) for i in range(10)] + [_row(i, _unique(i, 4) + "\n" + SIGNATURE) for i in
                                                         range(10, 16)]
    write_jsonl(tmp_path / "train.jsonl", rows)
    res = run_checks(str(tmp_path), tool_contract, checks=["boilerplate"], progress=False).results[0]
    longest = max(SIGNATURE.splitlines(), key=len)
    assert [f.snippet for f in res.findings] == [value_snippet(normalize(longest), 60, words=True)] * 6
    assert all("in 6 rows" in f.message for f in res.findings), res.findings[0].message
    assert all("confidential" not in f.snippet for f in res.findings)  # masked, as the report's snippets
