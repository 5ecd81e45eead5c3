"""Published JSON Schemas of the files people write by hand: contracts, scorecards and training specs.

Each is the meta-schema the loader already validates with (gate/contract/file_schema.py with every check's own
`options_schema`, gate/score/scorecard_schema.py, gate/train/spec_schema.py), so an editor that checks a file against
it accepts exactly what `gate` accepts. Only annotations are added (title, descriptions, defaults, examples from
gate/schema/docs.py) plus the names the loader checks in code (check names under `checks:` and
`thresholds.max_findings`), so editors complete them too. The files are shipped in the wheel (gate/schema/*.json)
and committed at the repository root (schemas/) for `# yaml-language-server: $schema=` lines; a test fails when
either drifts from what this module builds.
"""

from __future__ import annotations

import copy
import json
from importlib import resources
from typing import Any

KINDS: tuple[str, ...] = ("contract", "scorecard", "trainspec")
TITLES = {"contract": "gate data contract", "scorecard": "gate scorecard", "trainspec": "gate training spec"}


def file_name(kind: str) -> str:
    return f"{kind}.schema.json"


def _meta(kind: str) -> dict[str, Any]:
    if kind == "contract":
        from gate.contract.file_schema import contract_schema

        return copy.deepcopy(contract_schema())
    if kind == "scorecard":
        from gate.score.scorecard_schema import SCORECARD_SCHEMA

        return copy.deepcopy(SCORECARD_SCHEMA)
    if kind == "trainspec":
        from gate.train.spec_schema import SPEC_SCHEMA

        return copy.deepcopy(SPEC_SCHEMA)
    raise ValueError(f"unknown schema kind {kind!r} (one of {', '.join(KINDS)})")


def _annotate(node: dict[str, Any], docs: dict[str, dict[str, Any]], path: str) -> None:
    """Puts each documented key's description/default/examples on its schema node (never a validating keyword)."""
    for key, value in docs.get(path, {}).items():
        node.setdefault(key, value)
    for name, sub in (node.get("properties") or {}).items():
        if isinstance(sub, dict):
            _annotate(sub, docs, f"{path}.{name}" if path else name)
    extra = node.get("additionalProperties")
    if isinstance(extra, dict):
        _annotate(extra, docs, f"{path}.<name>" if path else "<name>")
    items = node.get("items")
    if isinstance(items, dict):
        _annotate(items, docs, f"{path}[]")


def build(kind: str) -> dict[str, Any]:
    """The published schema of `kind`: the loader's meta-schema plus annotations."""
    from gate.schema.docs import contract_docs

    schema = json.loads(json.dumps(_meta(kind)))  # no shared sub-dicts: each key gets its own annotations
    if kind == "contract":
        from gate.names import CHECK_NAMES

        checks = schema["properties"]["checks"]
        checks["additionalProperties"] = False  # the loader refuses an unknown check name (with the list)
        limits = schema["properties"]["thresholds"]["properties"]["max_findings"]
        limits["propertyNames"] = {"enum": list(CHECK_NAMES)}
    out = {"$schema": schema.pop("$schema", "https://json-schema.org/draft/2020-12/schema"),
           "title": TITLES[kind], **schema}
    _annotate(out, contract_docs() if kind == "contract" else {}, "")
    return out


def dumps(kind: str) -> str:
    """The schema as the committed file holds it (stable key order, two-space indent, final newline)."""
    return json.dumps(build(kind), indent=2, ensure_ascii=False) + "\n"


def shipped(kind: str) -> str:
    """The copy shipped in the wheel (package data), byte for byte."""
    if kind not in KINDS:
        raise ValueError(f"unknown schema kind {kind!r} (one of {', '.join(KINDS)})")
    return resources.files("gate.schema").joinpath(file_name(kind)).read_text(encoding="utf-8")
