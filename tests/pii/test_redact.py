"""Redacted forms and snippets never contain the raw value, even for values the detectors missed."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pytest
from synth import PRIVATE_KEY, SECRETS

from gate.pii import (
    PiiConfig,
    mask_context,
    mask_loose,
    redact_value,
    scan_secrets_texts,
    scan_texts,
    snippet,
    value_snippet,
)

pytest.importorskip("presidio_analyzer")
pytest.importorskip("detect_secrets")


@dataclass(frozen=True)
class Span:
    """A minimal hit for tests."""

    start: int
    end: int
    label: str


@pytest.mark.parametrize(("value", "label", "form"), [
    ("jane.doe@example.com", "EMAIL_ADDRESS", "j***@e***.com"),
    ("+1 415 555 2671", "PHONE_NUMBER", "+1 ***"),
    ("+44 20 7946 0958", "PHONE_NUMBER", "+44 ***"),
    ("(212) 867-5309", "PHONE_NUMBER", "***"),
    ("+4930901820", "PHONE_NUMBER", "***"),
    ("4111 1111 1111 1111", "CREDIT_CARD", "4***"),
    ("DE89370400440532013000", "IBAN_CODE", "DE***"),
    ("https://portal.example.com/u/jane", "URL", "https://p***"),
    ("536-22-1845", "US_SSN", "<US_SSN>"),
    ("Priya Sharma", "PERSON", "<PERSON>"),
    ("221 Baker Street", "ADDRESS", "<ADDRESS>"),
    ("203.0.113.42", "IP_ADDRESS", "<IP_ADDRESS>"),
    ("sk-proj-AbCdEf1234567890GhIjKlMnOpQrStUvWx", "openai_api_key", "sk-p***"),
    ("AKIAIOSFODNN7EXAMPLE", "aws_access_key_id", "AKIA***"),
    ("Tr0ub4dor&3", "password_assignment", "***"),
    (PRIVATE_KEY, "private_key", "<PRIVATE KEY>"),
])
def test_redacted_forms(value: str, label: str, form: str) -> None:
    assert redact_value(value, label) == form
    assert value not in redact_value(value, label)


def test_short_secrets_show_no_prefix() -> None:
    assert redact_value("ab12", "api_key_assignment") == "a***"
    assert redact_value("abc", "slack_token") == "***"


def test_snippet_redacts_every_hit_in_the_window() -> None:
    text = ("Hello, I am Priya Sharma. Mail priya.sharma@example.com or call +1 415 555 2671. "
            "My card 4111 1111 1111 1111 was charged twice for ORD-123456.")
    spans = []
    for value, label in [("Priya Sharma", "PERSON"), ("priya.sharma@example.com", "EMAIL_ADDRESS"),
                         ("+1 415 555 2671", "PHONE_NUMBER"), ("4111 1111 1111 1111", "CREDIT_CARD")]:
        i = text.index(value)
        spans.append(Span(i, i + len(value), label))
    out = snippet(text, spans, width=200)
    # the context too: any word not in the allowlist and any number could be personal (issue 15 item 7, 30 item 2)
    assert out == ("Hello, I am <PERSON>. Mail p***@e***.com or call +1 *** . My card 4*** was charged twice for "
                   "XXX-dddd.").replace(" .", ".")
    narrow = snippet(text, spans[1:2], width=10)
    assert narrow.startswith("…") and narrow.endswith("…") and "p***@e***.com" in narrow
    assert "415" not in narrow  # the window ends at a word boundary, not inside the (unreported) phone number


def test_snippet_masks_pii_the_detectors_missed() -> None:
    text = "ping me: jane.doe@example.com, +49 30 901820 77, token Zx8Kq2Lm9Np4Rs7Tv1WyAb3Cd5Ef, on 2024-06-11"
    out = snippet(text, [])
    for raw in ("jane.doe@example.com", "+49 30 901820 77", "901820", "Zx8Kq2Lm9Np4Rs7Tv1WyAb3Cd5Ef"):
        assert raw not in out
    assert "2024-06-11" not in out and "dddd-dd-dd" in out  # a date may be a date of birth
    assert mask_loose("card 4111 1111 1111 1111") == "card 4*** **** **** ****"
    assert "2024-06-11" in mask_loose("on 2024-06-11")  # the log masker keeps dates readable


def test_snippet_includes_straddling_hits_whole() -> None:
    text = "x" * 50 + " the key is sk-proj-AbCdEf1234567890GhIjKlMnOpQrStUvWx and more text here"
    i = text.index("sk-proj")
    first = Span(51, 54, "PERSON")  # first hit; the key straddles the right edge of its window
    key = Span(i, i + len("sk-proj-AbCdEf1234567890GhIjKlMnOpQrStUvWx"), "openai_api_key")
    out = snippet(text, [first, key], width=10)
    assert "AbCdEf" not in out and "sk-p***" in out
    overlapping = snippet(text, [Span(59, 64, "PERSON"), key], width=10)  # merged, labelled by the longer hit
    assert "AbCdEf" not in overlapping and "<PERSON>" not in overlapping


def test_snippet_is_one_clean_line() -> None:
    text = "line one\nline\ttwo \u202eevil\u202c and jane@example.com\r\n\x00end \ud83d"
    i = text.index("jane@")
    out = snippet(text, [Span(i, i + len("jane@example.com"), "EMAIL_ADDRESS")], width=100)
    assert "\n" not in out and "\t" not in out and "\u202e" not in out and "\x00" not in out
    assert "\ud83d" not in out and "j***@e***.com" in out
    out.encode("utf-8")  # reports are UTF-8 files


def test_no_raw_value_leaks_from_scanned_messages(messages: list) -> None:
    """End to end: every planted PII value and every secret is absent from every snippet of its text."""
    texts = [t for t, _ in messages]
    cfg = PiiConfig(use_ner=False)
    pii = scan_texts(texts, cfg, workers=1)
    for (text, planted), hits in zip(messages, pii, strict=True):
        if not hits:
            continue
        out = snippet(text, hits, width=400)
        for p in planted:
            if p.entity_type in ("PERSON", "LOCATION"):
                continue  # needs the NER model; covered below when installed
            assert text[p.start:p.end] not in out, (p, out)
    secret_texts = [t for t, _, _ in SECRETS] + [f"key:\n{PRIVATE_KEY}\nbye"]
    for text, hits in zip(secret_texts, scan_secrets_texts(secret_texts), strict=True):
        out = snippet(text, hits, width=400)
        for h in hits:
            value = text[h.start:h.end]
            assert value not in out and value[:12] not in out, (value, out)


def test_no_raw_names_leak_with_ner(ner_cfg: PiiConfig, messages: list) -> None:
    texts = [t for t, _ in messages[:120]]
    for (text, _), hits in zip(messages[:120], scan_texts(texts, ner_cfg, workers=1), strict=True):
        out = snippet(text, hits, width=400)
        for h in hits:
            assert text[h.start:h.end] not in out or len(text[h.start:h.end]) < 4


# ------------------------------------------------------------------- issue 15 item 7: the context is masked too

@pytest.mark.parametrize(("text", "gone"), [
    ("Jane Doe, 221 Baker Street, jane@x.org, +44 20 7946 0958, born 1985-03-12",
     ["Jane", "Doe", "Baker", "jane@x.org", "7946", "1985"]),
    ("Hello support, my name is José Müller-Lüdenscheidt from Königs Wusterhausen.",
     ["José", "Müller", "Lüdenscheidt", "Königs"]),
    ("O'Brien and McDonald visited https://www.smith-jones.biz/about and acme-corp.net", ["Brien", "McDonald",
                                                                                         "smith", "acme"]),
    ("cut mid-address jane.doe@exa", ["jane.doe"]),
    ("***Jane*** and **John Smith**", ["Jane", "John", "Smith"]),
    ("Li Wu and Ng called", ["Li", "Wu", "Ng"]),
    ("postcode CB2X 1PW, 75002 Paris", ["CB2X 1PW", "75002", "Paris"]),
])
def test_mask_context_masks_name_like_words_digit_runs_and_shapes(text: str, gone: list[str]) -> None:
    out = mask_context(text)
    for value in gone:
        assert value not in out, (value, out)
    assert mask_context(out) == out  # masking a stored snippet again changes nothing


def test_mask_context_keeps_prose_readable() -> None:
    assert mask_context("The export is stuck at 45% since Tuesday, please help.") == (
        "The export is stuck at dd% since Tuesday, please help.")
    assert mask_context("<PERSON> wrote from j***@e***.com via https://p***") == (
        "<PERSON> wrote from j***@e***.com via https://p***")


def test_snippet_masks_what_the_scan_did_not_report() -> None:
    """Only the e-mail is a hit; the name, the city and the lower-case name from a recall scan are masked too."""
    text = "Contact jane.doe@example.com or ask for Priya in Seattle; my colleague is tomasz nowak."
    i = text.index("jane.doe")
    email = Span(i, i + len("jane.doe@example.com"), "EMAIL_ADDRESS")
    j = text.index("tomasz nowak")
    out = snippet(text, [email], width=200, extra=[(j, j + len("tomasz nowak"), "PERSON")])
    assert out == "Contact j***@e***.com or ask for Xxxxx in Xxxxx; my xxxx is <PERSON>."
    # a recall span overlapping the hit widens it and keeps the hit's own redacted form
    wide = snippet(text, [email], width=200, extra=[(i - 8, i + 8, "ORGANIZATION")])
    assert wide.startswith("C***@e***.com or") and "jane" not in wide


def test_value_snippet_is_the_one_report_snippet() -> None:
    assert value_snippet("my name is jane doe and josé from zürich, Li Wu", words=True) == (
        "m* n*** i* x*** x** a** x*** f*** x***, X* X*")
    long = "x " * 200 + "write to jane.doe@example.com now"
    assert "jane" not in value_snippet(long, 80) and value_snippet(long, 80).endswith("…")


def test_gate_pii_redact_is_the_only_module_that_defines_or_renames_a_masker() -> None:
    """One redaction module: a second one (gate.report.redact once held its own weaker snippet, then aliases) lets
    a value be masked two ways. No module but gate.pii.redact defines a snippet/mask function or re-exports one."""
    import ast

    from tests.conftest import ROOT

    offenders = []
    for path in (ROOT / "gate").rglob("*.py"):
        if path == ROOT / "gate" / "pii" / "redact.py":
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            names = [node.name] if isinstance(node, ast.FunctionDef) else [
                t.id for t in getattr(node, "targets", []) if isinstance(t, ast.Name)]
            offenders += [f"{path.relative_to(ROOT)}:{node.lineno} {n}" for n in names
                          if n.lstrip("_") in ("snippet", "mask", "value_snippet", "mask_loose", "mask_context")]
    assert offenders == []
    assert not (ROOT / "gate" / "report" / "redact.py").exists()


def test_recall_spans_find_what_the_default_scan_leaves_out(ner_cfg: PiiConfig) -> None:
    """The recall scan is the NER model's spans, every label (issue 30 item 3: the pattern recognisers it also ran
    are left to the allowlist of `mask_context`, which shape-masks their digits, e-mails and tokens anyway)."""
    from gate.pii import recall_spans

    text = "Ask in Berlin, or my neighbour Will White, licence D1234567, ip 10.1.2.3 (phone-shaped too)."
    labels = {(text[s:e], lab) for s, e, lab in recall_spans(text, ner_cfg)}
    assert ("Berlin", "LOCATION") in labels and any("White" in v for v, _ in labels)
    assert mask_context("Will White") == "Will White"  # all common words: only the model's span masks them
    assert not any(v in ("D1234567", "10.1.2.3") for v, _ in labels)  # patterns: left to mask_context
    assert "D1234567" not in mask_context(text) and "10.1.2.3" not in mask_context(text)
    assert recall_spans(text, dataclasses.replace(ner_cfg, use_ner=False)) == []  # NER off: nothing loaded or run


def test_recall_scan_runs_only_the_entity_recogniser(ner_cfg: PiiConfig, messages: list) -> None:
    """The recall scan skips the shared token-to-vector layer the small model's recogniser does not listen to (a
    fifth of the scan's CPU in `gate check`), and tags the same spans as the pipeline that runs it."""
    from gate.pii import recall_spans_texts
    from gate.pii.presidio_engine import _recall_nlp
    from gate.pii.spacy_setup import _load_spacy

    nlp = _recall_nlp(ner_cfg.ner_model)
    assert [name for name, _ in nlp.pipeline] == ["ner"]
    with_layer = _load_spacy(ner_cfg.ner_model, ["parser", "senter", "tagger", "attribute_ruler", "lemmatizer"])
    assert "tok2vec" in with_layer.pipe_names
    texts = [t for t, _ in messages[:200]] + ["Ask in Berlin, or my neighbour Will White, on Friday."]
    expected = [sorted({(e.start_char, e.end_char, e.label_) for e in doc.ents}) for doc in with_layer.pipe(texts)]
    got = recall_spans_texts(texts, ner_cfg)
    assert [[(s, e) for s, e, _ in spans] for spans in got] == [[(s, e) for s, e, _ in spans] for spans in expected]
    assert sum(map(len, got)) > 100
