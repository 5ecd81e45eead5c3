"""One text digest for every caller: the values are pinned to what the code gave before the copies were merged
(commit 19f416a), since the splitter merges groups by it and the memos and dedup checks look texts up by it."""

from __future__ import annotations

import ast
import json
from pathlib import Path

from gate.data.base import Batch
from gate.data.dedup_text import dedup_texts
from gate.data.splitter import SplitConfig, assign, split_dataset
from gate.data.text import normalize, row_text
from gate.io.digest import text_digest
from tests.conftest import ROOT

FAULTY = ROOT / "fixtures" / "datasets" / "triage-faulty"


def test_text_digest_keeps_the_values_the_four_copies_gave() -> None:
    # the old pii_scan.TextCache / embedding memo keys of these texts (a lone surrogate: surrogatepass, no error)
    assert text_digest("Reset my password, please.").hex() == "20cc105992b14b9973b54915bdac0858"
    assert text_digest("caf\u00e9 \ud800 lone surrogate").hex() == "1562035ec215a5b47a7e7967caf2836a"
    assert len(text_digest("")) == 16


def test_a_known_rows_digest_and_its_merged_split_are_unchanged(tmp_path: Path, triage_contract) -> None:
    """tri-105779 (customer cus-61544, whose own split is train) shares its normal text with a row of
    cus-31007: the splitter merges the two groups by the digest, so the row lands in test, as it did before."""
    row = next(r for r in map(json.loads, (FAULTY / "test.jsonl").read_text("utf-8").splitlines())
               if r["id"] == "tri-105779")
    text = row_text(row, triage_contract.text_roles, triage_contract.include_tool_calls)
    digest = dedup_texts(Batch("test", "test.jsonl", [(1, row)]), triage_contract)[1][0]
    assert digest == text_digest(normalize(text))
    assert digest.hex() == "33fd53f3070327ad6ce4d70a08ce992e"
    cfg = SplitConfig(drop_ungrouped=True)
    out = split_dataset(str(FAULTY), triage_contract, str(tmp_path / "o"), cfg)
    assert out.counts == {"train": 489, "val": 49, "test": 54} and out.merged_groups == 2
    placed = {r.get("id"): name for name in cfg.names
              for r in map(json.loads, (tmp_path / "o" / f"{name}.jsonl").read_text("utf-8").splitlines())}
    assert assign("cus-61544", cfg) == "train"
    assert placed["tri-105779"] == placed["tri-922904"] == "test"  # the whole group followed its exact copy


def test_no_module_outside_gate_io_digest_computes_the_text_digest_itself() -> None:
    """The copies (pii_scan, the embedding encoder, the splitter, scrub, dedup_text) are gone; a new caller uses
    text_digest. Other blake2b uses in gate hash what is not a row's text (a config's repr, an HTTP body)."""
    copies = []
    for path in sorted((ROOT / "gate").rglob("*.py")):
        if path == ROOT / "gate" / "io" / "digest.py":
            continue
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Call) and _name(node.func) == "blake2b" and node.args \
                    and isinstance(node.args[0], ast.Call) and _name(node.args[0].func) == "encode" \
                    and any(isinstance(a, ast.Constant) and a.value == "surrogatepass" for a in node.args[0].args):
                copies.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert copies == []


def _name(func: ast.expr) -> str | None:
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
