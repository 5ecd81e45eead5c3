"""Every `checks.<name>` section is validated by the contract loader against the schema its check declares
(`options_schema` in gate/data/checks/*.py): a typo or a wrong type is one line with file, line and a hint, for
every check alike, and every option the checks read today is accepted."""

from __future__ import annotations

import pytest

from gate.contract import load_contract
from gate.contract.file_schema import contract_schema
from gate.data.registry import CHECKS
from gate.errors import ContractError
from gate.names import CHECK_NAMES
from tests.conftest import CONTRACTS


def _load(tmp_path, checks: str):
    p = tmp_path / "c.yaml"
    p.write_text("name: x\nversion: 1\nchecks:\n" + checks)
    return p, load_contract(p)


# before: exact_duplicate, boilerplate, group_split, contract and leakage accepted any key silently;
# contamination and near_duplicate refused it only when the check was built, without a line
@pytest.mark.parametrize("check,key,hint", [
    ("exact_duplicate", "threshold", None),
    ("boilerplate", "max_shre", "max_row_share"),
    ("group_split", "key", None),
    ("contract", "strict", None),
    ("leakage", "treshold", None),
    ("contamination", "min_shard", "min_shared"),
    ("near_duplicate", "treshold", "threshold"),
    ("pii", "entites", "entities"),
    ("secret", "plugin", "plugins"),
    ("template", "keep_thinkin", "keep_thinking"),
    ("length", "covr", "cover"),
])
def test_unknown_option_is_a_line_numbered_error_with_hint(tmp_path, check, key, hint):
    with pytest.raises(ContractError) as err:
        _load(tmp_path, f"  {check}:\n    {key}: 0.01\n")
    e = err.value
    assert e.line == 5 and e.field == f"checks.{check}.{key}"
    assert str(e).startswith(f"{tmp_path / 'c.yaml'}:5: checks.{check}.{key}: unknown key '{key}'")
    if hint:
        assert f"(did you mean '{hint}'?)" in str(e)
    assert "\n" not in str(e)


@pytest.mark.parametrize("checks,line,needle", [
    ("  near_duplicate:\n    threshold: high\n", 5, "'high' is not of type 'number'"),
    ("  near_duplicate: {ngram: 0}\n", 4, "less than the minimum of 1"),
    ("  contamination:\n    eval_splits: test\n", 5, "'test' is not of type 'array'"),
    ("  boilerplate:\n    unit: paragraph\n", 5, "'paragraph' is not one of ['line', 'sentence']"),
    ("  pii:\n    thresholds: {EMAIL_ADDRESS: 2}\n", 5, "greater than the maximum of 1"),
    ("  secret:\n    roles: [robot]\n", 5, "'robot' is not one of"),
    ("  group_split: 3\n", 4, "3 is not a mapping (key: value pairs)"),
])
def test_wrong_option_value_names_its_line(tmp_path, checks, line, needle):
    with pytest.raises(ContractError) as err:
        _load(tmp_path, checks)
    assert err.value.line == line and needle in str(err.value)


def test_unknown_check_section_still_suggests_the_name(tmp_path):
    with pytest.raises(ContractError, match=r":4: checks\.boilerplat: unknown check 'boilerplat' "
                                            r"\(did you mean 'boilerplate'\?\)"):
        _load(tmp_path, "  boilerplat: {}\n")


def test_every_check_declares_its_own_options_schema():
    assert set(CHECKS) == set(CHECK_NAMES)
    sections = contract_schema()["properties"]["checks"]["properties"]
    for name, cls in CHECKS.items():
        schema = cls.options_schema  # an AttributeError here: a check without a declared schema
        assert schema["type"] == "object" and schema["additionalProperties"] is False, name
        assert sections[name] == schema


# every option the checks read today, at a valid value: a contract using them must keep loading and building
ALL_OPTIONS = """\
  near_duplicate: {threshold: 0.7, ngram: 4, num_perm: 64, seed: 3, strip_punct: false, unit: word}
  contamination: {ngram: 8, min_shared: 2, eval_splits: [test], train_splits: [train]}
  boilerplate: {min_rows: 3, min_share: 0.01, max_row_share: 0.4, min_chars: 10, min_row_chars: 50,
                unit: sentence, force: true}
  pii: {entities: [EMAIL_ADDRESS], ner_entities: [PERSON], use_ner: false, default_threshold: 0.5,
        thresholds: {EMAIL_ADDRESS: 0.6}, context_words: {EMAIL_ADDRESS: [mail]}, roles: [user, assistant]}
  secret: {detect_secrets: true, own_patterns: true, plugins: [AWSKeyDetector], base64_limit: 4.0,
           hex_limit: 3.0, roles: [user]}
  template: {mask: auto, stop_policy: auto, keep_thinking: false, chat_template_kwargs: {enable_thinking: false},
             tool_parser: auto, stop_tokens: [], roundtrip: true, control_tokens: true}
  length: {cover: 0.95, multiple_of: 64, histogram: false}
  contract: {}
  exact_duplicate: {}
  leakage: {}
  group_split: {}
"""


def test_every_option_read_today_loads_and_builds(tmp_path):
    _, c = _load(tmp_path, ALL_OPTIONS)
    assert c.options("boilerplate")["unit"] == "sentence" and c.options("pii")["use_ner"] is False
    for cls in CHECKS.values():
        cls(c)  # each check builds from the options it declared (bad values would raise GateError here)
    for p in sorted(CONTRACTS.glob("*.yaml")):
        load_contract(p)
