"""PII and secret detection, redaction and scrubbing: the library behind the `pii`/`secret` checks and `gate scrub`.

Importing this package is cheap: presidio, spaCy and detect-secrets are imported on the first scan, and nothing is
ever downloaded (presidio gets its NLP engine passed in; tldextract stays on its bundled suffix list).

    from gate.pii import PiiConfig, scan_texts, scan_secrets_texts, snippet, anonymize
    hits = scan_texts(texts, PiiConfig())            # list[list[Hit]], same as the plain analyze() loop
    secrets = scan_secrets_texts(texts)              # list[list[SecretHit]]
    snippet(text, hits[0] + secrets[0])              # redacted context for a report
    anonymize(text, hits[0] + secrets[0])            # ScrubResult(text, counts, drop_row)
"""

from gate.pii.anonymize import ScrubResult, anonymize, anonymize_texts
from gate.pii.config import PiiConfig, ScrubConfig, SecretConfig
from gate.pii.hits import Hit, resolve_overlaps
from gate.pii.oracles import scan_text, scan_texts_plain
from gate.pii.presidio_engine import engine_info, recall_spans, recall_spans_texts, scan_texts
from gate.pii.recognizers import street_address_recognizer
from gate.pii.redact import mask_context, mask_loose, redact_value, snippet, snippet_window, value_snippet
from gate.pii.secrets import SecretHit, scan_secrets, scan_secrets_texts
from gate.pii.spacy_setup import ner_available

__all__ = [
    "Hit", "PiiConfig", "ScrubConfig", "ScrubResult", "SecretConfig", "SecretHit", "anonymize", "anonymize_texts",
    "engine_info", "mask_context", "mask_loose", "ner_available", "recall_spans", "recall_spans_texts", "redact_value",
    "resolve_overlaps", "scan_secrets", "scan_secrets_texts", "scan_text", "scan_texts", "scan_texts_plain",
    "snippet", "snippet_window", "street_address_recognizer", "value_snippet",
]
