"""Configs are hashable cache keys with a stable text form, and reject values that would silently break a scan."""

from __future__ import annotations

import json

import pytest

from gate.pii import PiiConfig, ScrubConfig, SecretConfig


def test_str_is_stable_canonical_json() -> None:
    a, b = PiiConfig(), PiiConfig()
    assert str(a) == str(b) and hash(a) == hash(b)
    body = json.loads(str(a)[len("PiiConfig"):])
    assert body["use_ner"] is True and "PHONE_NUMBER" in body["entities"]
    assert str(PiiConfig(thresholds=(("PHONE_NUMBER", 0.3),))) != str(a)
    assert str(SecretConfig()) == str(SecretConfig()) and str(SecretConfig(hex_limit=3.5)) != str(SecretConfig())


def test_defaults_follow_the_measurements() -> None:
    cfg = PiiConfig()
    assert cfg.threshold("PHONE_NUMBER") <= 0.4  # presidio scores phones 0.4 without context
    assert {"PERSON", "LOCATION"} <= set(cfg.ner_entities) and "PERSON" not in cfg.entities
    for noisy in ("DATE_TIME", "US_DRIVER_LICENSE", "US_BANK_NUMBER", "UUID", "MEDICAL_LICENSE"):
        assert noisy not in cfg.entities and noisy not in cfg.ner_entities
    assert "py" in cfg.url_file_suffixes
    assert cfg.threshold("SOMETHING_ELSE") == cfg.default_threshold


@pytest.mark.parametrize("kwargs", [
    {"thresholds": (("EMAIL_ADDRESS", 1.5),)}, {"default_threshold": -0.1}, {"chunk_chars": 10},
    {"entities": (), "use_ner": False}, {"pattern_nlp": "stanza"},
])
def test_pii_config_rejects(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        PiiConfig(**kwargs)


def test_secret_config_rejects_bad_limits() -> None:
    with pytest.raises(ValueError):
        SecretConfig(base64_limit=9.0)
    with pytest.raises(ValueError):
        SecretConfig(max_line_chars=10)


def test_scrub_config() -> None:
    with pytest.raises(ValueError, match="salt"):
        ScrubConfig(operators=(("EMAIL_ADDRESS", "hash"),))
    with pytest.raises(ValueError, match="unknown scrub operator"):
        ScrubConfig(default_operator="shred")
    salted = ScrubConfig(operators=(("EMAIL_ADDRESS", "hash"),), salt="pepper-pepper-pepper")
    assert salted.operator("EMAIL_ADDRESS") == "hash" and salted.operator("PERSON") == "replace"
    assert "pepper" not in str(salted)  # the key can be logged
    assert str(salted) != str(ScrubConfig(operators=(("EMAIL_ADDRESS", "hash"),), salt="another-salt-value"))


def test_missing_engine_names_the_extra() -> None:
    from gate.pii.config import require

    with pytest.raises(ImportError, match=r"gate\[pii\]"):
        require("surely_not_an_installed_module_xyz", "surely-not")
    require("json", "json")
