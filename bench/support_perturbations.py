"""Benchmark: the factual-support scorer against seeded perturbations of passages nobody here wrote.

Passages: 150 GSM8K test problem statements (MIT; tests/score/data/README.md). For each passage the generator takes
one of its sentences and makes a claim of each kind:
- number_swap: one figure replaced by a different one (half the time another figure of the same passage, the hard
  case: it occurs in the passage, just not for this fact);
- negation: "not" after the first auxiliary, else "does not" + the verb's base form;
- antonym: a word replaced by its opposite (generator lexicon below, written apart from the scorer's, overlapping);
- entity_swap: two names of the sentence exchanged, else a name replaced by one of another passage;
- paraphrase (faithful): figures spelled out, a reporting frame, the first clause only, two adjacent sentences
  joined, or a fronted adverbial; the meaning is kept.
A perturbation is caught when `supported` is 0; a paraphrase passes when it is 1. Targets: >= 90 % caught, >= 90 %
passed. Writes bench/results/support_perturbations.{json,md}.

    .venv/bin/python bench/support_perturbations.py [--seed 0] [--method deterministic]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from collections import Counter, defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gate.engines.types import Response  # noqa: E402
from gate.score.scorers.support import FactualSupport, sentences  # noqa: E402
from gate.score.types import Item  # noqa: E402

DATA = ROOT / "tests" / "score" / "data" / "gsm8k_passages.jsonl"
KINDS = ("number_swap", "negation", "antonym", "entity_swap", "paraphrase")
AUX = ("is", "are", "was", "were", "can", "will", "could", "would", "should", "must", "has to", "have to")
GEN_ANTONYMS = {
    "more": "fewer", "fewer": "more", "less": "more", "older": "younger", "younger": "older", "bigger": "smaller",
    "smaller": "bigger", "larger": "smaller", "longer": "shorter", "shorter": "longer", "first": "last",
    "last": "first", "buys": "sells", "sells": "buys", "bought": "sold", "sold": "bought", "morning": "evening",
    "evening": "morning", "increased": "decreased", "increases": "decreases", "higher": "lower", "lower": "higher",
    "faster": "slower", "slower": "faster", "before": "after", "after": "before", "gains": "loses",
    "loses": "gains", "adds": "removes", "cheaper": "more expensive", "expensive": "cheap", "heavier": "lighter",
    "same": "different", "full": "empty", "early": "late", "late": "early", "old": "new",
    "new": "old", "left": "right", "up": "down", "wins": "loses", "won": "lost",
    "gives": "takes", "gave": "took", "receives": "sends", "received": "sent", "open": "closed", "large": "small",
    "small": "large", "long": "short", "high": "low", "maximum": "minimum", "minimum": "maximum",
    "twice": "half", "double": "half", "half": "twice",
}
NUM_WORDS = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen " \
            "sixteen seventeen eighteen nineteen twenty".split()
_NAME = re.compile(r"\b[A-Z][a-z]{2,}\b")
_NOT_NAMES = set("""The This That These Those There Then She Her His He They Their Each Every After Before When
While During Since For From With Without And But Also Some All Half One Two Three Four Five Six Seven Eight Nine Ten
Twenty Thirty Forty Fifty Hundred Monday Tuesday Wednesday Thursday Friday Saturday Sunday January February March
April May June July August September October November December It Its In On At To Of If However Both Many Most
Last First Second Third Next Now Today Tomorrow Yesterday According Finally Initially Meanwhile Later Together
Instead""".split())


def load_passages() -> list[dict[str, str]]:
    return [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines() if line.strip()]


_LOWER: set[str] = set()  # every word the corpus writes in lower case somewhere: such a word is no name


def names_in(text: str) -> list[str]:
    return [m for m in dict.fromkeys(_NAME.findall(text)) if m not in _NOT_NAMES and m.lower() not in _LOWER]


def _base(verb: str) -> str:
    for suf, rep in (("ies", "y"), ("ches", "ch"), ("shes", "sh"), ("sses", "ss"), ("xes", "x"), ("oes", "o")):
        if verb.endswith(suf):
            return verb[: -len(suf)] + rep
    return verb[:-1] if verb.endswith("s") and not verb.endswith("ss") else verb


def number_swap(s: str, passage: str, rng: random.Random) -> str | None:
    nums = list(re.finditer(r"(?<![\w.,])\d+(?:,\d{3})*(?![\w,]|\.\d)", s))
    if not nums:
        return None
    m = rng.choice(nums)
    n = int(m.group(0).replace(",", ""))
    others = sorted({int(x.replace(",", "")) for x in re.findall(r"(?<![\w.,])\d+(?:,\d{3})*(?![\w,]|\.\d)", passage)}
                    - {n})
    new = rng.choice(others) if others and rng.random() < 0.5 else n + rng.choice([1, 2, 3, 5, 10, n or 1])
    return s[: m.start()] + f"{new:,}".replace(",", "" if "," not in m.group(0) else ",") + s[m.end():]


def negation(s: str, rng: random.Random) -> str | None:
    if re.search(r"\b(?:not|never|no|none|nothing|without)\b|n't\b", s):
        return None  # a second negation could cancel the first
    for aux in AUX:
        m = re.search(rf"\b{aux}\b", s)
        if m:
            return s[: m.end()] + " not" + s[m.end():]
    m = re.search(r"\b(has|have|had) (?=\w+(?:ed|en)\b)", s)
    if m:
        return s[: m.end() - 1] + " not " + s[m.end():]
    m = re.match(r"^((?:[A-Z][a-z]+|He|She|It)(?:'s \w+)?) ([a-z]+s)\b", s)
    if m and m.group(2) not in ("is", "has", "was"):
        return f"{m.group(1)} does not {_base(m.group(2))}{s[m.end():]}"
    m = re.match(r"^((?:[A-Z][a-z]+|He|She|It)) has\b", s)
    if m:
        return f"{m.group(1)} does not have{s[m.end():]}"
    return None


def antonym(s: str, rng: random.Random) -> str | None:
    hits = [m for m in re.finditer(r"\b[a-z]+\b", s) if m.group(0) in GEN_ANTONYMS]
    if not hits:
        return None
    m = rng.choice(hits)
    return s[: m.start()] + GEN_ANTONYMS[m.group(0)] + s[m.end():]


def entity_swap(s: str, passage: str, pool: list[str], rng: random.Random) -> str | None:
    names = names_in(s)
    if len(names) >= 2:
        a, b = rng.sample(names, 2)
        # exchanging coordinated names ("Fred and Pam") or the parts of one name ("San Rafael") changes nothing
        between = s[min(s.index(a), s.index(b)):max(s.index(a), s.index(b))]
        if not re.fullmatch(r"(?:[A-Z][a-z]+|,|and|or|\s)+", between):
            return re.sub(rf"\b({a}|{b})\b", lambda m: b if m.group(0) == a else a, s)
    if names:
        here = set(names_in(passage))
        other = rng.choice([p for p in pool if p not in here])
        return re.sub(rf"\b{names[0]}\b", other, s)
    return None


def paraphrase(i: int, s: str, sents: list[str], rng: random.Random) -> tuple[str, str] | None:
    """(how, claim): a meaning-preserving rewrite, the kind chosen by the sentence's shape."""
    options: list[tuple[str, str]] = []
    spelled = re.sub(r"(?<![\w.,$])(\d{1,2})(?![\w.,%])",
                     lambda m: NUM_WORDS[int(m.group(1))] if int(m.group(1)) <= 20 else m.group(1), s)
    if spelled != s:
        options.append(("figures spelled out", spelled))
    lead = s if names_in(s[:12]) else s[0].lower() + s[1:]
    options.append(("reporting frame", "According to the text, " + lead))
    parts = re.split(r",\s+(?:and|but|while)\s+|\s+while\s+|,\s+but\s+", s, maxsplit=1)
    if len(parts) == 2 and len(parts[0].split()) >= 4:
        options.append(("first clause only", parts[0].rstrip(".") + "."))
    if i + 1 < len(sents):
        nxt = sents[i + 1]
        nxt = nxt if names_in(nxt[:12]) else nxt[0].lower() + nxt[1:]
        options.append(("two sentences joined", s.rstrip(".") + ", and " + nxt))
    m = re.match(r"^(.*?\w)\s+((?:in|on|at|every|each|after|before|during) [^,]{3,30})\.$", s)
    if m and "," not in m.group(1):
        front = m.group(2)[0].upper() + m.group(2)[1:]
        body = m.group(1) if names_in(m.group(1)[:12]) else m.group(1)[0].lower() + m.group(1)[1:]
        options.append(("fronted adverbial", f"{front}, {body}."))
    return rng.choice(options) if options else None


