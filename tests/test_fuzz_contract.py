"""Property-based fuzzing of the contract parser (gate/contract): random YAML text, random YAML documents and
mutations of the shipped contracts are either loaded into a usable Contract or refused with one clear line
naming the file (and the line and key where there is one); never a traceback.
"""

from __future__ import annotations

import random
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from gate.contract import load_contract
from gate.contract.expectations import compile_rules
from gate.contract.file_schema import contract_schema
from gate.contract.rows import fast_row_check, row_schema
from gate.errors import GateError
from tests import fuzzkit as fk
from tests.fuzzkit import assert_clear_error, hypothesis_test, mutate, yaml_token_text, yaml_values

pytestmark = pytest.mark.fuzz

ROOT = Path(__file__).resolve().parents[1]
WORK = Path(tempfile.mkdtemp(prefix="gate-fuzz-contract-"))
SHIPPED = {p.name: yaml.safe_load(p.read_text()) for p in sorted((ROOT / "contracts").glob("*.yaml"))}


def _schema_keys(schema: Any, out: set[str]) -> set[str]:
    if isinstance(schema, dict):
        for k, v in schema.get("properties", {}).items():
            out.add(k)
            _schema_keys(v, out)
        for v in schema.values():
            _schema_keys(v, out)
    return out


KNOWN_KEYS = sorted(_schema_keys(contract_schema(), set()))  # every check's option keys too


def _load_and_use(path: Path) -> str:
    """Loads the contract; if accepted, everything derived from it must build too (the checks rely on it)."""
    try:
        contract = load_contract(path)
    except GateError as exc:
        assert_clear_error(exc, path)
        if exc.line is not None:
            # YAML counts U+0085, U+2028 and U+2029 as line breaks too, as str.splitlines does
            assert exc.line <= max(1, len(path.read_text(errors="replace").splitlines()) + 1), str(exc)
        return "refused"
    row_schema(contract)
    compile_rules(contract)
    check = fast_row_check(contract)
    check({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "{}"}]})
    assert isinstance(contract.name, str) and contract.sha256
    return "loaded"


def _write(text: str | bytes) -> Path:
    path = WORK / "contract.yaml"
    if isinstance(text, str):
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
    else:
        path.write_bytes(text)
    return path


@hypothesis_test("contract.yaml_text")
@given(yaml_token_text)
def test_random_yaml_text(text):
    _load_and_use(_write(text))


@hypothesis_test("contract.bytes")
@given(st.binary(max_size=200))
def test_random_bytes(raw):
    _load_and_use(_write(raw))


@hypothesis_test("contract.documents")
@given(st.dictionaries(st.sampled_from(KNOWN_KEYS) | st.text(max_size=8), yaml_values, max_size=6))
def test_random_documents(doc):
    doc = {"name": "fuzz", "version": 1, **doc} if len(doc) % 2 else doc
    _load_and_use(_write(yaml.safe_dump(doc, allow_unicode=True)))


@hypothesis_test("contract.mutated")
@given(st.sampled_from(sorted(SHIPPED)), st.data())
def test_mutated_shipped_contracts(name, data):
    doc = mutate(SHIPPED[name], data, KNOWN_KEYS)
    path = WORK / name
    path.write_text(yaml.safe_dump(doc, allow_unicode=True) if isinstance(doc, dict) else "[]", encoding="utf-8")
    _load_and_use(path)


@hypothesis_test("contract.text_mutations")
@given(st.sampled_from(sorted(SHIPPED)), st.data())
def test_text_mutations_of_shipped_contracts(name, data):
    """Character-level damage: deleted, inserted or replaced characters anywhere in the real YAML text."""
    text = (ROOT / "contracts" / name).read_text()
    for _ in range(data.draw(st.integers(1, 4))):
        pos = data.draw(st.integers(0, len(text)))
        op = data.draw(st.sampled_from(["delete", "insert", "replace"]))
        piece = data.draw(st.sampled_from([":", " ", "\n", "\t", "-", "{", "[", "'", '"', "&x", "*x", "!!binary",
                                           "\x00", "#", "?"]) | st.text(max_size=3))
        if op == "delete":
            text = text[:pos] + text[pos + data.draw(st.integers(1, 20)):]
        elif op == "insert":
            text = text[:pos] + piece + text[pos:]
        else:
            text = text[:pos] + piece + text[pos + len(piece):]
    _load_and_use(_write(text))


