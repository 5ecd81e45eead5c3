"""Scrubbing: typed placeholders, salted hashes, the drop-row signal, counts, and no raw value left behind."""

from __future__ import annotations

import hashlib
import re

import pytest

from gate.pii import PiiConfig, ScrubConfig, anonymize, scan_secrets, scan_texts
from gate.pii.hits import Hit
from gate.pii.secrets import SecretHit

pytest.importorskip("presidio_analyzer")
pytest.importorskip("presidio_anonymizer")
pytest.importorskip("detect_secrets")

TEXT = ("Hi, mail jane.doe@example.com or call +1 415 555 2671. Card 4111 1111 1111 1111, "
        "key sk-proj-AbCdEf1234567890GhIjKlMnOpQrStUvWxYz.")
SALT = "a-salt-of-twenty-chars"


def _hits(text: str) -> list:
    return scan_texts([text], PiiConfig(use_ner=False), workers=1)[0] + scan_secrets(text)


def test_placeholders_and_counts() -> None:
    out = anonymize(TEXT, _hits(TEXT))
    assert out.text == ("Hi, mail <EMAIL_ADDRESS> or call <PHONE_NUMBER>. Card <CREDIT_CARD>, key <SECRET>.")
    assert out.counts == {"CREDIT_CARD": 1, "EMAIL_ADDRESS": 1, "PHONE_NUMBER": 1, "SECRET": 1}
    assert out.drop_row is False


def test_hash_is_salted_and_deterministic() -> None:
    cfg = ScrubConfig(operators=(("EMAIL_ADDRESS", "hash"),), salt=SALT)
    a = anonymize(TEXT, _hits(TEXT), cfg)
    b = anonymize(TEXT + " again jane.doe@example.com", _hits(TEXT + " again jane.doe@example.com"), cfg)
    digest = hashlib.sha256(b"jane.doe@example.com" + SALT.encode()).hexdigest()
    assert digest in a.text and b.text.count(digest) == 2  # the same value keeps the same pseudonym
    other = anonymize(TEXT, _hits(TEXT), ScrubConfig(operators=(("EMAIL_ADDRESS", "hash"),), salt=SALT + "x"))
    assert digest not in other.text
    assert "jane.doe" not in a.text


def test_drop_row_still_replaces() -> None:
    cfg = ScrubConfig(operators=(("SECRET", "drop_row"),))
    out = anonymize(TEXT, _hits(TEXT), cfg)
    assert out.drop_row is True and "sk-proj" not in out.text and "<SECRET>" in out.text


def test_keep_and_secret_kind_override() -> None:
    cfg = ScrubConfig(operators=(("CREDIT_CARD", "keep"), ("openai_api_key", "replace")))
    out = anonymize(TEXT, _hits(TEXT), cfg)
    assert "4111 1111 1111 1111" in out.text and "<openai_api_key>" in out.text
    assert "CREDIT_CARD" not in out.counts


def test_overlapping_hits_leave_nothing_raw() -> None:
    text = "see https://jane.doe@example.com/profile and Jane Doe at 221 Baker Street"
    hits = [Hit("URL", 4, 40, 0.6, "t"), Hit("EMAIL_ADDRESS", 12, 32, 1.0, "t"),
            Hit("PERSON", 45, 53, 0.85, "t"), Hit("ADDRESS", 57, 73, 0.5, "t"), Hit("LOCATION", 61, 73, 0.85, "t")]
    out = anonymize(text, hits)
    for raw in ("jane.doe", "example.com", "Jane Doe", "Baker", "221"):
        assert raw not in out.text, out.text
    assert re.fullmatch(r"see <[A-Z_]+> and <PERSON> at <ADDRESS>", out.text), out.text


def test_no_hits_and_bad_offsets() -> None:
    assert anonymize("nothing here", []).text == "nothing here"
    with pytest.raises(ValueError, match="outside"):
        anonymize("short", [SecretHit("jwt", 2, 40, "gate:jwt")])


def test_scrubbed_messages_contain_no_planted_value(messages: list) -> None:
    texts = [t for t, _ in messages]
    for (text, planted), hits in zip(messages, scan_texts(texts, PiiConfig(use_ner=False), workers=1), strict=True):
        out = anonymize(text, hits).text
        for p in planted:
            if p.entity_type not in ("PERSON", "LOCATION"):
                assert text[p.start:p.end] not in out, (p, out)
