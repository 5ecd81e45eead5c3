"""Issue 30 item 2: a snippet shows only allowlisted common words and punctuation, every other token as its shape,
so a name, place or number the recognisers missed never reaches any output (report.json/md, junit, the DuckDB
record, the check's HTML page, which the service API and the dashboard read from the same record)."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from gate.pii.redact import common_words, mask_context, shape, snippet, value_snippet
from tests.conftest import gate_inprocess, write_jsonl

#: Values no recogniser needs to find for the masker to hide them: lower case, unusual and non-English.
MISSED = ["naomi", "ryan", "acme", "cambodian", "Ziegelgasse", "19", "Tungata", "Rott", "Höfn", "Mijail", "Adomo",
          "322", "4471", "jodi", "Teresa"]
TEXTS = [
    "hi, this is naomi ryan from acme, i am cambodian. reach me at naomi.ryan@example.com",
    "Please ship to Ziegelgasse 19, Tungata 11 Rott Crossroad, Apt. 322, Höfn; mail mijail@adomo.is",
    '"thanks, Mijail C Adomo" - card ending 4471, write to billing@example.org',
    "Teresa and jodi said: contact jodi@example.net about the refund",
]


def _words(text: str) -> set[str]:
    import re

    return set(re.findall(r"[^\W_]+", text))


@pytest.mark.parametrize("text", TEXTS)
def test_mask_context_shows_only_allowlisted_words(text: str) -> None:
    out = mask_context(text)
    for w in _words(" ".join(t for t in out.split() if "***" not in t)):  # a redacted form keeps its own hint
        assert w.lower() in common_words() or set(w) <= set("Xxd"), (w, out)
    for value in MISSED:
        assert value not in _words(out), (value, out)
    assert mask_context(out) == out


def test_shapes_hide_case_spelling_and_length() -> None:
    assert shape("Ziegelgasse") == shape("Zieg") + "x" == "Xxxxx"
    assert shape("naomi") == "xxxx" and shape("Höfn") == "Xxxx" and shape("+43 660 1234567") == "+dd ddd dddd"
    assert mask_context("hi, this is naomi ryan from acme, i am cambodian.") == (
        "hi, this is xxxx xxxx from xxxx, i am xxxx.")
    assert mask_context("Mijail C Adomo, Ziegelgasse 19") == "Xxxxx X Xxxxx, Xxxxx dd"


def test_a_word_with_an_apostrophe_glued_to_its_end_is_another_word() -> None:
    """The Italian town Onè written "One'" (Faker's it_IT data) showed as the common word "One" plus punctuation."""
    assert mask_context("Thanks Sam! Sent from One', TV.") == "Thanks Xxx! Sent from Xxx', TV."
    assert mask_context("e perche' no") == "x xxxx' no"
    assert mask_context("the users' refund and James' order") == "the users' refund and Xxxxx' order"
    assert mask_context("print('hello world') and 'One' or ('please order')") == (
        "print('hello world') and 'One' or ('please order')")
    for text in ("Sent from One', TV.", "I said 'hi' then One', TV"):
        assert "One'" not in mask_context(text) and mask_context(mask_context(text)) == mask_context(text)


def test_allowlist_has_no_common_names_and_keeps_prose() -> None:
    words = common_words()
    assert 3000 < len(words) < 20000
    for name in ("john", "mary", "naomi", "ryan", "london", "paris", "jordan", "emma", "smith", "garcia", "mark"):
        assert name not in words, name
    for w in ("the", "please", "refund", "invoice", "password", "account", "because", "hi", "order", "phone"):
        assert w in words, w
    header = Path(__file__).resolve().parents[2].joinpath("gate/pii/common_words.txt").read_text().split("\n")[:12]
    assert any("wordfreq" in h for h in header) and any("CC BY-SA 4.0" in h for h in header)


def test_snippet_and_value_snippet_go_through_the_allowlist() -> None:
    text = TEXTS[0]
    i = text.index("naomi.ryan@")
    hit = type("H", (), {"start": i, "end": len(text), "label": "EMAIL_ADDRESS"})()
    out = snippet(text, [hit])
    assert "n***@e***.com" in out and not _words(out) & {"naomi", "ryan", "acme", "cambodian"}
    assert not _words(value_snippet("greetings from höfn, ziegelgasse 19")) & {"höfn", "ziegelgasse", "19"}


CONTRACT = """name: leaks
version: 1
messages:
  roles: [user, assistant]
checks:
  pii:
    use_ner: false
"""


def test_missed_values_reach_no_output(tmp_path: Path) -> None:
    """The whole `gate check`, with a record and the check's HTML page: only the e-mails are detected (no NER),
    the names, places and numbers around them are in no file and no DuckDB column."""
    rows = [{"id": f"r{i}", "messages": [{"role": "user", "content": t}, {"role": "assistant", "content": "ok"}]}
            for i, t in enumerate(TEXTS)]
    write_jsonl(tmp_path / "ds" / "train.jsonl", rows)
    (tmp_path / "c.yaml").write_text(CONTRACT)
    db = tmp_path / "g.duckdb"
    code, out = gate_inprocess("check", str(tmp_path / "ds"), "-c", str(tmp_path / "c.yaml"), "-o",
                               str(tmp_path / "out"), "--db", str(db), "--checks", "pii")
    assert code == 100, out
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    run_id = report["run_id"]
    assert report["findings"] and all(f["snippet"] for f in report["findings"])
    code, out = gate_inprocess("report-html", "--check-run", run_id, "--db", str(db), "-o", str(tmp_path / "html"))
    assert code == 0, out
    con = duckdb.connect(str(db), read_only=True)
    stored = " ".join(str(r[0]) for r in con.execute("SELECT snippet FROM findings").fetchall())
    con.close()
    outputs = {p.name: p.read_text(errors="replace") for p in [*(tmp_path / "out").iterdir(),
                                                               *(tmp_path / "html").rglob("*.html")]}
    outputs["findings.snippet"] = stored
    outputs["report.json snippets"] = " ".join(f["snippet"] for f in report["findings"])
    for name, content in outputs.items():
        found = _words(content)
        for value in MISSED:  # a number may be a count or a time elsewhere in a file: looked for in snippets
            assert value not in found or (value.isdigit() and "snippet" not in name), (value, name)
