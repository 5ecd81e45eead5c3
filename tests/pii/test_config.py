"""Configs are hashable cache keys with a stable text form, and reject values that would silently break a scan."""

from __future__ import annotations

import json
import re

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


# ---------------------------------------------------------------- issue 15 items 9, 10: every entity, no typo passes

def test_recogniser_table_is_presidios_own() -> None:
    """The static table (what a contract is validated against) is exactly presidio's local recognisers."""
    import inspect

    pytest.importorskip("presidio_analyzer")
    from presidio_analyzer import predefined_recognizers as predefined

    from gate.pii.config import PRESIDIO_RECOGNIZERS

    found = {}
    for name in predefined.__all__:
        cls = getattr(predefined, name)
        module = getattr(cls, "__module__", "")
        if not inspect.isclass(cls) or any(p in module for p in (".ner.", "third_party", "nlp_engine")):
            continue  # model-backed or cloud recognisers: not pattern entities
        found[cls(supported_language="en").supported_entities[0]] = name
    assert found == PRESIDIO_RECOGNIZERS


def test_every_known_entity_can_be_opted_in() -> None:
    """`US_DRIVER_LICENSE` and `DATE_TIME` crashed the check ("no pattern recogniser"); all 90+ now build and scan,
    and the fast path still equals presidio's plain analyze() loop with all of them on."""
    pytest.importorskip("presidio_analyzer")
    from gate.pii import scan_text, scan_texts
    from gate.pii.config import KNOWN_PATTERN_ENTITIES

    cfg = PiiConfig(use_ner=False, entities=KNOWN_PATTERN_ENTITIES)
    texts = ["My licence is D1234567 since 2024-01-05; NHS 401 023 2137; MAC 00:1B:44:11:3A:B7.",
             "Ticket TCK-40447 is still open after v1.17.5, call +44 20 7946 0958.", ""]
    fast = scan_texts(texts, cfg, workers=1)
    assert fast == [scan_text(t, cfg) for t in texts]
    kinds = {h.entity_type for h in fast[0]}
    assert {"US_DRIVER_LICENSE", "DATE_TIME", "UK_NHS", "MAC_ADDRESS"} <= kinds, kinds
    assert PiiConfig(entities=("EMAIL_ADDRESS", "US_DRIVER_LICENSE", "DATE_TIME")).entities[-1] == "DATE_TIME"


@pytest.mark.parametrize(("kwargs", "says"), [
    ({"ner_entities": ("PERSN", "LOCATON")}, "unknown entity 'PERSN' under ner_entities (did you mean 'PERSON'?)"),
    ({"ner_entities": ("IBAN_CODE",)}, "IBAN_CODE is found by a pattern recogniser"),
    ({"entities": ("US_DRIVER_LICENCE",)}, "did you mean 'US_DRIVER_LICENSE'?"),
    ({"entities": ("PERSON",)}, "PERSON is found by the NER model"),
])
def test_impossible_entities_are_refused(kwargs: dict, says: str) -> None:
    with pytest.raises(ValueError, match=re.escape(says)):
        PiiConfig(**kwargs)


def test_fireable_ner_entities_follow_presidios_mapping() -> None:
    from gate.pii.config import FIREABLE_NER_ENTITIES, NER_CONF

    assert FIREABLE_NER_ENTITIES == ("DATE_TIME", "LOCATION", "NRP", "ORGANIZATION", "PERSON")
    assert "ORGANIZATION" not in NER_CONF["labels_to_ignore"]  # type: ignore[operator]
    assert "ORGANIZATION" not in PiiConfig().ner_entities  # opt-in only (issue 30)


@pytest.mark.parametrize(("names", "line", "says"), [
    ("    ner_entities:\n      - PERSON\n      - PERSN\n", 7,
     "unknown entity 'PERSN' under ner_entities (did you mean 'PERSON'?)"),
    ("    entities:\n      - EMAIL_ADDRESS\n      - US_DRIVER_LICENCE\n", 7, "did you mean 'US_DRIVER_LICENSE'?"),
])
def test_contract_names_the_line_of_an_impossible_entity(tmp_path, names: str, line: int, says: str) -> None:
    from gate.contract import load_contract
    from gate.errors import ContractError

    p = tmp_path / "c.yaml"
    p.write_text("name: x\nversion: 1\nchecks:\n  pii:\n" + names)
    with pytest.raises(ContractError) as err:
        load_contract(p)
    assert err.value.line == line and says in err.value.message, (err.value.line, err.value.message)
    assert err.value.file == str(p)


def test_contract_accepts_every_known_entity(tmp_path) -> None:
    from gate.contract import load_contract
    from gate.pii.config import FIREABLE_NER_ENTITIES, KNOWN_PATTERN_ENTITIES

    p = tmp_path / "c.yaml"
    p.write_text(f"name: x\nversion: 1\nchecks:\n  pii:\n    entities: [{', '.join(KNOWN_PATTERN_ENTITIES)}]\n"
                 f"    ner_entities: [{', '.join(FIREABLE_NER_ENTITIES)}]\n")
    assert load_contract(p).options("pii")["entities"][-1] == KNOWN_PATTERN_ENTITIES[-1]
