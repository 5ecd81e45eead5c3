"""Issue 28 item 4 (partial): with GATE_URL set, every `gate check` option reaches the service or is refused in one
line with exit 2, never dropped; the fields sent are the service's own CheckRequest fields."""

from __future__ import annotations

import pytest

from gate.errors import GateError
from tests.conftest import CONTRACTS, gate_inprocess, triage_row, write_jsonl


@pytest.fixture
def sent(monkeypatch):
    """What the client would submit (the service is not contacted: the capture stops the command)."""
    from gate.service.client import ServiceClient

    got: list[dict] = []

    def submit(self, payload):
        got.append(payload)
        raise GateError("captured")

    monkeypatch.setattr(ServiceClient, "submit_check", submit)
    monkeypatch.setenv("GATE_URL", "http://127.0.0.1:9")
    return got


@pytest.mark.parametrize("option", [("--snippets", "none"), ("--base", "HEAD"), ("--tokenizer", "/nonexistent"),
                                    ("--workers", "3"), ("--no-db",)])
def test_an_option_the_service_cannot_honour_is_refused_in_one_line(tmp_path, sent, option):
    write_jsonl(tmp_path / "ds" / "train.jsonl", [triage_row(1)])
    code, out = gate_inprocess("check", str(tmp_path / "ds"), "-c", str(CONTRACTS / "triage.yaml"), "-o",
                               str(tmp_path / "o"), *option)
    assert code == 2 and sent == [], out
    assert len(out.strip().splitlines()) == 1 and option[0] in out and "GATE_URL" in out, out


def test_every_field_of_the_service_request_is_sent(tmp_path, sent):
    from gate.service.app import CheckRequest

    write_jsonl(tmp_path / "ds" / "train.jsonl", [triage_row(1)])
    code, out = gate_inprocess("check", str(tmp_path / "ds"), "-c", str(CONTRACTS / "triage.yaml"), "-o",
                               str(tmp_path / "o"), "--max-examples", "0", "--checks", "contract",
                               "--fail-on", "warning")
    assert code == 1 and "captured" in out, out
    (payload,) = sent
    assert set(payload) == set(CheckRequest.model_fields)
    assert payload["max_examples"] == 0 and payload["checks"] == ["contract"] and payload["fail_on"] == "warning"
    CheckRequest(**payload)  # the service accepts what the client sends
