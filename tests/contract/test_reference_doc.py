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


def test_every_check_option_says_what_it_does_and_its_default():
    """Issue 28 item 9: each `checks.<check>.<option>` row of the reference has a meaning and a default, taken from
    the check's own options schema (its `description` and `default` annotations) or the code's defaults table."""
    schema = build("contract")
    rows = {line.split(" | ")[0].strip("| `"): line.split(" | ") for line in DOC.read_text().splitlines()
            if line.startswith("| `checks.")}
    for check, section in schema["properties"]["checks"]["properties"].items():
        for opt, node in section.get("properties", {}).items():
            assert node.get("description") and "default" in node, f"checks.{check}.{opt}"
            cells = rows[f"checks.{check}.{opt}"]
            assert cells[2].strip() and cells[3].strip(), cells  # default and meaning shown
    assert "| `checks.pii.use_ner` | boolean | `true` |" in DOC.read_text()


def test_documented_defaults_are_the_ones_the_code_uses(tmp_path):
    """The schema's defaults are what a check does with an empty section: read back through the code's own
    readers, so the reference cannot say one default while the check applies another."""
    from gate.contract import load_contract
    from gate.data.checks.semantic_duplicate import semantic_options
    from gate.data.neardup import neardup_config
    from gate.data.pii_scan import pii_config, secret_config
    from gate.template.options import TemplateOptions

    (tmp_path / "c.yaml").write_text("name: x\nversion: 1\n")
    contract = load_contract(tmp_path / "c.yaml")
    opts = {c: {k: v["default"] for k, v in s.get("properties", {}).items()}
            for c, s in build("contract")["properties"]["checks"]["properties"].items()}
    pii = pii_config(contract)
    assert [list(pii.entities), list(pii.ner_entities), pii.use_ner, pii.default_threshold, dict(pii.thresholds)] \
        == [opts["pii"][k] for k in ("entities", "ner_entities", "use_ner", "default_threshold", "thresholds")]
    sec = secret_config(contract)
    assert [sec.detect_secrets, sec.own_patterns, list(sec.plugins), sec.base64_limit, sec.hex_limit] \
        == [opts["secret"][k] for k in ("detect_secrets", "own_patterns", "plugins", "base64_limit", "hex_limit")]
    assert semantic_options(contract) == tuple(opts["semantic_duplicate"][k]
                                               for k in ("enabled", "threshold", "keep", "exact_max"))
    near = neardup_config(contract)
    assert (near.minhash.threshold, near.shingles.n, near.minhash.num_perm, near.minhash.seed,
            near.shingles.strip_punct, near.shingles.unit) == tuple(
        opts["near_duplicate"][k] for k in ("threshold", "ngram", "num_perm", "seed", "strip_punct", "unit"))
    t = TemplateOptions.from_mapping({})
    assert {k: getattr(t, k) for k in opts["template"]} == {
        k: tuple(v) if isinstance(v, list) else v for k, v in opts["template"].items()}
