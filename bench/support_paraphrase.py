"""The price of factual_support's strictness on real paraphrases: MRPC's human-judged paraphrase pairs read as
passage and claim (both directions), with the reason each claim failed, and a hand-labelled sample of the claims
failed by each of the rules that read single words: a word in place of the passage's ("a word the passage does not
use: 'X' where the passage says 'Y'") and a phrase of one word the passage never uses ("an added phrase ...").

Why: the perturbation benches (support_perturbations.py, support_heldout.py) only measure faithful claims that keep
the passage's words. Real answers put other words in place of the passage's; some say the same thing ("concepts"
for "ideas"), some change the fact ("today" for "Thursday", "explosives" for "cargo"). This measures how many
paraphrases each rule fails and, by hand labels, how many of those were still faithful.

    .venv/bin/python bench/support_paraphrase.py /path/to/MRPC [--labels bench/support_paraphrase_labels.jsonl]

MRPC: magsail/MRPC (the public GitHub copy, commit e7803fe); the Microsoft Research Paraphrase Corpus licence
allows research use; nothing of it is committed except the quoted words of the labelled sample's reasons.
"""

from __future__ import annotations

import argparse
import hashlib
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

#: The rules sampled, by the start of the reason they give.
RULES = {"a word in place of the passage's": "a word the passage does not use",
         "an added phrase of one word": "an added phrase the passage does not hold"}
REASONS = ("covered", "name(s) not in the passage", "number", "a clause is not in the passage", *RULES.values(),
           "negation differs", "opposite meaning", "swap roles")


def reason(why: str) -> str:
    return next((k for k in REASONS if why.startswith(k) or (k == "swap roles" and k in why)),
                "other (a name where the passage names another)")


def key(passage: str, claim: str) -> str:
    return hashlib.sha256(f"{passage}\n{claim}".encode()).hexdigest()[:16]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("repo", type=Path)
    ap.add_argument("--labels", type=Path, default=ROOT / "bench" / "support_paraphrase_labels.jsonl")
    ap.add_argument("--sample", type=int, default=30, help="claims sampled per rule")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = ap.parse_args()
    fs = FactualSupport()
    rows = []
    for label, a, b in read_pairs(args.repo):
        if label != 1:
            continue
        for p, c in ((a, b), (b, a)):
            ok, _, why = fs.check_claim(c, sentences(p))
            rows.append({"key": key(p, c), "ok": ok, "why": why})
    labels = {}
    if args.labels.is_file():
        labels = {d["key"]: d for d in map(json.loads, args.labels.read_text(encoding="utf-8").splitlines())}
    by = Counter(reason(r["why"]) for r in rows if not r["ok"])
    n, ok = len(rows), sum(r["ok"] for r in rows)
    lines = [f"# factual_support on MRPC paraphrases ({datetime.now(UTC).isoformat(timespec='seconds')})", "",
             "Command: `.venv/bin/python bench/support_paraphrase.py <MRPC repo>` (magsail/MRPC e7803fe). Each of",
             "MRPC's 3,900 pairs labelled paraphrase, read both ways (passage, claim): 'supported' is the",
             "deterministic method's verdict. Many MRPC paraphrases add or drop a detail, so most claims fail on",
             "coverage; what matters here is each word rule's share and, in the labelled samples, how many",
             "of the claims it fails still said the same thing (faithful: a synonym, a more general word, a",
             "restatement, a frame) and how many changed or added a fact.", "",
             f"Claims: {n:,}; supported: {ok:,} ({ok / n:.1%}). Before the word rules (main at 003b22f, "
             "2026-12-06): 2,337 supported.", "",
             "| first reason a claim failed | claims |", "|---|---:|"]
    lines += [f"| {k} | {v:,} |" for k, v in by.most_common()]
    summary = {}
    for name, prefix in RULES.items():
        ruled = [r for r in rows if not r["ok"] and r["why"].startswith(prefix)]
        sample = random.Random(0).sample(ruled, min(args.sample, len(ruled)))
        done = [labels[r["key"]] for r in sample if r["key"] in labels]
        faithful = sum(1 for d in done if d["faithful"])
        summary[name] = {"claims": len(ruled), "sample": len(sample), "labelled": len(done), "faithful": faithful}
        lines += ["", f"## {name}", "", f"{len(ruled):,} claims ({len(ruled) / n:.2%}). Random sample of "
                  f"{len(sample)} (seed 0), labelled by hand in `{args.labels.relative_to(ROOT)}`: {len(done)} "
                  f"labelled, **{faithful} faithful** (failed wrongly), {len(done) - faithful} changed or added a "
                  "fact (failed rightly).", "", "| reason | faithful | note |", "|---|---|---|"]
        lines += [f"| {r['why'][len(prefix) + 2:]} | {labels[r['key']]['faithful'] if r['key'] in labels else '?'}"
                  f" | {labels.get(r['key'], {}).get('note', '')} |" for r in sample]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "support_paraphrase.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (args.out / "support_paraphrase.json").write_text(json.dumps(
        {"claims": n, "supported": ok, "failed_by": dict(by), "rules": summary}, indent=2) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