def build_suite(seed: int = 0) -> list[dict[str, Any]]:
    """Every (passage, kind) pair the generator can make, seeded: the same seed gives the same suite."""
    rng = random.Random(seed)
    passages = load_passages()
    _LOWER.update(w for p in passages for w in re.findall(r"\b[a-z]+\b", p["passage"]))
    pool = sorted({n for p in passages for n in names_in(p["passage"])})
    out: list[dict[str, Any]] = []
    for p in passages:
        sents = sentences(p["passage"])
        order = list(range(len(sents)))
        for kind in KINDS:
            rng.shuffle(order)
            for i in order:
                s = sents[i]
                if kind == "number_swap":
                    claim, how = number_swap(s, p["passage"], rng), ""
                elif kind == "negation":
                    claim, how = negation(s, rng), ""
                elif kind == "antonym":
                    claim, how = antonym(s, rng), ""
                elif kind == "entity_swap":
                    claim, how = entity_swap(s, p["passage"], pool, rng), ""
                else:
                    got = paraphrase(i, s, sents, rng)
                    how, claim = got if got else ("", None)
                if claim and claim != s:
                    out.append({"passage_id": p["id"], "kind": kind, "how": how, "passage": p["passage"],
                                "source_sentence": s, "claim": claim, "faithful": kind == "paraphrase"})
                    break
    return out


