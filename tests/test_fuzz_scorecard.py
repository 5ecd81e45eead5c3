"""Property-based fuzzing of the scorecard parser (gate/score/scorecard.py) and its suite reader: random YAML,
mutations of the shipped scorecards and broken suite files are loaded or refused with one clear line; never a
traceback. Mutated scorecards sit in a copy of the repository layout so their relative references resolve.
"""

from __future__ import annotations

import json
import random
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from gate.errors import GateError
from gate.score.scorecard import load_scorecard, load_suite
from tests import fuzzkit as fk
from tests.fuzzkit import assert_clear_error, hypothesis_test, json_values, mutate, yaml_token_text, yaml_values

pytestmark = pytest.mark.fuzz

ROOT = Path(__file__).resolve().parents[1]
WORK = Path(tempfile.mkdtemp(prefix="gate-fuzz-scorecard-"))
for rel in ("scorecards/suites", "contracts", "fixtures/tools"):
    (WORK / rel).parent.mkdir(parents=True, exist_ok=True)
    (WORK / rel).symlink_to(ROOT / rel)
SHIPPED = {p.name: yaml.safe_load(p.read_text()) for p in sorted((ROOT / "scorecards").glob("*.yaml"))}
SCORECARD_KEYS = ["name", "version", "suites", "path", "sha256", "prompt", "system", "system_mode", "tools",
                  "tools_from_contract", "response_format", "type", "schema", "decoding", "temperature", "max_tokens",
                  "scorers", "options", "gates", "scorer", "metric", "rule", "test", "alpha", "kind"]
PATH_VALUES = ["suites/triage-heldout.jsonl", "../contracts/triage.yaml", "../contracts/tool-use.yaml",
               "../fixtures/tools/support_desk.py", "/etc/passwd", "/", "..", "missing.jsonl", "a\x00b", "",
               "suites", "../contracts"]


def _check(path: Path) -> str:
    try:
        card = load_scorecard(path)
    except GateError as exc:
        # a suite's own error names the suite file; everything else names the scorecard
        where = Path(exc.file) if exc.file else path
        assert_clear_error(exc, where if where != path and where.exists() else path, max_len=600)
        return "refused"
    assert card.sha256 and card.suites
    for suite in card.suites:
        card.request_for(suite.items[0])  # an accepted scorecard can build its requests
    return "loaded"


def _write(text: str) -> Path:
    path = WORK / "scorecards" / "fuzz.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    return path


@hypothesis_test("scorecard.yaml_text")
@given(yaml_token_text)
def test_random_yaml_text(text):
    _check(_write(text))


@hypothesis_test("scorecard.documents")
@given(st.dictionaries(st.sampled_from(["name", "version", "suites", "prompt", "decoding", "scorers", "gates",
                                        "kind", "description"]) | st.text(max_size=6), yaml_values, max_size=6))
def test_random_documents(doc):
    _check(_write(yaml.safe_dump(doc, allow_unicode=True)))


@hypothesis_test("scorecard.mutated")
@given(st.sampled_from(sorted(SHIPPED)), st.data())
def test_mutated_shipped_scorecards(name, data):
    doc = mutate(SHIPPED[name], data, SCORECARD_KEYS)
    if data.draw(st.booleans()):  # point a reference somewhere odd
        _repoint(doc, data.draw(st.sampled_from(REFERENCES)), data.draw(st.sampled_from(PATH_VALUES)))
    text = yaml.safe_dump(doc, allow_unicode=True) if isinstance(doc, dict) else "[]"
    _check(_write(text))


REFERENCES = [("suites", 0, "path"), ("prompt", "tools_from_contract"), ("scorers", 0, "options", "implementation"),
              ("scorers", 1, "options", "schema_from_contract")]


def _repoint(doc: object, target: tuple, value: str) -> None:
    node = doc
    try:
        for part in target[:-1]:
            node = node[part]
        node[target[-1]] = value
    except (KeyError, IndexError, TypeError):
        pass


@st.composite
def suite_lines(draw: st.DrawFn) -> bytes:
    item = {"id": draw(st.text(max_size=6) | st.integers()), "category": draw(st.sampled_from(["a", "", None, 3])),
            "messages": draw(st.sampled_from([[{"role": "user", "content": "hi"}], [], [{}], "x", [{"role": 1}]])),
            "expected": draw(json_values)}
    for key in draw(st.lists(st.sampled_from(sorted(item)), max_size=2)):
        item.pop(key, None)
    kind = draw(st.sampled_from(["item", "item", "item", "bytes", "scalar", "blank"]))
    if kind == "bytes":
        return draw(st.binary(max_size=30).filter(lambda b: b"\n" not in b))
    if kind == "scalar":
        return json.dumps(draw(json_values)).encode()
    if kind == "blank":
        return b" "
    return json.dumps(item).encode()


