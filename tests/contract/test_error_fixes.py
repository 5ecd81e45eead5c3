"""Every contract error says how to fix it (issue 18 item 15): each message a new user met, held to its new text.

Each case failed on commit 9f6a155, where the message named the problem but not the fix (`did you mean 'tools'`
for a key of `messages`, `'string' is not of type 'object'`, `unknown key 'enum'`, a bare `unknown check`)."""

from pathlib import Path

import pytest

from gate.contract import load_contract
from gate.data.runner import run_checks
from gate.errors import ContractError
from gate.names import CHECK_NAMES
from tests.conftest import triage_row, write_jsonl


def _err(tmp_path: Path, body: str) -> ContractError:
    p = tmp_path / "c.yaml"
    p.write_text("name: x\nversion: 1\n" + body)
    with pytest.raises(ContractError) as info:
        load_contract(p)
    assert "\n" not in str(info.value)
    return info.value


def test_a_key_of_another_section_names_that_section(tmp_path):
    err = _err(tmp_path, "roles: [user, assistant]\n")
    assert err.line == 3 and err.field == "roles"
    assert "unknown key 'roles' here (did you mean 'messages.roles'?" in err.message
    assert "'tools'" not in err.message  # the old, wrong guess


def test_a_scalar_field_shows_the_mapping_form(tmp_path):
    err = _err(tmp_path, "fields:\n  dialect: string\n")
    assert (err.line, err.field) == (4, "fields.dialect")
    assert err.message == "'string' is not a mapping: write `dialect: {type: string}`"


def test_enum_under_a_field_suggests_allowed(tmp_path):
    err = _err(tmp_path, "fields:\n  dialect: {type: string, enum: [postgres, sqlite]}\n")
    assert err.field == "fields.dialect.enum"
    assert err.message == "unknown key 'enum' (gate calls it 'allowed')"


def test_a_check_name_under_thresholds_shows_max_findings(tmp_path):
    err = _err(tmp_path, "thresholds:\n  pii: 0\n")
    assert (err.line, err.field) == (4, "thresholds.pii")
    assert "`thresholds: {max_findings: {pii: N}}`" in err.message
    assert "thresholds takes: max_duplicate_rate, max_findings" in err.message


def test_an_unknown_key_without_a_close_match_lists_the_valid_keys(tmp_path):
    err = _err(tmp_path, "thresholds:\n  zzz: 0\n")
    assert err.message == "unknown key 'zzz' (thresholds takes: max_duplicate_rate, max_findings)"


@pytest.mark.parametrize("body", ["checks:\n  foo: {}\n", "thresholds:\n  max_findings: {foo: 1}\n"])
def test_unknown_check_lists_every_check(tmp_path, body):
    err = _err(tmp_path, body)
    assert err.message == f"unknown check 'foo' (the checks are: {', '.join(CHECK_NAMES)})"


def test_a_close_typo_keeps_the_short_did_you_mean(tmp_path):
    err = _err(tmp_path, "messages:\n  rols: [user]\n")
    assert err.message == "unknown key 'rols' (did you mean 'roles'?)"


def test_a_row_matching_no_shape_says_which_shapes(tmp_path, triage_contract):
    row = triage_row(1)
    row["messages"][1]["content"] = 42
    write_jsonl(tmp_path / "train.jsonl", [row])
    res = run_checks(str(tmp_path), triage_contract, checks=["contract"], progress=False).results[0]
    messages = [f.message for f in res.findings]
    assert any("matches none of the allowed shapes (anyOf): string or null; array of (" in m for m in messages), \
        messages
    assert not any("42" in m for m in messages)  # the shapes come from the schema, the value is not quoted
