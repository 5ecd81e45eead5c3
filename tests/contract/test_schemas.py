"""Untrusted JSON Schemas (contracts, their tool catalogue, scorecard answer and tool schemas) never make gate
touch the network: a `$ref` outside the document is one line naming the file and the ref, at load time, and
every validator gate builds refuses retrieval at validation time too. A local listener counts connections."""

from __future__ import annotations

import shutil
import socket
import threading
import time
from pathlib import Path

import pytest

from gate.contract import load_contract, schemas
from gate.errors import ContractError
from gate.score.scorecard import ScorecardError, load_scorecard
from tests.conftest import CONTRACTS, ROOT, run_gate, triage_row, write_jsonl


class Listener:
    """A TCP server on 127.0.0.1 that accepts, counts and never answers (each socket is dropped after a second,
    so code that does connect fails the test instead of hanging it)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self._stop = False
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/schema.json"

    def _serve(self) -> None:
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            threading.Timer(1.0, conn.close).start()

    def close(self) -> None:
        self._stop = True
        self._thread.join(timeout=2)
        self.sock.close()


@pytest.fixture
def listener():
    srv = Listener()
    yield srv
    srv.close()


def _contract_with(tmp_path: Path, marker: str, ref: str) -> tuple[Path, int]:
    text = (CONTRACTS / "triage.yaml").read_text()
    assert marker in text
    new = text.replace(marker, f"{marker}\n      remote: {{$ref: '{ref}'}}", 1)
    p = tmp_path / "c.yaml"
    p.write_text(new)
    line = next(i for i, ln in enumerate(new.splitlines(), 1) if ref in ln)
    return p, line


def test_remote_ref_in_contract_output_schema_is_refused_with_file_line_and_ref(tmp_path, listener):
    marker = "    properties:"
    p, line = _contract_with(tmp_path, marker, listener.url)
    with pytest.raises(ContractError) as err:
        load_contract(p)
    msg = str(err.value)
    assert msg.startswith(f"{p}:{line}: output.schema.properties.remote.$ref: $ref '{listener.url}'"), msg
    assert "\n" not in msg and "does not resolve inside this schema" in msg
    assert listener.connections == 0


@pytest.mark.parametrize("ref", ["other.json", "file:///etc/passwd", "./defs.json#/x", "#/$defs/missing"])
def test_refs_to_files_or_missing_definitions_are_refused(tmp_path, ref):
    (tmp_path / "other.json").write_text('{"type": "string"}')
    p, line = _contract_with(tmp_path, "    properties:", ref)
    with pytest.raises(ContractError, match=f":{line}: .*does not resolve inside this schema"):
        load_contract(p)


def test_remote_ref_in_tool_catalogue_is_refused(tmp_path, listener):
    text = (CONTRACTS / "tool-use.yaml").read_text()
    marker = "        properties:"
    assert marker in text
    p = tmp_path / "t.yaml"
    p.write_text(text.replace(marker, f"{marker}\n          x: {{$ref: '{listener.url}'}}", 1))
    with pytest.raises(ContractError, match=r"tools\.catalogue\[0\]\.parameters\.properties\.x\.\$ref: \$ref"):
        load_contract(p)
    assert listener.connections == 0


def test_refs_inside_the_document_resolve():
    schema = {"$id": "https://example.invalid/root.json", "type": "object",
              "properties": {"a": {"$ref": "#/$defs/pos"}, "b": {"$ref": "item.json"}, "c": {"$ref": "#name"},
                             "d": {"$ref": "https://json-schema.org/draft/2020-12/schema"}},
              "$defs": {"pos": {"type": "integer", "minimum": 1},
                        "item": {"$id": "item.json", "type": "string"},
                        "named": {"$anchor": "name", "enum": ["x"]}}}
    schemas.check_schema(schema)
    v = schemas.validator(schema)
    assert v.is_valid({"a": 2, "b": "s", "c": "x", "d": {"type": "string"}})
    assert not v.is_valid({"a": 0}) and not v.is_valid({"b": 1}) and not v.is_valid({"c": "y"})
    assert not v.is_valid({"d": {"type": "strin"}})


def test_a_validator_never_retrieves_even_when_the_load_check_is_skipped(listener):
    from referencing.exceptions import Unresolvable

    v = schemas.validator({"properties": {"a": {"$ref": listener.url}}})
    with pytest.raises(Unresolvable):
        v.is_valid({"a": 1})
    assert listener.connections == 0


def _card(tmp_path: Path, name: str) -> Path:
    shutil.copytree(ROOT / "scorecards" / "suites", tmp_path / "scorecards" / "suites")
    shutil.copytree(ROOT / "contracts", tmp_path / "contracts")
    shutil.copytree(ROOT / "fixtures" / "tools", tmp_path / "fixtures" / "tools")
    dst = tmp_path / "scorecards" / f"{name}.yaml"
    shutil.copy(ROOT / "scorecards" / f"{name}.yaml", dst)
    return dst


def test_remote_ref_in_scorecard_answer_schema_is_refused(tmp_path, listener):
    card = _card(tmp_path, "triage")
    text = card.read_text()
    old = "    options: {schema_from_contract: ../contracts/triage.yaml}"
    assert old in text
    card.write_text(text.replace(old, f"    options: {{schema: {{$ref: '{listener.url}'}}}}"))
    with pytest.raises(ScorecardError) as err:
        load_scorecard(card)
    assert f"$ref '{listener.url}' does not resolve inside this schema" in str(err.value)
    assert str(err.value).startswith(f"{card}:") and "\n" not in str(err.value)
    assert listener.connections == 0


def test_remote_ref_in_scorecard_prompt_tools_is_refused(tmp_path, listener):
    card = _card(tmp_path, "tool-use")
    text = card.read_text()
    old = "  tools_from_contract: ../contracts/tool-use.yaml"
    tools = (f"  tools:\n    - type: function\n      function:\n        name: f\n        parameters:\n"
             f"          type: object\n          properties:\n            x: {{$ref: '{listener.url}'}}")
    card.write_text(text.replace(old, tools))
    line = next(i for i, ln in enumerate(card.read_text().splitlines(), 1) if listener.url in ln)
    with pytest.raises(ScorecardError, match=rf":{line}: prompt\.tools\[0\]\.function\.parameters\.properties\.x"):
        load_scorecard(card)
    assert listener.connections == 0


def test_gate_check_with_a_remote_ref_exits_1_in_one_line_without_connecting(tmp_path, listener):
    p, line = _contract_with(tmp_path, "    properties:", listener.url)
    data = write_jsonl(tmp_path / "d" / "train.jsonl", [triage_row(1)])
    t0 = time.monotonic()
    res = run_gate("check", str(data.parent), "--contract", str(p), "--checks", "contract", timeout=120)
    assert res.returncode == 1, res.stdout + res.stderr
    out = (res.stdout + res.stderr).strip()
    assert "Traceback" not in out and f"{p}:{line}:" in out and listener.url in out
    assert listener.connections == 0 and time.monotonic() - t0 < 60
