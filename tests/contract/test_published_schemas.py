"""The published JSON Schemas (issue 18 item 12): `gate schema KIND` writes what the loader validates with, the
wheel ships it, schemas/ at the repository root holds the copy the examples' `yaml-language-server` lines point
at, and none of them may drift. Set GATE_UPDATE_SCHEMAS=1 to rewrite the committed copies after a change."""

import json
import os
import subprocess
import sys

import pytest
import yaml
from jsonschema import Draft202012Validator

from gate import schema
from gate.contract import load_contract
from gate.errors import ContractError
from tests.conftest import ROOT

EXAMPLES = {"contract": "contracts", "scorecard": "scorecards", "trainspec": "trainspecs"}


@pytest.mark.parametrize("kind", schema.KINDS)
def test_committed_and_shipped_copies_match_the_meta_schema(kind):
    text = schema.dumps(kind)
    committed = ROOT / "schemas" / schema.file_name(kind)
    packaged = ROOT / "gate" / "schema" / schema.file_name(kind)
    if os.environ.get("GATE_UPDATE_SCHEMAS"):
        committed.write_text(text)
        packaged.write_text(text)
    assert committed.read_text() == text, f"schemas/ drifted: rerun with GATE_UPDATE_SCHEMAS=1 ({kind})"
    assert schema.shipped(kind) == text, f"gate/schema/ drifted: rerun with GATE_UPDATE_SCHEMAS=1 ({kind})"
    Draft202012Validator.check_schema(json.loads(text))


def test_package_data_ships_the_schemas():
    """The wheel's package data names the files (built wheels are tested in tests/test_distribution.py)."""
    import tomllib

    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert "*.schema.json" in data["gate.schema"]


@pytest.mark.parametrize("kind", schema.KINDS)
def test_every_example_points_at_its_schema_and_validates(kind):
    published = schema.build(kind)
    files = sorted((ROOT / EXAMPLES[kind]).glob("*.yaml"))
    assert files
    for f in files:
        first = f.read_text().splitlines()[0]
        assert first == f"# yaml-language-server: $schema=../schemas/{kind}.schema.json", f
        assert (f.parent / first.split("=", 1)[1]).is_file()
        errors = list(Draft202012Validator(published).iter_errors(yaml.safe_load(f.read_text())))
        assert not errors, (f, [e.message for e in errors])


@pytest.mark.parametrize("body", [
    "checks:\n  foo: {}\n",  # the loader checks names in code; the published schema says it too
    "thresholds:\n  max_findings: {foo: 1}\n",
    "fields:\n  dialect: string\n",
    "messages: {roles: [robot]}\n",
    "checks:\n  near_duplicate: {threshold: 2}\n",
])
def test_the_published_contract_schema_refuses_what_the_loader_refuses(tmp_path, body):
    p = tmp_path / "c.yaml"
    p.write_text("name: x\nversion: 1\n" + body)
    with pytest.raises(ContractError):
        load_contract(p)
    assert list(Draft202012Validator(schema.build("contract")).iter_errors(yaml.safe_load(p.read_text())))


def test_annotations_reach_editors():
    c = schema.build("contract")
    field = c["properties"]["fields"]["additionalProperties"]
    assert "enum" in field["properties"]["allowed"]["description"]
    assert c["properties"]["messages"]["properties"]["roles"]["default"] == ["system", "user", "assistant", "tool"]
    assert c["properties"]["checks"]["properties"]["near_duplicate"]["properties"]["threshold"]["default"] == 0.8
    assert c["properties"]["thresholds"]["properties"]["max_findings"]["propertyNames"]["enum"][0] == "contract"


def test_gate_schema_command_writes_the_file(tmp_path):
    out = tmp_path / "s" / "contract.schema.json"
    res = subprocess.run([sys.executable, "-m", "gate", "schema", "contract", "-o", str(out)],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert out.read_text() == schema.dumps("contract")
    res = subprocess.run([sys.executable, "-m", "gate", "schema", "trainspec"], capture_output=True, text=True)
    assert res.returncode == 0 and json.loads(res.stdout)["title"] == "gate training spec"
    res = subprocess.run([sys.executable, "-m", "gate", "schema", "nope"], capture_output=True, text=True)
    assert res.returncode == 2
