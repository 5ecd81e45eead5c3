"""The price of factual_support's strictness on real paraphrases: MRPC's human-judged paraphrase pairs read as
passage and claim (both directions), with the reason each claim failed, and a labelled sample of the claims failed
by the in-place-word rule ("a word the passage does not use: 'X' where the passage says 'Y'").

Why: the perturbation benches (support_perturbations.py, support_heldout.py) only measure faithful claims that keep
the passage's words. Real answers put other words in place of the passage's; some say the same thing ("concepts"
for "ideas"), some change the fact ("today" for "Thursday", "employees" for "officers"). This measures how many
paraphrases the rule fails and, by hand labels, how many of those were still faithful.

    .venv/bin/python bench/support_paraphrase.py /path/to/MRPC [--labels bench/support_paraphrase_labels.jsonl]

MRPC: magsail/MRPC (the public GitHub copy, commit e7803fe); the Microsoft Research Paraphrase Corpus licence
allows research use; nothing of it is committed except the short quoted words of the labelled sample.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.semantic_dedup import read_pairs  # noqa: E402
from gate.score.scorers.support import FactualSupport, sentences  # noqa: E402

RULE = "a word the passage does not use"


def reason(why: str) -> str:
    for key in ("covered", "name(s) not in the passage", "number(s)", "a clause is not in the passage",
                "negation differs", "opposite meaning", RULE, "swap roles"):
        if key in why:
            return key
    return "other (a name where the passage names another)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("repo", type=Path)
    ap.add_argument("--labels", type=Path, default=ROOT / "bench" / "support_paraphrase_labels.jsonl")
    ap.add_argument("--sample", type=int, default=50)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = ap.parse_args()
    fs = FactualSupport()
    rows = []
    for label, a, b in read_pairs(args.repo):
        if label != 1:
            continue
        for p, c in ((a, b), (b, a)):
            ok, _, why = fs.check_claim(c, sentences(p))
            rows.append({"passage": p, "claim": c, "ok": ok, "why": why})
    by = Counter(reason(r["why"]) for r in rows if not r["ok"])
    ruled = [r for r in rows if not r["ok"] and RULE in r["why"]]
    sample = random.Random(0).sample(ruled, min(args.sample, len(ruled)))
    labels = {}
    if args.labels.is_file():
        labels = {d["why"]: d for d in map(json.loads, args.labels.read_text(encoding="utf-8").splitlines())}
    n = len(rows)
    ok = sum(r["ok"] for r in rows)
    lines = [f"# factual_support on MRPC paraphrases ({datetime.now(UTC).isoformat(timespec='seconds')})", "",
             "Command: `.venv/bin/python bench/support_paraphrase.py <MRPC repo>` (magsail/MRPC e7803fe). Each of",
             "MRPC's 3,900 pairs labelled paraphrase, read both ways (passage, claim): 'supported' is the",
             "deterministic method's verdict. Many MRPC paraphrases add or drop a detail, so most claims fail on",
             "coverage; what matters here is the in-place-word rule's share and, in the labelled sample, how many",
             "of the claims it fails still said the same thing.", "",
             f"Claims: {n:,}; supported: {ok:,} ({ok / n:.1%}).", "",
             "| first reason a claim failed | claims |", "|---|---:|"]
    lines += [f"| {k} | {v:,} |" for k, v in by.most_common()]
    done = [labels[r["why"]] for r in sample if r["why"] in labels]
    faithful = sum(1 for d in done if d["faithful"])
    lines += ["", f"In-place-word failures: {len(ruled):,} ({len(ruled) / n:.1%} of claims). Random sample of "
              f"{len(sample)} (seed 0), labelled by hand in `{args.labels.relative_to(ROOT)}` (faithful = the claim "
              "says what the passage says, the word a synonym, a more general word or a restatement):"
              f" {len(done)} labelled, **{faithful} faithful** (failed wrongly), {len(done) - faithful} changed or "
              "added a fact (failed rightly).", "", "| reason | faithful | note |", "|---|---|---|"]
    lines += [f"| {r['why'][len(RULE) + 2:]} | {labels[r['why']]['faithful'] if r['why'] in labels else '?'} | "
              f"{labels.get(r['why'], {}).get('note', '')} |" for r in sample]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "support_paraphrase.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (args.out / "support_paraphrase.json").write_text(json.dumps(
        {"claims": n, "supported": ok, "failed_by": dict(by), "in_place": len(ruled), "sample": len(sample),
         "labelled": len(done), "faithful_in_sample": faithful}, indent=2) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
