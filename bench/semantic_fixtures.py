"""all-MiniLM-L6-v2 cosines on the faulty fixture datasets: the planted pairs (exact, near, reworded) against the
closest pair of distinct rows, within a split (what `semantic_duplicate` compares), across splits (`leakage` with
`semantic`) and training rows against suite items (`contamination` with `semantic`). It shows which threshold
separates planted rewordings from distinct templated tickets; written to bench/results/semantic_fixtures.md.

    .venv/bin/python bench/semantic_fixtures.py
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
REF = re.compile(r"(train|val|test) row (\d+) \(")


def main() -> None:
    from gate.contract import load_contract
    from gate.data.evalsets import load_eval_items
    from gate.data.text import row_text
    from gate.embed.encoder import encode

    lines = ["# Semantic dedup on the fixtures: planted pairs vs the closest distinct rows", "",
             "Command: `.venv/bin/python bench/semantic_fixtures.py` (all-MiniLM-L6-v2, the rows' dedup text).", "",
             "| dataset | pair | cosine |", "| --- | --- | --- |"]
    for kind in ("triage", "tool-use"):
        contract = load_contract(ROOT / "contracts" / f"{kind}.yaml")
        ds = ROOT / "fixtures" / "datasets" / f"{kind}-faulty"
        faults = json.loads((ds / "FAULTS.json").read_text("utf-8"))
        rows = {s: [json.loads(x) for x in (ds / f"{s}.jsonl").open(encoding="utf-8")]
                for s in ("train", "val", "test")}
        keys = [(s, i + 1) for s in rows for i in range(len(rows[s]))]
        pos = {k: n for n, k in enumerate(keys)}
        emb = encode([row_text(rows[s][i - 1], contract.text_roles, contract.include_tool_calls) for s, i in keys])
        sims = emb @ emb.T
        np.fill_diagonal(sims, -1)
        for f in faults:
            m = REF.search(f["note"])
            if not m or f["check"] not in ("exact_duplicate", "near_duplicate", "leakage", "semantic_duplicate"):
                continue
            a, b = pos[(f["split"], f["row"])], pos[(m.group(1), int(m.group(2)))]
            lines.append(f"| {kind} | planted {f['check']}: {f['note'].split(' (')[0]} | {sims[a, b]:.4f} |")
            sims[a, b] = sims[b, a] = -1
        split = np.asarray([s for s, _ in keys])
        same = split[:, None] == split[None, :]
        for name, mask in (("closest distinct rows, same split", same), ("closest distinct rows, across splits",
                                                                           ~same)):
            w = np.where(mask, sims, -1)
            i, j = np.unravel_index(np.argmax(w), w.shape)
            lines.append(f"| {kind} | {name} ({keys[i][0]} {keys[i][1]}, {keys[j][0]} {keys[j][1]}) | {w[i, j]:.4f} |")
        items = load_eval_items(contract.evaluation_sets)
        ie = encode([it.text.replace("\x1e", "\n") for it in items])
        planted = {(f["split"], f["row"]) for f in faults if f["check"] == "contamination"}
        train = [n for n, k in enumerate(keys) if k[0] == "train" and k not in planted]
        lines.append(f"| {kind} | closest training row to a suite item (planted contamination left out) | "
                     f"{float((emb[train] @ ie.T).max()):.4f} |")
    lines += ["", "So the triage fixture run sets threshold 0.95 (tests/data/test_fixture_faults.py) and finds both "
              "reworded copies and nothing else. In tool-use, distinct conversations (same tool calls, same reply "
              "templates) reach 0.967, and a trial of the same word swaps on two tool-use rows scored 0.9275 and "
              "0.9652 (measured once, not planted): no threshold separates them, so no paraphrase is planted there.",
              ""]
    (ROOT / "bench" / "results" / "semantic_fixtures.md").write_text("\n".join(lines), "utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
