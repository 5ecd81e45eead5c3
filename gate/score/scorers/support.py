"""Factual support: is every claim in the answer backed by the item's reference passage(s)?

Two methods. The explainable `deterministic` method comes first (evaluation notes §2: judges flake around thresholds
and must be pinned and cached; deepeval #3110): it says, per claim, why it failed. `judge` asks any OpenAI-compatible
server (the same client and response cache as `gate score --engine url`, so a verdict is cached by the judge's model
identity and the exact request) with a fixed, versioned prompt, for teams that plug in a real judge model.

Deterministic, per claim (the answer is split into sentences; a JSON answer's string field with `answer_field`):
1. *Alignment*: the passage sentence (or two adjacent sentences, if no single one is enough) that covers most of the
   claim's content words (lower-cased, stop words dropped, light suffix strip, number words read as digits) must
   cover at least `min_coverage` of them. Then each clause of the claim (split at , ; : and subordinating
   conjunctions) is aligned with the clause of that sentence sharing most of its words (numbers, then fewer words the
   claim clause lacks, break ties). Each clause of two or more words must itself be half covered by the window and
   its neighbouring sentences: one invented clause of common words does not hide under the sentence's coverage. A
   phrase of one word the passage never uses appended at the end (", at each step") is an added fact; an opening
   frame ("In response,"), a reporting clause (", he said"), a discourse marker or a comment adverb is none.
2. *Numbers* must appear in the aligned passage sentence and in the aligned clause: "5 days" taken from another
   sentence, or two figures of one sentence swapped, is a changed fact even though both figures occur in the passage.
   A passage clause the claim clause holds whole ("In November 2006," moved to the end) lends its figures. A figure
   written more often than the sentence writes it, where one of the sentence's figures is gone ("13 out of the 13"
   for "12 out of the 13"), is a changed figure too.
3. *Negation and antonyms* per aligned clause: a negation on one side only, or a word whose opposite is what the
   passage clause says ("rejected" for "accepted", "used" for "unused", "a different" for "the original"), is a
   contradiction. Bounded phrases are read as bounds first, so "never later than 30 days" is "within 30 days".
   A clause that is the passage's clause with one word exchanged for a word the passage never uses (not a form of
   it, a WordNet synonym or a closed-class word) is unsupported: "jumped nearness" for "jumped distance".
4. *Entities by role*: a name the passage does not contain is unsupported; a name where the aligned sentence names
   someone else is a swap; two entities on opposite sides of a shared word (a verb) in reversed order ("Bobby paid
   Tony" for "Tony paid Bobby") are swapped roles unless exactly one side is passive ("... was paid by ...").
   Names include acronyms ("BBC", "NP", "CNNs"), mixed-case names ("FiLM", "Seq2Seq"), apostrophe names
   ("O'Connell") and "May" inside a sentence; an opening adverb ("Additionally,") is none. Plain nouns count when
   exchanging the two is the only change of word order ("The horses exported knights" for "The knights exported
   horses"), and any two content words of a copied clause that trade places with nothing else changed, unless a
   coordination stands between them ("qualitative and quantitative").
Claims with fewer than `min_words` content words ("Thanks!", "Sure.") carry no fact and are skipped.
`supported` = every claim supported (the gate key: one invented fact fails the item), `support_rate` = the share of
supported claims, `contradiction` = a negation, antonym or role swap was seen (the worst kind of unsupported claim).
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import os
import re
from collections import Counter
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from gate.engines.types import Request, Response
from gate.errors import InputError
from gate.pii.redact import mask_loose
from gate.score.types import Item, Score

STOP = frozenset("""a an the and or but if then so of to in on at by for with from as is are was were be been being it
its this that these those there here i you he she we they me him her us them my your our their what which who whom
whose when where why how do does did done have has had can could will would shall should may might must just also
very please thanks thank hi hello dear yes ok okay about into over under than too more most some any each per via
up out off again further once all both few other such own same only""".split())
NEGATIONS = frozenset({"not", "no", "never", "none", "nothing", "cannot", "can't", "won't", "isn't", "aren't",
                       "doesn't", "don't", "didn't", "wasn't", "weren't", "hasn't", "haven't", "without", "neither",
                       "nor", "nobody", "nowhere", "shouldn't", "couldn't", "wouldn't", "mustn't"})
#: Lexical opposites (both directions are derived). Morphological ones (un-, in-, im-, dis-, non-) need no entry.
ANTONYM_PAIRS: tuple[tuple[str, str], ...] = (
    ("accept", "reject"), ("accepted", "rejected"), ("accepts", "rejects"), ("approve", "deny"),
    ("approved", "denied"), ("approved", "rejected"), ("allow", "forbid"), ("allowed", "forbidden"),
    ("allowed", "prohibited"), ("permitted", "prohibited"), ("include", "exclude"), ("included", "excluded"),
    ("includes", "excludes"), ("original", "different"), ("same", "different"), ("increase", "decrease"),
    ("increased", "decreased"), ("increases", "decreases"), ("rise", "fall"), ("rises", "falls"), ("rose", "fell"),
    ("gain", "lose"), ("gains", "loses"), ("gained", "lost"), ("win", "lose"), ("won", "lost"), ("wins", "loses"),
    ("buy", "sell"), ("buys", "sells"), ("bought", "sold"), ("add", "remove"), ("adds", "removes"),
    ("added", "removed"), ("before", "after"), ("earlier", "later"), ("earliest", "latest"), ("first", "last"),
    ("more", "fewer"), ("more", "less"), ("most", "least"), ("most", "fewest"), ("higher", "lower"),
    ("highest", "lowest"), ("high", "low"), ("larger", "smaller"), ("largest", "smallest"), ("bigger", "smaller"),
    ("biggest", "smallest"), ("big", "small"), ("large", "small"), ("longer", "shorter"), ("longest", "shortest"),
    ("long", "short"), ("older", "younger"), ("oldest", "youngest"), ("old", "young"), ("old", "new"),
    ("faster", "slower"), ("fastest", "slowest"), ("fast", "slow"), ("heavier", "lighter"), ("heavy", "light"),
    ("cheaper", "dearer"), ("cheap", "expensive"), ("minimum", "maximum"), ("min", "max"), ("above", "below"),
    ("over", "under"), ("inside", "outside"), ("open", "closed"), ("opened", "closed"), ("opens", "closes"),
    ("start", "end"), ("starts", "ends"), ("started", "ended"), ("begin", "end"), ("success", "failure"),
    ("succeeded", "failed"), ("pass", "fail"), ("passed", "failed"), ("true", "false"), ("correct", "wrong"),
    ("right", "wrong"), ("always", "never"), ("all", "none"), ("everyone", "nobody"), ("full", "partial"),
    ("free", "paid"), ("paid", "unpaid"), ("public", "private"), ("internal", "external"), ("import", "export"),
    ("imports", "exports"), ("north", "south"), ("east", "west"), ("left", "right"), ("up", "down"),
    ("morning", "evening"), ("day", "night"), ("hot", "cold"), ("warm", "cold"), ("wet", "dry"),
    ("male", "female"), ("men", "women"), ("boys", "girls"), ("born", "died"), ("arrive", "depart"),
    ("arrived", "departed"), ("entered", "left"), ("enable", "disable"), ("enabled", "disabled"),
    ("online", "offline"), ("present", "absent"), ("win", "loss"), ("profit", "loss"), ("credit", "debit"),
    ("deposit", "withdrawal"), ("deposited", "withdrew"), ("lend", "borrow"), ("lent", "borrowed"),
    ("give", "take"), ("gives", "takes"), ("gave", "took"), ("push", "pull"), ("send", "receive"),
    ("sent", "received"), ("sends", "receives"), ("import", "export"), ("positive", "negative"),
    ("strong", "weak"), ("stronger", "weaker"), ("rich", "poor"), ("easy", "hard"), ("easier", "harder"),
    ("early", "late"), ("entrance", "exit"), ("upstairs", "downstairs"), ("forward", "backward"),
    ("twice", "half"), ("double", "half"), ("doubled", "halved"), ("maximum", "minimum"), ("within", "least"),
    # a bound read from "no more than" / "no fewer than" (see _BOUNDS) against the plain comparative it negates
    ("within", "more"), ("within", "greater"), ("within", "longer"), ("within", "later"), ("within", "beyond"),
    ("within", "exceeding"), ("within", "exceeds"), ("least", "less"), ("least", "fewer"), ("least", "earlier"),
    ("least", "shorter"), ("least", "sooner"),
)
_ANT: dict[str, set[str]] = {}
for _a, _b in ANTONYM_PAIRS:
    _ANT.setdefault(_a, set()).add(_b)
    _ANT.setdefault(_b, set()).add(_a)
_NEG_PREFIXES = ("un", "in", "im", "il", "ir", "dis", "non")
_NUMBER_WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split())}
_NUMBER_WORDS.update({w: 10 * i for i, w in enumerate("thirty forty fifty sixty seventy eighty ninety".split(), 3)})
_SCALES = {"hundred": 100, "thousand": 1000, "million": 10**6, "billion": 10**9}
#: "never later than", "no more than", "not exceeding" state a bound, not a negation.
_BOUNDS = ((re.compile(r"\b(?:no|not|never)\s+(?:later|more|longer|greater|after|beyond|further|over)\s+than\b", re.I),
            "within"),
           (re.compile(r"\b(?:no|not|never)\s+(?:sooner|fewer|less|earlier|shorter)\s+than\b", re.I), "at least"),
           (re.compile(r"\bnot\s+exceeding\b", re.I), "within"), (re.compile(r"\bnot\s+only\b", re.I), "also"),
           # a reporting frame says where the claim comes from, not what it claims
           (re.compile(r"\b(?:according\s+to|as\s+stated\s+in|as\s+per)\s+(?:the\s+)?(?:text|passage|source|"
                       r"document|article|context|abstract|paper|study|report|authors)s?\s*,?\s*", re.I), ""),
           (re.compile(r"\b(?:the\s+)?(?:text|passage|source|document|article|context|abstract|paper|study|report|"
                       r"authors?)\s+(?:says|states|notes|mentions|explains|shows|reports?|states?|finds?|notes?|"
                       r"shows?)\s*(?:that\s+)?,?\s*", re.I), ""))
_WORD = re.compile(r"\$?\d[\d,]*(?:\.\d+)?|\$?\.\d+|[a-z]+(?:'[a-z]+)*")
_NUM = re.compile(r"\d[\d,]*(?:\.\d+)?|\.\d+")
#: a sentence may open with a symbol-led name ("#P is ...", "$5 ...", "[1] ...") as well as a capital or a figure
_SENT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(#$\[“‘])|\n+")
_CLAUSE = re.compile(r"\s*[;:]\s*|,\s+|\s+(?=(?:but|while|whereas|although|though|because|since|unless|whilst|"
                     r"however|yet)\b)", re.I)
_PASSIVE = re.compile(r"\b(?:is|are|was|were|be|been|being|gets|got|get)\s+(?:\w+ly\s+)?\w+(?:ed|en|wn|id|ld|nt|lt)"
                      r"\b.*\bby\b", re.I)
#: Names: a capitalised word, with its apostrophe parts ("O'Connell", "d'Aulps", "Sant'Eufemia"; not a possessive
#: "'s"), or an acronym of two or more capitals ("BBC", "NP", "BPP") or one capital other than "I"/"A" ("P", "Plan B"),
#: or a word of letters and digits with two capitals or more in any case pattern: a plural acronym ("CNNs", "GANs")
#: or a mixed-case name ("FiLM", "CelebA", "Seq2Seq", "signSGD"), which technical text is full of.
_ENTITY = re.compile(r"(?<![\w'])(?:[A-Za-z][a-z]?')?[A-Z][a-z]+(?:[A-Z][a-z]+)*(?:'[A-Z][a-z]+)*(?=(?:'s)?(?![\w']))"
                     r"|(?<![\w'#])[A-Z]{2,}(?![\w'])|(?<![\w'#.])[B-HJ-Z](?![\w'.])"
                     r"|(?<![\w'#])(?=[A-Za-z0-9]*[A-Z][A-Za-z0-9]*[A-Z])[A-Za-z][A-Za-z0-9]*(?![\w'])")


_PER_CENT = re.compile(r"\bper\s+cent\b", re.I)


def _stem(w: str) -> str:
    for suf in ("ing", "ed", "es", "s"):
        if len(w) > len(suf) + 3 and w.endswith(suf):
            return w[: -len(suf)]
    return w


def _canon_number(tok: str) -> str:
    """One spelling per value: "$80,000" -> "80000", ".40" -> "0.4", "1.50" -> "1.5"."""
    s = tok.lstrip("$").replace(",", "")
    try:
        d = Decimal(s)
    except InvalidOperation:
        return s
    if d == d.to_integral_value():
        return str(int(d))
    return format(d.normalize(), "f")


def _normalise(text: str) -> str:
    text = _PER_CENT.sub("percent", (text or "").replace("’", "'").replace("‘", "'"))
    for pat, repl in _BOUNDS:
        text = pat.sub(repl, text)
    return text


def tokens(text: str) -> list[str]:
    """Lower-cased words and canonical numbers in order; number words become digits ("twenty-five" -> "25",
    "two hundred" -> "200") so a paraphrase that spells a figure out is not a changed figure."""
    raw = _WORD.findall(_normalise(text).lower().replace("-", " "))
    out: list[str] = []
    for w in raw:
        if w[0].isdigit() or w[0] in "$.":
            out.append(_canon_number(w))
        elif w in _NUMBER_WORDS:
            if out and out[-1].isdigit() and int(out[-1]) % 10 == 0 and 20 <= int(out[-1]) < 100 \
                    and _NUMBER_WORDS[w] < 10:
                out[-1] = str(int(out[-1]) + _NUMBER_WORDS[w])
            else:
                out.append(str(_NUMBER_WORDS[w]))
        elif w in _SCALES and out and out[-1].isdigit():
            out[-1] = str(int(out[-1]) * _SCALES[w])
        else:
            out.append(w[:-2] if w.endswith("'s") else w)
    return out


def content_words(text: str) -> set[str]:
    return {_stem(w) for w in tokens(text) if w not in STOP and w not in NEGATIONS and (len(w) > 1 or w.isdigit())}


def numbers(text: str) -> set[str]:
    return set(numbers_in_order(text))


def numbers_in_order(text: str) -> list[str]:
    return [t for t in tokens(text) if _NUM.fullmatch(t)]


def negated(text: str) -> bool:
    return any(w in NEGATIONS or w.endswith("n't") for w in tokens(text))


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENT.split(text or "") if s.strip()]


def clauses(sentence: str) -> list[str]:
    parts = [c.strip(" ,.;:!?") for c in _CLAUSE.split(sentence)]
    return [c for c in parts if c] or [sentence]


def entities(text: str) -> list[str]:
    """Capitalised names in order, lower-cased. A sentence's first word counts only when it is not a common word
    (so "He", "The", "Each" are not names, "Tony" is)."""
    out = []
    for m in _ENTITY.finditer(text):
        w = m.group(0).lower()
        at_start = not text[:m.start()].strip(" \"'(")
        if w in NEGATIONS or w in _COMMON_STARTS or (at_start and w in _ANT):
            continue
        # a stop word capitalised inside a sentence is a name: "May" there is the month, not the modal
        if w in STOP and (at_start or w not in _MONTHLIKE):
            continue
        # a sentence-opening adverb ("Additionally,", "Typically,") or connective ("Moreover") is no name
        if at_start and (w in _CONNECTIVES or (w.endswith("ly") and text[m.end():].lstrip()[:1] in (",", ""))):
            continue
        out.append(w)
    return out


_COMMON_STARTS = frozenset("""after before every since while during once later today yesterday tomorrow however
therefore thus also many most several few none one two three four five six seven eight nine ten half twice
according notably overall meanwhile instead finally first second third last next in on at by for with from
returns refunds items customers orders payments""".split())


#: Conjunctive adverbs and discourse connectives that open a sentence (a closed class of English).
_CONNECTIVES = frozenset("""additionally moreover furthermore nevertheless nonetheless consequently accordingly
hence besides likewise similarly otherwise indeed still then thereafter subsequently alternatively conversely
regardless importantly specifically typically generally usually historically traditionally originally initially
eventually ultimately currently recently previously formerly today presently here there however thus therefore
meanwhile overall instead finally lastly also first second third""".split())
def _is_connective(clause: str) -> bool:
    w = clause.strip(" \"'“”‘’(").lower()
    return w in _CONNECTIVES or (w.isalpha() and _comment_adverb(w))


def _comment_adverb(word: str) -> bool:
    """An -ly adverb ("Importantly", "unsurprisingly"): it says how the writer sees a fact, it states none."""
    return word.endswith("ly") and len(word) > 4


#: Multi-word discourse markers (a closed class of English): they say how a claim connects, not a fact.
_DISCOURSE = frozenset(("in addition", "in fact", "in particular", "in short", "in summary", "in general",
                        "in contrast", "by contrast", "in turn", "as a result", "for example", "for instance",
                        "of course", "in conclusion", "in other words", "on the other hand", "in practice",
                        "in theory", "at first", "at last", "in the end", "in total", "as well", "in brief",
                        "to summarize", "to summarise", "to conclude", "in essence", "at present",
                        "at the same time", "in comparison", "above all", "after all",
                        "in any case", "by the way", "to be sure", "on the whole", "all in all", "in sum"))


#: Reporting verbs: a clause of one ("he said", "it added") attributes the claim, it states no other fact.
_REPORTING = frozenset("""say says said saying add adds added note notes noted state states stated explain explains
explained write writes wrote tell tells told report reports reported according""".split())


def _is_discourse(clause: str) -> bool:
    return " ".join(clause.lower().strip(" \"'“”‘’(").split()) in _DISCOURSE


#: Stop words that are names when capitalised inside a sentence.
_MONTHLIKE = frozenset({"may"})


#: How much more of the claim two adjacent sentences must cover than one before the pair is the window.
_PAIR_MARGIN = 0.15
#: Share of a claim clause's words the aligned passage window must hold (the sentence as a whole needs
#: `min_coverage`; a clause of two or more words below this share is an added, unsupported part).
_CLAUSE_COVERAGE = 0.5


_DETERMINERS = frozenset("the a an his her their its our your my this that these those every each".split())


def _plain_swap(cw: list[str], pw: list[str], shared: list[str]) -> str | None:
    """Two plain words (no name, no determiner: "The horses exported knights" for "The knights exported horses")
    that trade places around a shared word while every other shared word keeps its order: exchanging the two in
    the claim gives exactly the passage's order. A reordering of whole phrases (a moved adverbial, a passive) is
    not one transposition, so it does not count."""
    once = [w for w in shared if cw.count(w) == 1 and pw.count(w) == 1 and not _NUM.fullmatch(w) and len(w) > 2]
    if len(once) < 3:
        return None
    p_order = sorted(once, key=pw.index)
    c_order = sorted(once, key=cw.index)
    diff = [i for i, (x, y) in enumerate(zip(c_order, p_order, strict=True)) if x != y]
    if len(diff) != 2:
        return None
    i, j = diff
    a, b = c_order[i], c_order[j]
    if (c_order[i], c_order[j]) != (p_order[j], p_order[i]) or j - i < 2:
        return None
    return f"'{a}' and '{b}' swap roles around '{c_order[i + 1]}'"


def _changes(pt: list[str], ct: list[str]) -> list[tuple[str, int, int, int, int]]:
    """The edits from the passage clause's tokens to the claim clause's, less words added or dropped at either end
    (a reporting frame, an opening connective, a clause cut short)."""
    ops = difflib.SequenceMatcher(a=pt, b=ct, autojunk=False).get_opcodes()
    return [op for k, op in enumerate(ops) if op[0] != "equal"
            and not (op[0] in ("insert", "delete") and k in (0, len(ops) - 1))]


_COORDINATION = frozenset({"and", "or", "nor", "versus", "vs"})


def _exchanged(pt: list[str], ct: list[str]) -> str | None:
    """Two content words of the passage clause that trade places and nothing else changes ("our failures can find
    catastrophic methods" for "our methods can find catastrophic failures"): a swap of roles, whatever the words.
    Items of a coordination trade places freely ("qualitative and quantitative"), so a swap across "and" / "or"
    is none."""
    ch = _changes(pt, ct)
    if len(ch) != 2 or any(op[0] != "replace" or op[2] - op[1] != 1 or op[4] - op[3] != 1 for op in ch):
        return None
    (_, i, _, j, _), (_, k, _, m, _) = ch
    a, b = pt[i], pt[k]
    if _stem(ct[j]) != _stem(b) or _stem(ct[m]) != _stem(a) or a in STOP or b in STOP or not (a + b).isalpha():
        return None
    if any(t in _COORDINATION for t in pt[i + 1:k]):
        return None
    return f"'{a}' and '{b}' swap roles"


_LEXICON = Path(__file__).with_name("wordnet_antonyms.txt")


@functools.cache
def wordnet_opposites() -> tuple[dict[str, frozenset[str]], dict[str, str]]:
    """(word -> its WordNet 3.0 antonyms, direct and indirect; irregular form -> lemma), read once on first use
    from the shipped extract (tools/make_antonyms.py). Stop words and words under three letters are left out:
    "on"/"off" or "in"/"out" read from a suffix-stripped "offer" or "into" would oppose almost every passage."""
    ant: dict[str, set[str]] = {}
    irregular: dict[str, str] = {}
    for line in _LEXICON.read_text(encoding="utf-8").splitlines():
        if not line or line[0] == "#":
            continue
        kind, a, b = line.split("\t")
        if kind == "=":
            irregular[a] = b
        elif min(len(a), len(b)) >= 3 and a not in STOP and b not in STOP:
            ant.setdefault(a, set()).add(b)
            ant.setdefault(b, set()).add(a)
    return {w: frozenset(v) for w, v in ant.items()}, irregular


def _lemmas(word: str) -> set[str]:
    """The word and the base forms it may inflect ("began" -> "begin", "ended" -> "end", "larger" -> "large",
    "stopped" -> "stop"): candidates only; they matter where one is in the antonym table."""
    _, irregular = wordnet_opposites()
    out = {word, _stem(word)}
    if word in irregular:
        out.add(irregular[word])
    for suf, reps in (("ies", ("y",)), ("ied", ("y",)), ("es", ("", "e")), ("s", ("",)), ("ed", ("", "e")),
                      ("ing", ("", "e")), ("er", ("", "e")), ("est", ("", "e"))):
        if word.endswith(suf) and len(word) - len(suf) >= 3:
            base = word[: -len(suf)]
            out.update(base + r for r in reps)
            if len(base) > 3 and base[-1] == base[-2]:  # stopped -> stop, bigger -> big
                out.add(base[:-1])
    return out


_SYNSETS = Path(__file__).with_name("wordnet_synonyms.txt")


@functools.cache
def wordnet_synonyms() -> tuple[dict[str, frozenset[int]], dict[str, str]]:
    """(word -> the numbers of the WordNet 3.0 synsets it is a lemma of; irregular form -> lemma), read once on
    first use from the shipped extract (tools/make_antonyms.py): synsets of two or more single-word lemmas."""
    sets: dict[str, set[int]] = {}
    irregular: dict[str, str] = {}
    n = 0
    for line in _SYNSETS.read_text(encoding="utf-8").splitlines():
        if not line or line[0] == "#":
            continue
        if line[0] == "=":
            _, form, lemma = line.split("\t")
            irregular[form] = lemma
            continue
        n += 1
        for w in line.split():
            sets.setdefault(w, set()).add(n)
    return {w: frozenset(v) for w, v in sets.items()}, irregular


#: Closed-class words (determiners, pronouns, prepositions, conjunctions) beyond STOP: one in place of another
#: ("every" for "each", "upon" for "on", "his" for a name) restates, it adds no fact.
_CLOSED = frozenset("""every either neither another whose whichever whatever whoever anyone someone everyone
everybody somebody anything something everything his hers ours yours theirs mine itself himself herself themselves
ourselves yourself myself upon amid amidst among amongst across along alongside around behind beneath beside besides
between beyond despite inside onto after before during against except near past through outside throughout toward
towards underneath unlike until till within without whereas whether while yet nor although though because since
unless even like etc""".split())


def _synonyms(a: str, b: str) -> bool:
    """Two words that may say the same thing: forms of one lemma ("said"/"says", "broke"/"break"), or two lemmas
    that share a WordNet synset ("firms"/"companies", "kilos"/"kilograms", "provide"/"give")."""
    syn, irregular = wordnet_synonyms()

    def forms(w: str) -> set[str]:
        out = _lemmas(w)
        return out | {irregular[x] for x in out if x in irregular}
    fa, fb = forms(a), forms(b)
    if fa & fb:
        return True
    sa = {n for w in fa for n in syn.get(w, ())}
    return any(syn.get(w, frozenset()) & sa for w in fb)


@functools.lru_cache(maxsize=64)
def _passage_lemmas(passage_text: str) -> frozenset[str]:
    """Every base form the passage's words may inflect: once per passage, not once per claim checked against it."""
    return frozenset(lemma for t in tokens(passage_text) if t.isalpha() for lemma in _lemmas(t))


def _forms(text: str) -> set[str]:
    toks = tokens(text)
    return set(toks) | {_stem(t) for t in toks}


class FactualSupport:
    """Options: `method` (deterministic | judge), `passages_field` (row key, or key of `expected`, holding a string
    or a list of strings; default "passages"), `answer_field` (check only this field of a JSON answer),
    `min_coverage` (default 0.7), `min_words` (default 2), and for the judge `judge`: {base_url, model, model_hash
    (pins what sits behind the URL), api_key_env (the name of an environment variable, never a key), cache (DuckDB
    file; default the record's, GATE_DB), timeout_s, max_tokens}. No claims at all (empty or all small talk) counts as
    unsupported: an answer that says nothing checkable has not shown support."""

    type = "factual_support"
    keys = ("supported", "support_rate", "contradiction")
    options_schema = {"type": "object", "additionalProperties": False, "properties": {
        "passages_field": {"type": "string"}, "answer_field": {"type": "string"},
        "min_coverage": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
        "min_words": {"type": "integer"}, "method": {"enum": ["deterministic", "judge"]},
        "judge": {"type": "object"}}}
    primary = "supported"

    def __init__(self, passages_field: str = "passages", answer_field: str | None = None, min_coverage: float = 0.7,
                 min_words: int = 2, method: str = "deterministic", judge: dict[str, Any] | None = None) -> None:
        if not 0 < min_coverage <= 1:
            raise ValueError("min_coverage must be in (0, 1]")
        if method not in ("deterministic", "judge"):
            raise ValueError(f"method must be deterministic or judge, not {method!r}")
        if method == "judge":
            if not isinstance(judge, dict) or not judge.get("base_url") or not judge.get("model"):
                raise ValueError("method judge needs judge: {base_url: ..., model: ...}")
            unknown = set(judge) - {"base_url", "model", "model_hash", "api_key_env", "cache", "timeout_s",
                                    "max_tokens"}
            if unknown:
                raise ValueError(f"unknown judge option(s): {', '.join(sorted(unknown))}")
        elif judge is not None:
            raise ValueError("judge options apply to method: judge only")
        self.passages_field = passages_field
        self.answer_field = answer_field
        self.min_coverage = min_coverage
        self.min_words = max(1, min_words)
        self.method = method
        self.judge_options = dict(judge or {})
        self._judge: Any = None
        self._judge_failed = ""

    def passages(self, item: Item) -> list[str]:
        raw = item.extra.get(self.passages_field)
        if raw is None and isinstance(item.expected, dict):
            raw = item.expected.get(self.passages_field)
        if isinstance(raw, str):
            raw = [raw]
        return raw if isinstance(raw, list) and raw and all(isinstance(p, str) for p in raw) else []

    def validate_item(self, item: Item) -> None:
        """Called once per item before any request: a suite row without passages is bad input, not a low score;
        a judge that does not answer is found here too, before an hour of generation (one line, exit 1)."""
        if not self.passages(item):
            raise InputError(f"factual_support needs '{self.passages_field}': a non-empty string or list of strings",
                             line=item.line, field=self.passages_field)
        if self.method == "judge":
            self._judge_engine()

    def _answer_text(self, response: Response) -> str:
        if not self.answer_field:
            return response.text or ""
        from gate.score.extract import flexible_json

        ok, val = flexible_json(response.text or "")
        got = val.get(self.answer_field) if ok and isinstance(val, dict) else None
        return got if isinstance(got, str) else ""

    # -- deterministic --------------------------------------------------------------------------------------------
    def _align(self, words: set[str], nums: set[str], ents: list[str],
               passage_sents: list[str]) -> tuple[float, list[str]]:
        """The passage window a claim restates: one sentence, or two adjacent ones (an answer often joins two).
        Preferred: reaching `min_coverage`, then holding every figure of the claim, then coverage (a pair of
        sentences needs `_PAIR_MARGIN` more than one), then a single sentence, then shared names, then the earlier
        window."""
        windows = [[s] for s in passage_sents] + [[a, b] for a, b in zip(passage_sents, passage_sents[1:],
                                                                             strict=False)]
        if not windows:
            return 0.0, []

        def key(w: list[str]) -> tuple[bool, bool, float, bool, float, int]:
            text = " ".join(w)
            c = len(words & content_words(text)) / len(words)
            # a pair must cover clearly more (an answer that joins two sentences), not one stray shared word
            return (c >= self.min_coverage, nums <= numbers(text), c - (0 if len(w) == 1 else _PAIR_MARGIN),
                    len(w) == 1, c, len(set(ents) & set(entities(text))))
        best = max(windows, key=key)
        return key(best)[4], best

    @staticmethod
    def _align_clause(clause: str, passage_clauses: list[str]) -> str:
        cw = content_words(clause)
        words, nums = {w for w in cw if not _NUM.fullmatch(w)}, {w for w in cw if _NUM.fullmatch(w)}
        # ties (one shared word each) go to the clause with fewer words the claim clause lacks: "which is not a
        # tapestry" restates "which is not a tapestry", not "... is the Bayeux Tapestry"
        return max(passage_clauses, key=lambda pc: (len(words & content_words(pc)), len(nums & numbers(pc)),
                                                    -len(content_words(pc) - cw)))

    @staticmethod
    def _opposite(claim: str, passage: str) -> str | None:
        """'word' -> 'opposite' when the claim clause uses the opposite of what the passage clause says."""
        wn, _ = wordnet_opposites()
        cf, pf = _forms(claim), _forms(passage)
        pl = {lemma for t in tokens(passage) if t.isalpha() for lemma in _lemmas(t)}
        cl = {lemma for t in tokens(claim) if t.isalpha() for lemma in _lemmas(t)}
        for w in tokens(claim):
            if w in pf or not w.isalpha() or len(w) < 2:
                continue
            opp = set(_ANT.get(w, ())) | set(_ANT.get(_stem(w), ()))
            opp |= {p + w for p in _NEG_PREFIXES}
            opp |= {w[len(p):] for p in _NEG_PREFIXES if w.startswith(p) and len(w) - len(p) >= 3}
            hit = sorted((opp & pf) - cf)
            if not hit and w not in STOP and not _lemmas(w) & pl:
                # WordNet's opposites of the word's base forms, against the passage clause's base forms
                wopp = {o for lemma in _lemmas(w) for o in wn.get(lemma, ())}
                hit = sorted(t for t in tokens(passage) if t.isalpha() and _lemmas(t) & wopp - cl)
            if hit:
                return f"'{w}' where the passage says '{hit[0]}'"
        return None

    @staticmethod
    def _substituted(claim: str, passage: str, passage_lemmas: set[str]) -> str | None:
        """'new' where the passage clause says 'old': the claim clause is the aligned passage clause with one word
        exchanged (words may be added or dropped only at its ends: a frame, a connective), and the passage never
        uses the new word in any form, nor is it a WordNet synonym or a closed-class word. An opposite no lexicon
        lists ("nearness" for "distance") and an invented word alike are not what the passage says. A clause
        reworded in more places is a paraphrase, judged by coverage: on MRPC's paraphrases the rule fails 54 of
        7,800 claims, 18 of 30 sampled wrongly (bench/results/support_paraphrase.md), where firing on any
        exchanged word failed 278."""
        ct, pt = tokens(claim), tokens(passage)
        ch = _changes(pt, ct)
        if len(ch) != 1 or pt == ct:
            return None
        tag, i1, i2, j1, j2 = ch[0]
        if tag != "replace" or i2 - i1 != 1 or j2 - j1 != 1 or len(pt) < 2:
            return None  # one word for one word, beside at least one word both share
        old, new = pt[i1], ct[j1]
        if not (new.isalpha() and old.isalpha()) or len(new) < 3 or new in STOP or new in NEGATIONS \
                or new in _CLOSED or old in _CLOSED:
            return None
        if _lemmas(new) & passage_lemmas or len(os.path.commonprefix((old, new))) >= 5 or _synonyms(old, new):
            return None
        return f"'{new}' where the passage says '{old}'"

    @staticmethod
    def _roles_swapped(claim: str, passage: str) -> str | None:
        """Two participants on opposite sides of a shared word (a verb), in reversed order, with the same voice.
        Participants are names, and nouns after a determiner in both texts ("the customer pays the courier")."""
        if bool(_PASSIVE.search(claim)) != bool(_PASSIVE.search(passage)):
            return None
        ct, pt = tokens(claim), tokens(passage)
        cw, pw = [_stem(w) for w in ct], [_stem(w) for w in pt]
        shared = [w for w in dict.fromkeys(cw) if w in pw and w not in STOP and w not in NEGATIONS]

        def nominal(toks: list[str]) -> set[str]:
            return {_stem(b) for a, b in zip(toks, toks[1:], strict=False) if a in _DETERMINERS and b not in STOP}
        names = [_stem(e) for e in dict.fromkeys(entities(claim)) if e in entities(passage)]
        cands = [w for w in dict.fromkeys(names + sorted(nominal(ct) & nominal(pt), key=cw.index))
                 if w in cw and w in pw]
        for i, a in enumerate(cands):
            for b in cands[i + 1:]:
                ca, cb, pa, pb = cw.index(a), cw.index(b), pw.index(a), pw.index(b)
                if (ca < cb) == (pa < pb):
                    continue
                for pivot in shared:
                    if pivot in (a, b):
                        continue
                    cp, pp = cw.index(pivot), pw.index(pivot)
                    if min(ca, cb) < cp < max(ca, cb) and min(pa, pb) < pp < max(pa, pb):
                        return f"'{a}' and '{b}' swap roles around '{pivot}'"
        return _plain_swap(cw, pw, shared) or _exchanged(pt, ct)

    def check_claim(self, claim: str, passage_sents: list[str]) -> tuple[bool, bool, str]:
        """(supported, contradicted, why) for one claim against every passage sentence."""
        words = content_words(claim)
        passage_text = " ".join(passage_sents)
        # a capitalised word the passage also writes in lower case is a common word at a sentence start, not a name
        common = set(re.findall(r"\b[a-z][a-z']*\b", _normalise(passage_text)))
        claim_ents = [e for e in entities(claim) if e not in common]
        best, window = self._align(words, numbers(claim), claim_ents, passage_sents)
        sent = " ".join(window)
        if best < self.min_coverage:
            missing = ", ".join(sorted(words - content_words(sent))[:5])
            return False, False, f"covered {best:.0%} < {self.min_coverage:.0%}; missing: {missing}"
        passage_words = set(tokens(passage_text))
        unknown = [e for e in claim_ents if e not in passage_words]
        if unknown:  # a name of letters and digits ("Seq2Seq") is several tokens: looked for among the names too
            passage_names = set(entities(passage_text))
            unknown = [e for e in unknown if e not in passage_names]
        if unknown:
            return False, False, f"name(s) not in the passage: {', '.join(dict.fromkeys(unknown))}"
        sent_ents = [e for e in entities(sent) if e not in common]
        absent = [e for e in claim_ents if e not in sent_ents]
        other = [e for e in sent_ents if e not in claim_ents]
        if absent and other:
            return False, True, f"'{absent[0]}' where the passage sentence names '{other[0]}'"
        c_nums, s_nums = numbers_in_order(claim), numbers_in_order(sent)
        missing_nums = set(c_nums) - set(s_nums)
        if missing_nums:
            return False, False, f"number(s) not in the aligned passage sentence: {', '.join(sorted(missing_nums))}"
        # a figure written once more than the passage writes it, where one of the passage's figures is gone: "13 out
        # of the 13" for "12 out of the 13", "0.5 or 0.5" for "0.9 or 0.5"
        c_count, s_count = Counter(c_nums), Counter(s_nums)
        surplus = sorted(n for n in c_count if c_count[n] > s_count[n])
        lost = sorted(n for n in s_count if n not in c_count)
        if surplus and lost:
            return False, False, f"number {surplus[0]} where the passage sentence says {lost[0]}"
        p_clauses = [c for s in window for c in clauses(s)]
        passage_lemmas = _passage_lemmas(passage_text)
        # a clause may restate the sentence next to the window (an answer joins two sentences)
        lo = passage_sents.index(window[0])
        window_words = content_words(" ".join(passage_sents[max(0, lo - 1):lo + len(window) + 1]))
        claim_clauses = clauses(claim)
        for cl in claim_clauses:
            cl_words = content_words(cl)
            if not cl_words:
                continue
            # every clause must be in the passage too: one invented clause of common words hides under the whole
            # sentence's coverage ("..., largely because of pressure from merchants")
            plain = {w for w in cl_words if not _NUM.fullmatch(w)}
            if len(plain) >= 2 and len(plain & window_words) < _CLAUSE_COVERAGE * len(plain):
                missing = ", ".join(sorted(plain - window_words)[:5])
                return False, False, f"a clause is not in the passage; missing: {missing}"
            # a phrase of one word the passage never uses, appended (", at each step", ", for a label"), adds that
            # word's fact; an opening phrase ("In response,", "At that time,") mostly frames what follows
            alone = [t for t in tokens(cl) if t.isalpha() and t not in STOP and t not in NEGATIONS and t not in _CLOSED
                     and t not in _CONNECTIVES and t not in _REPORTING and not _comment_adverb(t)]
            if cl is claim_clauses[-1] and len(claim_clauses) > 1 and len(alone) == 1 and len(plain) == 1 \
                    and not _is_connective(cl) and not _is_discourse(cl) and not _lemmas(alone[0]) & passage_lemmas:
                return False, False, f"an added phrase the passage does not hold: {alone[0]}"
            if len(cl_words) == 1 and _is_connective(cl):
                continue  # "Importantly" / "However" alone: says how the claim connects, states no fact
            pc = self._align_clause(cl, p_clauses)
            # figures of passage clauses the claim clause holds whole (adding words the aligned clause lacks) come
            # with it: "In November 2006," moved to the end of the claim is the same fact, not another part's figure
            absorbed = {n for c in p_clauses if c is not pc and (cw := {w for w in content_words(c)
                                                                         if not _NUM.fullmatch(w)}) and cw <= plain
                        and not cw <= content_words(pc) for n in numbers(c)}
            cl_ents = [e for e in entities(cl) if e not in common]
            pc_ents = [e for e in entities(pc) if e not in common]
            absent, other = [e for e in cl_ents if e not in pc_ents], [e for e in pc_ents if e not in cl_ents]
            if absent and other:
                return False, True, f"'{absent[0]}' where the passage says '{other[0]}'"
            stray = numbers(cl) - numbers(pc) - absorbed
            if stray:
                return False, False, f"number(s) {', '.join(sorted(stray))} belong to another part of the sentence"
            if negated(cl) != negated(pc):
                return False, True, "negation differs from the passage"
            opp = self._opposite(cl, pc)
            if opp:
                return False, True, f"opposite meaning: {opp}"
            sub = self._substituted(cl, pc, passage_lemmas)
            if sub:
                return False, False, f"a word the passage does not use: {sub}"
            swapped = self._roles_swapped(cl, pc)
            if swapped:
                return False, True, swapped
        return True, False, f"covered {best:.0%}"

    # -- judge ----------------------------------------------------------------------------------------------------
    def _judge_engine(self) -> Any:
        """The judge as a cached URL engine, started once: the same client and cache as `gate score`."""
        if self._judge_failed:
            from gate.errors import GateError

            raise GateError(self._judge_failed)
        if self._judge is None:
            from gate.engines.cache import CachedEngine, ResponseCache
            from gate.engines.url import URLEngine
            from gate.store.db import db_path

            o = self.judge_options
            key = os.environ.get(o["api_key_env"]) if o.get("api_key_env") else None
            if o.get("api_key_env") and not key:
                from gate.errors import GateError

                raise GateError(f"judge api_key_env {o['api_key_env']} is not set")
            engine = URLEngine(str(o["base_url"]), str(o["model"]), api_key=key, model_hash=o.get("model_hash"),
                               timeout_s=float(o.get("timeout_s", 120.0)), concurrency=1)
            try:
                engine.start()
            except Exception as exc:  # asked once: every later item fails at once with the same reason
                self._judge_failed = f"factual_support judge: {exc}".splitlines()[0]
                raise
            self._judge = CachedEngine(engine, ResponseCache(o.get("cache") or db_path(None)))
        return self._judge

    def judge_request(self, claims: list[str], passages: list[str]) -> Request:
        """The fixed request for one answer: versioned system prompt, passages and numbered claims, greedy."""
        body = "PASSAGES:\n" + "\n\n".join(f"[{i + 1}] {p}" for i, p in enumerate(passages)) + "\n\nCLAIMS:\n" + \
            "\n".join(f"{i + 1}. {c}" for i, c in enumerate(claims))
        max_tokens = int(self.judge_options.get("max_tokens", 16 * len(claims) + 32))
        return Request(messages=({"role": "system", "content": JUDGE_PROMPT}, {"role": "user", "content": body}),
                       temperature=0.0, top_p=1.0, max_tokens=max_tokens, seed=0)

    def _judge_verdicts(self, claims: list[str], passages: list[str]) -> tuple[list[str | None], Response]:
        resp = self._judge_engine().generate([self.judge_request(claims, passages)])[0]
        return parse_verdicts(resp.text or "", len(claims)) if not resp.error else [None] * len(claims), resp

    # -- scoring --------------------------------------------------------------------------------------------------
    def score(self, item: Item, response: Response) -> Score:
        if response.error:
            return Score({k: 0.0 for k in self.keys}, None, f"no answer: {response.error}", {"error": "engine_error"})
        passages = self.passages(item)
        passage_sents = [s for p in passages for s in sentences(p)]
        claims = [c for c in sentences(self._answer_text(response)) if len(content_words(c)) >= self.min_words]
        if not claims:
            return Score({"supported": 0.0, "support_rate": 0.0, "contradiction": 0.0}, "",
                         "no checkable claim in the answer", {"error": "no_claims", "claims": 0})
        meta: dict[str, Any] = {"claims": len(claims), "method": self.method}
        if self.method == "judge":
            from gate.errors import GateError

            try:
                verdicts, jr = self._judge_verdicts(claims, passages)
            except GateError as exc:
                return Score({k: 0.0 for k in self.keys}, None, f"judge failed: {exc}"[:200],
                             {**meta, "error": "judge_error"})
            meta["judge"] = {"prompt_version": JUDGE_PROMPT_VERSION, "prompt_sha256": JUDGE_PROMPT_SHA256,
                             "model": self.judge_options["model"], "cached": jr.cached}
            if jr.error:
                return Score({k: 0.0 for k in self.keys}, None, f"judge failed: {jr.error}"[:200],
                             {**meta, "error": "judge_error"})
            results = [(c, v == "SUPPORTED", v == "CONTRADICTED",
                        f"judge: {v}" if v else "judge gave no verdict for this claim")
                       for c, v in zip(claims, verdicts, strict=True)]
            if any(v is None for v in verdicts):
                meta["judge"]["unparsed"] = sum(v is None for v in verdicts)
        else:
            results = [(c, *self.check_claim(c, passage_sents)) for c in claims]
        n_ok = sum(1 for _, ok, _, _ in results if ok)
        contra = any(ct for _, _, ct, _ in results)
        value = {"supported": float(n_ok == len(claims)), "support_rate": n_ok / len(claims),
                 "contradiction": float(contra)}
        bad = [(i, why) for i, (_, ok, _, why) in enumerate(results) if not ok]
        why = f"{n_ok}/{len(claims)} claims supported"
        if bad:
            why += "; " + "; ".join(f"claim {i + 1}: {w}" for i, w in bad[:3])
        meta["per_claim"] = [{"supported": ok, "why": mask_loose(w)} for _, ok, _, w in results]
        if bad:
            meta["error"] = "contradiction" if contra else "unsupported_claim"
        # the explanation quotes words of the answer: mask what looks like personal data before it is stored
        return Score(value, None, mask_loose(why), meta)


#: Bump the version with any change to the wording: it is recorded with every verdict and is part of the cache key.
JUDGE_PROMPT_VERSION = "gate-support-judge/1"
JUDGE_PROMPT = """You check whether claims are supported by passages. Use only the passages, not outside knowledge.
For each numbered claim answer exactly one word:
SUPPORTED - the passages state it or it follows directly from them;
CONTRADICTED - the passages state the opposite, a different number, a different entity, or swapped roles;
UNSUPPORTED - the passages neither state it nor contradict it.
Reply with one line per claim, in order, in the form "N: VERDICT" and nothing else."""
JUDGE_PROMPT_SHA256 = hashlib.sha256(f"{JUDGE_PROMPT_VERSION}\n{JUDGE_PROMPT}".encode()).hexdigest()
_VERDICT = re.compile(r"^\W*(\d+)\s*[:.)\-]\s*\**\s*(SUPPORTED|UNSUPPORTED|CONTRADICTED)\b", re.I | re.M)


def parse_verdicts(text: str, n: int) -> list[str | None]:
    """One verdict per claim from "N: VERDICT" lines; a claim without a line (or with two different ones) is None,
    which scores as unsupported: a judge that does not answer has not shown support."""
    found: dict[int, set[str]] = {}
    for m in _VERDICT.finditer(text):
        found.setdefault(int(m.group(1)), set()).add(m.group(2).upper())
    return [next(iter(found[i])) if len(found.get(i, ())) == 1 else None for i in range(1, n + 1)]