@hypothesis_test("scorecard.suites")
@given(st.lists(suite_lines(), max_size=6))
def test_suite_files(lines):
    _check_suite(b"\n".join(lines))


def _check_suite(raw: bytes) -> str:
    path = WORK / "suite.jsonl"
    path.write_bytes(raw)
    try:
        suite = load_suite(path)
    except GateError as exc:
        assert_clear_error(exc, path)
        return "refused"
    assert suite.items and len({i.id for i in suite.items}) == len(suite.items)
    return "loaded"


# ---------------------------------------------------------------------------------------------------------------
# the volume lane: the same oracles on cases from seeded generators (see tests/fuzzkit.py)

fk.register("scorecard.yaml_text.volume", "scorecard.documents.volume", "scorecard.mutated.volume",
            "scorecard.suites.volume")
SHIPPED_TEXT = {name: (ROOT / "scorecards" / name).read_text() for name in SHIPPED}
TOP_KEYS = ["name", "version", "suites", "prompt", "decoding", "scorers", "gates", "kind", "description"]
SUITE_LINES = [line for p in sorted((ROOT / "scorecards" / "suites").glob("*.jsonl"))
               for line in p.read_bytes().splitlines()[:20] if line.strip()]


SUITE_KEYS = ["id", "category", "messages", "expected", "role", "content", "choices", "answer", "passages"]


def _dump(doc: object) -> str:
    return yaml.dump(doc, Dumper=yaml.CSafeDumper, allow_unicode=True, sort_keys=False)


def test_yaml_text_volume():
    tokens = fk.YAML_TOKENS + SCORECARD_KEYS + PATH_VALUES
    fk.run_volume("scorecard.yaml_text.volume", lambda rng: fk.rtokens(rng, tokens),
                  lambda text: _check(_write(text)), require=("refused",))


def r_document(rng: random.Random) -> str:
    doc = {(rng.choice(TOP_KEYS) if rng.random() < 0.8 else fk.ryaml_key(rng)): fk.ryaml(rng)
           for _ in range(rng.randrange(7))}
    if rng.random() < 0.5:  # a well-formed start, so the parser gets past the first keys
        doc = {"name": "fuzz", "version": "1", "suites": [{"name": "s", "path": rng.choice(PATH_VALUES)}], **doc}
    return _dump(doc)


def test_documents_volume():
    fk.run_volume("scorecard.documents.volume", r_document, lambda text: _check(_write(text)),
                  require=("refused",))


def r_mutated(rng: random.Random) -> str:
    name = rng.choice(sorted(SHIPPED))
    if rng.random() < 0.2:
        return fk.rmutate_text(SHIPPED_TEXT[name], rng)
    doc = fk.rmutate_doc(SHIPPED[name], rng, SCORECARD_KEYS)
    if rng.random() < 0.5:
        _repoint(doc, rng.choice(REFERENCES), rng.choice(PATH_VALUES))
    return _dump(doc)


def test_mutated_volume():
    fk.run_volume("scorecard.mutated.volume", r_mutated, lambda text: _check(_write(text)),
                  require=("loaded", "refused"))


def r_suite(rng: random.Random) -> bytes:
    lines = []
    for _ in range(rng.randrange(7)):
        r = rng.random()
        if r < 0.4:
            lines.append(rng.choice(SUITE_LINES))
        elif r < 0.6:
            lines.append(fk.rmutate_bytes(rng.choice(SUITE_LINES), rng).replace(b"\n", b" "))
        elif r < 0.85:
            item = json.loads(rng.choice(SUITE_LINES))
            lines.append(json.dumps(fk.rmutate_doc(item, rng, SUITE_KEYS, json_only=True)).encode())
        else:
            lines.append(json.dumps(fk.rjson(rng)).encode())
    return b"\n".join(lines)


def test_suites_volume():
    fk.run_volume("scorecard.suites.volume", r_suite, _check_suite, require=("loaded", "refused"))


def test_nul_byte_in_a_suite_path_is_a_clear_error():
    doc = dict(SHIPPED["triage.yaml"])
    doc["suites"] = [{"name": "x", "path": "a\x00b"}]
    path = _write(yaml.safe_dump(doc))
    with pytest.raises(GateError) as info:
        load_scorecard(path)
    assert_clear_error(info.value, path)


@pytest.mark.parametrize("key", ["implementation", "schema_from_contract"])
def test_a_file_reference_that_is_not_a_string_is_a_clear_error(key):
    """Found by the volume lane: a mapping as a scorer's file reference ended in a TypeError traceback."""
    doc = yaml.safe_load((ROOT / "scorecards" / "tool-use.yaml").read_text())
    doc["scorers"][0]["options"][key] = {"x": "../fixtures/tools/support_desk.py"}
    path = _write(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises(GateError) as info:
        load_scorecard(path)
    assert_clear_error(info.value, path)
    assert info.value.line is not None and key in path.read_text().splitlines()[info.value.line - 1]
