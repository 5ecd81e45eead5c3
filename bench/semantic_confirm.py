"""Can a lexical confirmation make all-MiniLM-L6-v2 cosines a paraphrase test? Measured on MRPC, written to
bench/results/semantic_confirm.md (issue 32 item 1; the check does not do this yet: see the result).

The issue asks for the embedding as a candidate generator (a looser threshold) whose candidates an independent test
confirms: the two texts agree on what matters. Tried here, as a rule a check could apply to any pair:

- the same numbers (as written, thousands separators dropped) and the same polarity (a negation in both or neither);
- content-word coverage: the shared content words (lower-cased, spaCy's English stop words removed, a crude suffix
  strip) over the larger of the two sets of content words, at least `cov`.

A pair is a paraphrase when cosine >= `hi` (today's rule at 0.92), or cosine >= `lo` and it is confirmed. The grid is
fitted on one seeded half of MRPC (the best recall at precision >= 0.9) and scored on the other half, both ways.

    .venv/bin/python bench/semantic_confirm.py [/work/.mirror/magsail+MRPC/repo]
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.semantic_dedup import read_pairs  # noqa: E402

OUT = ROOT / "bench" / "results" / "semantic_confirm.md"
NUM = re.compile(r"\d+(?:[.,]\d+)*")
NEG = {"not", "no", "never", "without", "nor", "none", "cannot"}


def numbers(t: str) -> set[str]:
    return {n.replace(",", "") for n in NUM.findall(t)}


def negated(t: str) -> bool:
    return bool(set(re.findall(r"[a-z']+", t.lower())) & NEG) or "n't" in t.lower()


def coverage(a: str, b: str, stop: frozenset[str]) -> float:
    def words(t: str) -> set[str]:
        out = set()
        for w in re.findall(r"[a-z0-9]+", t.lower()):
            if w in stop:
                continue
            for s in ("ing", "ed", "es", "s"):
                if w.endswith(s) and len(w) > len(s) + 2:
                    w = w[:-len(s)]
                    break
            out.add(w)
        return out

    wa, wb = words(a), words(b)
    return len(wa & wb) / max(len(wa), len(wb)) if wa and wb else 0.0


def main() -> None:
    from gate.data.text import english_stop_words
    from gate.embed.encoder import Encoder
    from gate.embed.model import ensure_model

    repo = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("/work/.mirror/magsail+MRPC/repo")
    pairs = read_pairs(repo)
    texts = list(dict.fromkeys(t for _, a, b in pairs for t in (a, b)))
    at = {t: i for i, t in enumerate(texts)}
    emb = Encoder(ensure_model()).encode(texts)
    cos = np.array([float(emb[at[a]] @ emb[at[b]]) for _, a, b in pairs])
    y = np.array([label for label, _, _ in pairs])
    stop = english_stop_words()
    same = np.array([numbers(a) == numbers(b) and negated(a) == negated(b) for _, a, b in pairs])
    cov = np.array([coverage(a, b, stop) for _, a, b in pairs])

    def score(ix: np.ndarray, hi: float, lo: float, c: float) -> tuple[float, float]:
        sel = (cos[ix] >= hi) | ((cos[ix] >= lo) & same[ix] & (cov[ix] >= c))
        p = float(y[ix][sel].mean()) if sel.any() else 0.0
        return p, float((sel & (y[ix] == 1)).sum() / max((y[ix] == 1).sum(), 1))

    everything = np.arange(len(y))
    grid = [(hi, lo, c) for hi in (0.92, 0.95, 1.01) for lo in (0.70, 0.75, 0.80, 0.85)
            for c in (0.6, 0.65, 0.7, 0.75, 0.8)]
    perm = np.random.default_rng(0).permutation(len(y))
    halves = (perm[: len(y) // 2], perm[len(y) // 2:])
    lines = ["# Paraphrase confirmation on MRPC (issue 32 item 1)", "",
             f"`.venv/bin/python bench/semantic_confirm.py` (MRPC, {len(y):,} pairs, {int(y.sum()):,} paraphrases; "
             "all-MiniLM-L6-v2). Rule: cosine >= hi, or cosine >= lo and the pair has the same numbers and polarity "
             "and content-word coverage >= cov.", "",
             "| rule | precision | recall |", "| --- | ---: | ---: |"]
    p, r = score(everything, 0.92, 2.0, 1.0)
    lines.append(f"| today: cosine >= 0.92 | {p:.3f} | {r:.3f} |")
    for g in [(0.92, 0.70, 0.75), (0.92, 0.80, 0.70), (0.95, 0.80, 0.65), (1.01, 0.70, 0.70)]:
        p, r = score(everything, *g)
        lines.append(f"| hi {g[0]}, lo {g[1]}, cov {g[2]} | {p:.3f} | {r:.3f} |")
    lines += ["", "Fitted on one half (best recall at precision >= 0.9 over the grid), scored on the other:", "",
              "| fitted on | rule (hi, lo, cov) | recall on the fitting half | held-out precision | held-out recall |",
              "| --- | --- | ---: | ---: | ---: |"]
    for name, (fit, test) in (("half A", halves), ("half B", halves[::-1])):
        ok = [(score(fit, *g)[1], g) for g in grid if score(fit, *g)[0] >= 0.9]
        r_fit, g = max(ok)
        p_t, r_t = score(test, *g)
        lines.append(f"| {name} | {g} | {r_fit:.3f} | {p_t:.3f} | {r_t:.3f} |")
    lines += ["", "Reading: the confirmation lifts recall at precision 0.9 from 0.275 to about 0.43 on held-out "
              "halves, short of the issue's 0.5, and precision sits at the 0.9 line. MRPC's negatives are pairs about "
              "one news event that share most words and numbers (an extra clause, another attribution); a lexical "
              "test cannot see what they leave out. So the check keeps its rule (cosine >= threshold) for now; the "
              "next step is a model that reads both texts at once (a cross-encoder) as the confirmation, if one "
              "ships on PyPI, measured on MRPC and a second labelled corpus."]
    OUT.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