def evaluate(suite: list[dict[str, Any]], scorer: FactualSupport) -> dict[str, Any]:
    per: dict[str, Counter[str]] = defaultdict(Counter)
    misses: list[dict[str, Any]] = []
    for case in suite:
        it = Item(case["passage_id"], case["kind"], ({"role": "user", "content": "?"},), {},
                  extra={"passages": [case["passage"]]})
        s = scorer.score(it, Response(text=case["claim"]))
        ok = (s.value["supported"] == 1.0) == case["faithful"]
        per[case["kind"]]["n"] += 1
        per[case["kind"]]["right"] += int(ok)
        if not ok:
            misses.append({"kind": case["kind"], "claim": case["claim"], "why": s.explanation})
    perturbed = [k for k in KINDS if k != "paraphrase"]
    caught_n = sum(per[k]["n"] for k in perturbed)
    caught = sum(per[k]["right"] for k in perturbed)
    return {"per_kind": {k: dict(per[k]) for k in KINDS}, "caught": caught / caught_n if caught_n else 0.0,
            "passed": per["paraphrase"]["right"] / per["paraphrase"]["n"] if per["paraphrase"]["n"] else 0.0,
            "n": len(suite), "misses": misses}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    args = ap.parse_args()
    t0 = time.perf_counter()
    suite = build_suite(args.seed)
    res = evaluate(suite, FactualSupport())
    secs = time.perf_counter() - t0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    meta = {"when": datetime.now(UTC).isoformat(timespec="seconds"), "seed": args.seed, "seconds": round(secs, 2),
            "source": "GSM8K test split (openai/grade-school-math 3101c7d, MIT), 150 passages"}
    (out / "support_perturbations.json").write_text(json.dumps({**meta, **res}, indent=2) + "\n", encoding="utf-8")
    lines = ["# Factual support: deterministic method vs seeded perturbations", "",
             f"{meta['when']}, seed {args.seed}, {res['n']} claim/passage pairs from {meta['source']}; "
             f"{secs:.1f} s on 1 CPU. Command: `.venv/bin/python bench/support_perturbations.py --seed {args.seed}`.",
             "", "| kind | pairs | right | rate | right means |", "|---|---:|---:|---:|---|"]
    for k in KINDS:
        c = res["per_kind"][k]
        lines.append(f"| {k} | {c.get('n', 0)} | {c.get('right', 0)} | {c.get('right', 0) / max(c.get('n', 1), 1):.1%}"
                     f" | {'supported = 1' if k == 'paraphrase' else 'supported = 0 (caught)'} |")
    lines += ["", f"Perturbations caught: **{res['caught']:.1%}** (target >= 90 %); faithful paraphrases passed: "
              f"**{res['passed']:.1%}** (target >= 90 %).", "",
              "Caveat: the antonym generator's lexicon was written apart from the scorer's but overlaps it; the "
              "passages, their numbers and their names are the held-out part.", "", "## Misses", ""]
    lines += [f"- {m['kind']}: {m['claim'][:140]!r} -> {m['why'][:120]}" for m in res["misses"][:40]]
    md = out / "support_perturbations.md"
    marker = "\n## Held out: "  # bench/support_heldout.py's section, kept
    kept = md.read_text(encoding="utf-8").partition(marker) if md.exists() else ("", "", "")
    tail = (marker + kept[2]) if kept[1] else ""
    md.write_text("\n".join(lines) + "\n" + tail, encoding="utf-8")
    print("\n".join(lines[:14]))


if __name__ == "__main__":
    main()