# ---------------------------------------------------------------------------------------------------------------
# the volume lane: the same oracle on cases from seeded generators (see tests/fuzzkit.py)

fk.register("contract.yaml_text.volume", "contract.bytes.volume", "contract.documents.volume",
            "contract.mutated.volume", "contract.text_mutations.volume")
SHIPPED_TEXT = {name: (ROOT / "contracts" / name).read_text() for name in SHIPPED}
CONTRACT_TOKENS = fk.YAML_TOKENS + KNOWN_KEYS + ["type: object", "properties:", "$ref: '#/x'", "enum: [a, b]",
                                                 "pattern: '[a-'", "maxLength: -1", "role: user", "- name: x"]


def _dump(doc: object) -> str:
    """libyaml's dumper: the pure-Python one costs more than the load under test."""
    return yaml.dump(doc, Dumper=yaml.CSafeDumper, allow_unicode=True, sort_keys=False)


def test_yaml_text_volume():
    fk.run_volume("contract.yaml_text.volume", lambda rng: fk.rtokens(rng, CONTRACT_TOKENS),
                  lambda text: _load_and_use(_write(text)), require=("refused",))


def r_bytes(rng: random.Random) -> bytes:
    if rng.random() < 0.3:
        return rng.randbytes(rng.randrange(200))
    return fk.rmutate_bytes(SHIPPED_TEXT[rng.choice(sorted(SHIPPED))].encode(), rng)


def test_bytes_volume():
    fk.run_volume("contract.bytes.volume", r_bytes, lambda raw: _load_and_use(_write(raw)),
                  require=("loaded", "refused"))


def r_document(rng: random.Random) -> str:
    doc = {(rng.choice(KNOWN_KEYS) if rng.random() < 0.8 else fk.ryaml_key(rng)): fk.ryaml(rng)
           for _ in range(rng.randrange(7))}
    if rng.random() < 0.7:
        doc = {"name": rng.choice(["fuzz", "", "x" * 300, 3]), "version": rng.choice([1, "1.0", -1, None]), **doc}
    return _dump(doc)


def test_documents_volume():
    fk.run_volume("contract.documents.volume", r_document,
                  lambda text: _load_and_use(_write(text)), require=("loaded", "refused"))


def r_mutated(rng: random.Random) -> tuple[str, str]:
    name = rng.choice(sorted(SHIPPED))
    doc = SHIPPED[name] if rng.random() < 0.4 else fk.rprune(SHIPPED[name], rng)
    return name, _dump(fk.rmutate_doc(doc, rng, KNOWN_KEYS))


def test_mutated_volume():
    fk.run_volume("contract.mutated.volume", r_mutated,
                  lambda case: _load_and_use(fk.write_text(WORK / case[0], case[1])), require=("loaded", "refused"))


def test_text_mutations_volume():
    fk.run_volume("contract.text_mutations.volume",
                  lambda rng: fk.rmutate_text(SHIPPED_TEXT[rng.choice(sorted(SHIPPED))], rng),
                  lambda text: _load_and_use(_write(text)), require=("loaded", "refused"))


def test_unhashable_key_is_a_clear_error(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("name: x\nversion: 1\n? [a, b]\n: 1\n")
    with pytest.raises(GateError) as info:
        load_contract(path)
    assert_clear_error(info.value, path)


def test_deep_nesting_is_a_clear_error(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("name: x\nversion: 1\nchecks: {pii: {x: " + "[" * 5000 + "]" * 5000 + "}}\n")
    with pytest.raises(GateError) as info:
        load_contract(path)
    assert_clear_error(info.value, path)


def test_non_string_field_name_is_a_clear_error(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("name: x\nversion: 1\nfields:\n  1: {type: string}\n")
    with pytest.raises(GateError) as info:
        load_contract(path)
    assert_clear_error(info.value, path)
    assert info.value.line == 4


@pytest.mark.parametrize("value", ["!!timestamp ", "!!bool maybe", "!!int x", "!!float y"])
def test_tagged_values_pyyaml_cannot_build_are_clear_errors(tmp_path, value):
    path = tmp_path / "c.yaml"
    path.write_text(f"name: x\nversion: 1\ndescription: {value}\n")
    with pytest.raises(GateError) as info:
        load_contract(path)
    assert_clear_error(info.value, path)
    assert info.value.line == 3
