import pytest

from gate.contract import load_contract
from gate.errors import ContractError
from tests.conftest import CONTRACTS


def test_shipped_contracts_load():
    triage = load_contract(CONTRACTS / "triage.yaml")
    tools = load_contract(CONTRACTS / "tool-use.yaml")
    assert triage.output_format == "json" and triage.output_schema is not None
    assert triage.group_key == "customer"
    assert 4 <= len(tools.tools) <= 6
    assert {t.name for t in tools.tools} >= {"lookup_order", "issue_refund", "update_ticket", "search_kb"}


def test_hash_ignores_comments_and_key_order(tmp_path):
    a = tmp_path / "a.yaml"
    b = tmp_path / "b.yaml"
    a.write_text("name: x\nversion: 1\nlanguages: [en]\n")
    b.write_text("# comment\nlanguages: [en]\nversion: 1\nname: x\n")
    assert load_contract(a).sha256 == load_contract(b).sha256
    b.write_text("languages: [de]\nversion: 1\nname: x\n")
    assert load_contract(a).sha256 != load_contract(b).sha256


def _bad(tmp_path, text):
    p = tmp_path / "c.yaml"
    p.write_text(text)
    with pytest.raises(ContractError) as err:
        load_contract(p)
    return err.value


def test_unknown_key_names_key_line_and_suggestion(tmp_path):
    err = _bad(tmp_path, "name: x\nversion: 1\nthresholds:\n  max_duplicate_rate: 0.1\n  max_findngs: {}\n")
    assert err.line == 5
    assert "unknown key 'max_findngs'" in str(err)
    assert "did you mean 'max_findings'" in str(err)
    assert str(err).startswith(str(tmp_path / "c.yaml") + ":5:")


def test_typo_in_nested_field_spec(tmp_path):
    err = _bad(tmp_path, "name: x\nversion: 1\nfields:\n  id: {type: string, requird: true}\n")
    assert err.line == 4 and "requird" in str(err) and err.field == "fields.id.requird"


def test_wrong_value_type(tmp_path):
    err = _bad(tmp_path, "name: x\nversion: 1\nfields:\n  id:\n    type: text\n")
    assert err.line == 5 and err.field == "fields.id.type"


@pytest.mark.parametrize(("text", "needle", "line"), [
    ("name: x\nversion: 1\nrefusal:\n  when_user_matches: ['(unclosed']\n  forbid_tool_calls: true\n",
     "invalid regular expression", 4),
    ("name: x\nversion: 1\noutput:\n  format: json\n  schema: {type: objekt}\n", "invalid JSON Schema", 5),
    ("name: x\nversion: 1\nname: y\n", "duplicate key 'name'", 3),
    ("name: x\nversion: 1\nthresholds:\n  max_findings: {contrct: 0}\n", "unknown check 'contrct'", 4),
    ("name: x\nversion: [1\n", "invalid YAML", 3),
    ("- just\n- a list\n", "must be a YAML mapping", 1),
])
def test_contract_mistakes_are_one_clear_line(tmp_path, text, needle, line):
    err = _bad(tmp_path, text)
    assert needle in str(err)
    assert err.line == line
    assert "\n" not in str(err)


def test_missing_contract_file(tmp_path):
    with pytest.raises(ContractError, match="not found"):
        load_contract(tmp_path / "nope.yaml")


def test_bad_regex_is_a_line_numbered_error_not_a_warning(tmp_path, recwarn):
    """`[a--b]` made Python warn (FutureWarning) at load; RE2, which matches the patterns, refuses it."""
    text = (CONTRACTS / "triage.yaml").read_text().replace("pattern: '^tri-", "pattern: '[a--b]^tri-", 1)
    p = tmp_path / "c.yaml"
    p.write_text(text)
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if "[a--b]" in ln)
    with pytest.raises(ContractError) as exc:
        load_contract(p)
    assert f"c.yaml:{line}: fields.id.pattern: regular expression refused: invalid regular expression for RE2" \
        in str(exc.value)
    assert not [w for w in recwarn if issubclass(w.category, FutureWarning)]
