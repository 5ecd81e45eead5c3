"""The shared YAML reader (gate/yamlio.py): every data path maps back to its line, and every problem is the
caller's own error class with file, line and field."""

from pathlib import Path

import pytest

from gate import yamlio
from gate.errors import ContractError, GateError
from gate.train.spec import SpecError, load_spec

DOC = """\
name: x
suites:
  - name: a
    path: a.jsonl
  - name: b
    path: b.jsonl
decoding: {temperature: 0, max_tokens: 8}
"""

SCHEMA = {
    "type": "object", "additionalProperties": False,
    "properties": {
        "name": {"type": "string"},
        "suites": {"type": "array", "items": {
            "type": "object", "additionalProperties": False,
            "properties": {"name": {"type": "string"}, "path": {"type": "string"}}}},
        "decoding": {"type": "object", "properties": {"temperature": {"type": "number"},
                                                       "max_tokens": {"type": "integer", "minimum": 1}}},
    },
}


class CardError(GateError):
    pass


def _read(tmp_path: Path, text: str) -> yamlio.YamlDoc:
    p = tmp_path / "doc.yaml"
    p.write_text(text)
    return yamlio.read(p, what="card", error=CardError)


def test_every_key_and_item_knows_its_line(tmp_path):
    doc = _read(tmp_path, DOC)
    assert doc.data["suites"][1]["path"] == "b.jsonl"
    assert doc.line(["suites", 1]) == 5 and doc.line(["suites", 1, "path"]) == 6
    assert doc.line(["decoding", "max_tokens"]) == 7
    assert doc.line(["suites", 7]) == 3  # past the end: the nearest existing value (the list starts on line 3)
    err = doc.fail("no such file", ["suites", 1, "path"])
    assert isinstance(err, CardError)
    assert str(err) == f"{tmp_path / 'doc.yaml'}:6: suites[1].path: no such file"


def test_schema_errors_point_at_the_offending_line(tmp_path):
    doc = _read(tmp_path, DOC.replace("    path: b.jsonl", "    pth: b.jsonl"))
    with pytest.raises(CardError) as info:
        doc.validate(SCHEMA)
    assert (info.value.line, info.value.field) == (6, "suites[1].pth")
    assert info.value.message == "unknown key 'pth' (did you mean 'path'?)"
    doc = _read(tmp_path, DOC.replace("max_tokens: 8", "max_tokens: 0"))
    with pytest.raises(CardError) as info:
        doc.validate(SCHEMA)
    assert (info.value.line, info.value.field) == (7, "decoding.max_tokens")
    assert "less than the minimum" in info.value.message


@pytest.mark.parametrize(("text", "line", "needle"), [
    (DOC + "suites: []\n", 8, "duplicate key 'suites'"),
    ("name: x\nd:\n  a: 1\n  a: 2\n", 4, "duplicate key 'a'"),
    ("name: x\n1: y\n", 2, "key '1' is not a string (quote it)"),
    ("a: &a [*a]\n", 1, "an alias refers to itself"),
    ("name: x\nwhen: !!timestamp nope\n", 2, "cannot read this timestamp value"),
    ("name: [x\n", 2, "invalid YAML"),
    ("- a\n- b\n", 1, "a card must be a YAML mapping"),
    ("", 1, "a card must be a YAML mapping"),
])
def test_bad_documents_are_the_callers_error_with_a_line(tmp_path, text, line, needle):
    with pytest.raises(CardError) as info:
        _read(tmp_path, text)
    assert info.value.line == line and needle in info.value.message, str(info.value)
    assert info.value.file == str(tmp_path / "doc.yaml")


def test_alias_bomb_is_refused_before_it_expands(tmp_path):
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 8)]
    with pytest.raises(CardError, match="document too large"):
        _read(tmp_path, "\n".join(lines) + "\n")


def test_file_problems_name_the_kind_of_file(tmp_path):
    with pytest.raises(CardError) as info:
        yamlio.read(tmp_path / "nope.yaml", what="card", error=CardError)
    assert (info.value.message, info.value.line) == ("card file not found", None)
    (tmp_path / "latin1.yaml").write_bytes(b"name: caf\xe9\n")
    with pytest.raises(ContractError, match=r"contract is not UTF-8 \(byte 9\)"):
        yamlio.read(tmp_path / "latin1.yaml", what="contract", error=ContractError)


def test_training_specs_get_the_same_guards_as_contracts(tmp_path):
    """Before the shared reader a spec nested too deeply was a RecursionError traceback, and control characters
    echoed from the file reached the terminal unescaped."""
    deep = tmp_path / "deep.yaml"
    deep.write_text("name: t\nrunners: {local: {python: " + "[" * 5000 + "]" * 5000 + "}}\n")
    with pytest.raises(SpecError, match="nested too deeply"):
        load_spec(deep)
    bell = tmp_path / "bell.yaml"
    bell.write_text('name: t\n"step\\as": 5\n')
    with pytest.raises(SpecError) as info:
        load_spec(bell)
    assert info.value.line == 2 and info.value.field == "step\\x07s"
    assert "\x07" not in str(info.value) and "unknown key 'step\\x07s' (did you mean 'steps'?)" in str(info.value)
