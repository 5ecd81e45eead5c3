"""Acceptance for the format scorer (issue 16 item 12): the official JSON-Schema-Test-Suite, draft 2020-12,
vendored under tests/score/jsonschema_suite, run through FormatValidity by bench/jsonschema_suite.py (the same
code writes bench/results/jsonschema_suite.md)."""

from __future__ import annotations

import pytest

from bench.jsonschema_suite import run_suite


@pytest.fixture(scope="module")
def result():
    return run_suite()


def test_core_agreement_at_least_99_5_percent(result):
    core = result["core"]
    assert core["scored"] >= 1200 and core["refused"] == 0
    assert core["agreement"] >= 0.995, result["disagreements"][:10]
    assert core["agreement_flexible"] >= 0.995  # before: array answers were never extractable


def test_asserted_formats_agree_at_least_95_percent(result):
    fmt = result["format_asserted"]
    assert {"date-time", "uri", "ipv4", "uuid", "regex"} <= set(result["formats_asserted"])
    assert fmt["scored"] >= 500 and fmt["agreement"] >= 0.95


def test_no_connection_and_only_outside_refs_are_excluded(result):
    assert result["network_connections"] == 0
    assert result["excluded"] and all("does not resolve inside this schema" in e["reason"]
                                      for e in result["excluded"])
    assert {e["file"].split("/")[-1] for e in result["excluded"]} <= {"refRemote.json", "dynamicRef.json",
                                                                      "cross-draft.json"}
