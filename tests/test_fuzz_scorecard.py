"""Property-based fuzzing of the scorecard parser (gate/score/scorecard.py) and its suite reader: random YAML,
mutations of the shipped scorecards and broken suite files are loaded or refused with one clear line; never a
traceback. Mutated scorecards sit in a copy of the repository layout so their relative references resolve.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from gate.errors import GateError
from gate.score.scorecard import load_scorecard, load_suite
from tests.fuzzkit import assert_clear_error, fuzz_settings, json_values, mutate, yaml_token_text, yaml_values

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


def _check(path: Path) -> None:
    try:
        card = load_scorecard(path)
    except GateError as exc:
        # a suite's own error names the suite file; everything else names the scorecard
        where = Path(exc.file) if exc.file else path
        assert_clear_error(exc, where if where != path and where.exists() else path, max_len=600)
        return
    assert card.sha256 and card.suites
    for suite in card.suites:
        card.request_for(suite.items[0])  # an accepted scorecard can build its requests


def _write(text: str) -> Path:
    path = WORK / "scorecards" / "fuzz.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    return path


@fuzz_settings(0.04)
@given(yaml_token_text)
def test_random_yaml_text(text):
    _check(_write(text))


@fuzz_settings(0.03)
@given(st.dictionaries(st.sampled_from(["name", "version", "suites", "prompt", "decoding", "scorers", "gates",
                                        "kind", "description"]) | st.text(max_size=6), yaml_values, max_size=6))
def test_random_documents(doc):
    _check(_write(yaml.safe_dump(doc, allow_unicode=True)))


@fuzz_settings(0.08)
@given(st.sampled_from(sorted(SHIPPED)), st.data())
def test_mutated_shipped_scorecards(name, data):
    doc = mutate(SHIPPED[name], data, SCORECARD_KEYS)
    if data.draw(st.booleans()):  # point a reference somewhere odd
        paths = [("suites", 0, "path"), ("prompt", "tools_from_contract"), ("scorers", 0, "options", "implementation"),
                 ("scorers", 1, "options", "schema_from_contract")]
        target = data.draw(st.sampled_from(paths))
        node = doc
        try:
            for part in target[:-1]:
                node = node[part]
            node[target[-1]] = data.draw(st.sampled_from(PATH_VALUES))
        except (KeyError, IndexError, TypeError):
            pass
    text = yaml.safe_dump(doc, allow_unicode=True) if isinstance(doc, dict) else "[]"
    _check(_write(text))


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


@fuzz_settings(0.05)
@given(st.lists(suite_lines(), max_size=6))
def test_suite_files(lines):
    path = WORK / "suite.jsonl"
    path.write_bytes(b"\n".join(lines))
    try:
        suite = load_suite(path)
    except GateError as exc:
        assert_clear_error(exc, path)
        return
    assert suite.items and len({i.id for i in suite.items}) == len(suite.items)


def test_nul_byte_in_a_suite_path_is_a_clear_error():
    doc = dict(SHIPPED["triage.yaml"])
    doc["suites"] = [{"name": "x", "path": "a\x00b"}]
    path = _write(yaml.safe_dump(doc))
    with pytest.raises(GateError) as info:
        load_scorecard(path)
    assert_clear_error(info.value, path)
