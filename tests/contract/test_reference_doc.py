"""docs/contracts.md is generated from the published contract schema (issue 18 item 14) and cannot drift; every
key of the meta-schema has a meaning, every check a section with its options, every threshold a row.
GATE_UPDATE_SCHEMAS=1 rewrites the page after a change."""

import os

from gate.names import CHECK_NAMES
from gate.schema import build
from gate.schema.reference import render
from tests.conftest import ROOT

DOC = ROOT / "docs" / "contracts.md"


def _paths(node, path=""):
    for name, sub in (node.get("properties") or {}).items():
        here = f"{path}.{name}" if path else name
        yield here, sub
        if here != "checks":
            yield from _paths(sub, here)
    extra = node.get("additionalProperties")
    if isinstance(extra, dict) and extra.get("properties"):
        yield f"{path}.<name>", extra
        yield from _paths(extra, f"{path}.<name>")
    items = node.get("items")
    if isinstance(items, dict) and items.get("properties"):
        yield from _paths(items, f"{path}[]")


def test_the_reference_is_the_generated_one():
    text = render()
    if os.environ.get("GATE_UPDATE_SCHEMAS"):
        DOC.write_text(text)
    assert DOC.read_text() == text, "docs/contracts.md drifted: rerun with GATE_UPDATE_SCHEMAS=1"


def test_every_key_check_option_and_threshold_is_in_it():
    text = DOC.read_text()
    schema = build("contract")
    for path, node in _paths(schema):
        assert node.get("description"), f"{path} has no meaning in gate/schema/docs.py"
        assert f"| `{path}` |" in text, path
    for check in CHECK_NAMES:
        assert f"### `{check}`" in text
        assert f"| `thresholds.max_findings.{check}` |" in text
        for opt in schema["properties"]["checks"]["properties"][check].get("properties", {}):
            assert f"| `checks.{check}.{opt}` |" in text
    assert "| `messages.roles` | list of `system` \\| `developer`" in text  # enums as values, escaped for tables
    assert '| `checks.near_duplicate.threshold` | number | `0.8` |' in text  # defaults from the check's code
