"""Build gate/pii/common_words.txt: the allowlist of words a report snippet may show (gate.pii.redact).

Why a fixed, shipped list: a snippet shows only words from this list, so a name, place or number the recognisers
missed can never reach a report (issue 30 item 2). The list is the most frequent English words of `wordfreq`'s
`large_en` table (data CC BY-SA 4.0, code Apache-2.0), less every word that is also a given name, surname or
place name in one of the offline gazetteers below, so "will", "rose", "paris" or "jordan" are masked too:

- Faker's person and address providers, every locale (MIT licence; Faker 40.63.0 here);
- phonenumbers' English geocoding data and country names (Apache-2.0 licence; phonenumbers 9.0.43 here).

Run by hand when the policy changes (nothing at run time needs these packages):

    pip download wordfreq==3.1.1 --no-deps -d /tmp/wf && unzip -q /tmp/wf/wordfreq-*.whl -d /tmp/wf/x
    PYTHONPATH=/tmp/wf/x .venv/bin/python tools/make_common_words.py --top 6000 --protect 1000
"""

from __future__ import annotations

import argparse
import gzip
import importlib
import pkgutil
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")
_TOKEN = re.compile(r"[^\W\d_]+", re.UNICODE)
OUT = Path(__file__).resolve().parents[1] / "gate" / "pii" / "common_words.txt"


def frequent_words(top: int) -> list[str]:
    """The `top` most frequent lower-case English words (letters, one inner apostrophe) of wordfreq's large list."""
    import importlib.util

    import msgpack

    spec = importlib.util.find_spec("wordfreq")  # its data only: importing it needs langcodes and more
    assert spec is not None and spec.origin, "wordfreq is not on the path (see the docstring)"
    path = Path(spec.origin).parent / "data" / "large_en.msgpack.gz"
    with gzip.open(path) as fh:
        buckets = msgpack.load(fh, raw=False, strict_map_key=False)[1:]  # [0] is the header; then one list per cB
    out: list[str] = []
    for bucket in buckets:
        out.extend(w for w in bucket if _WORD.fullmatch(w) and len(w) > 1 or w in ("a", "i"))
        if len(out) >= top:
            break
    return out[:top]


#: Closed-class words (articles, pronouns, prepositions, conjunctions, auxiliaries, number words): never a name
#: on their own, though gazetteers hold them inside names ("Bosnia and Herzegovina", "The Hague", "Al Ain").
FUNCTION_WORDS = frozenset("""
a an the and or but nor so yet if then than that this these those there here what which who whom whose when where
why how all any both each every either neither some no not none one two three four five six seven eight nine ten
i me my mine we us our ours you your yours he him his she her hers it its they them their theirs
am is are was were be been being do does did done have has had having will would shall should can could may might
must of in on at by for from to with without within into onto upon about above below over under after before
between among through during since until till up down out off as per via near
""".split())


#: Added by hand: greetings, weekdays, words of support tickets and of technical text that are no one's name (a
#: gazetteer holds "Hi" or "Reach" somewhere, or they rank below `--top`); the SQL and acronym words are those
#: the earlier capital-letter masker listed as never names
EXTRA = frozenset("""
hi hey hello reach password passwords refund refunds login logout invoice invoices subscription billing
monday tuesday wednesday thursday friday saturday sunday
select from where join left right inner outer group order by insert into values update set delete create table
null limit as distinct having union case else end like between count sum avg max min true false none
json api sql http https url id uuid csv pdf ui vpn dns sso ssl tls cpu gpu ram os
field fields valid invalid server window error errors unknown random zero signal
""".split())
#: Faker locales whose given-name lists are a country's common names (en_US weighted by census frequency)
CORE_NAME_LOCALES = ("en_US", "en_GB", "en_IE", "en_NZ")
#: Calling codes of English-speaking countries (US/CA, GB, IE, AU, NZ, IN, ZA): their one-word places (London,
#: Boston, Reading) are in `core`; elsewhere a one-word place is often an English word ("Most", "Much", "See").
ENGLISH_CODES = ("1", "44", "353", "61", "64", "91", "27")


def _tokens(text: str) -> set[str]:
    return {t.lower() for t in _TOKEN.findall(text)}


def _provider_strings(pkg: object, attrs: tuple[str, ...], locales: str = "") -> Iterator[str]:
    """Every string of the named attributes of each locale's `Provider` in a Faker provider package."""
    for mod in pkgutil.iter_modules(pkg.__path__):  # type: ignore[attr-defined]
        if not mod.name.startswith(locales):
            continue
        cls = getattr(importlib.import_module(f"{pkg.__name__}.{mod.name}"), "Provider", None)  # type: ignore
        for attr in attrs:
            value = getattr(cls, attr, ())
            if not isinstance(value, (dict, list, tuple, set, frozenset)):
                continue  # a property (computed per instance): nothing listed
            for s in (value.keys() if isinstance(value, dict) else value):
                if isinstance(s, str):
                    yield s


def gazetteers() -> tuple[set[str], set[str]]:
    """(core, broad): `core` holds common English given names, the words found in one country, state or province
    name only, and the one-word places of English-speaking countries (London, Boston, Reading); `broad` adds
    every locale's given and family names, every one-word place name and every word found in at most three
    place names. Function words are in neither."""
    import faker.providers.address as address
    import faker.providers.person as person
    import phonenumbers.geodata as geodata
    from phonenumbers.geodata import locale as geolocale

    first = ("first_names", "first_names_male", "first_names_female", "first_names_nonbinary")
    regions = ("countries", "states", "provinces", "regions", "prefectures")
    core: set[str] = set()
    for loc in CORE_NAME_LOCALES:  # their lists hold a country's common given names ("en" holds "Love", "True")
        for s in _provider_strings(person, first, loc):
            core |= _tokens(s)
    region_names = {*_provider_strings(address, regions, "en"), *geolocale.LOCALE_DATA.get("en", {}).values()}
    seen = Counter(t for name in region_names for t in _tokens(name))
    core |= {t for t, n in seen.items() if n == 1}  # "Zealand", "York", "China"; not "New", "United", "South"
    broad = set(core) | set(seen)
    for mod in pkgutil.iter_modules(person.__path__):
        if mod.name != "en":  # "en" is a list of every given name ever registered: "Unknown", "True", "Love"
            for s in _provider_strings(person, (*first, "last_names"), mod.name):
                broad |= _tokens(s)
    places = set(_provider_strings(address, (*regions, "cities", "city_names", "districts", "municipalities",
                                             "counties", "towns", "villages")))
    for mod in pkgutil.iter_modules(geodata.__path__):
        if not mod.name.startswith("data"):
            continue
        for prefix, v in getattr(importlib.import_module(f"{geodata.__name__}.{mod.name}"), "data", {}).items():
            place = v.get("en") if isinstance(v, dict) else None
            if place:
                head = place.split(",")[0].strip()
                places.add(head)
                if _TOKEN.fullmatch(head) and prefix.startswith(ENGLISH_CODES):
                    core.add(head.lower())
    # a place's own word ("Angeles", "Vegas", "Höfn") is a name; a word of many places ("Lake", "Station",
    # "North") is a common word, and left out only when it is a place on its own somewhere
    in_places = Counter(t for p in places for t in _tokens(p))
    broad |= {p.lower() for p in places if _TOKEN.fullmatch(p)}
    broad |= {t for t, n in in_places.items() if n <= 3}
    return core - FUNCTION_WORDS, broad - FUNCTION_WORDS


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--top", type=int, default=6000)
    ap.add_argument("--protect", type=int, default=1000)
    args = ap.parse_args()
    from importlib.metadata import version

    words = frequent_words(args.top)
    core, broad = gazetteers()
    # the `--protect` most frequent words are left out only for a core name (John, London, China): a surname or
    # a street word there ("young", "street", "new") is far more often the plain word; below them, for any name
    kept = sorted({w for rank, w in enumerate(words)
                   if w not in (core if rank < args.protect else broad)} | EXTRA)
    header = [
        "# gate.pii.redact allowlist: the only words a report snippet shows; every other token is shape-masked.",
        f"# Source: the {args.top:,} most frequent English words of wordfreq {version('wordfreq')} (large_en),",
        "#   Robyn Speer et al., https://github.com/rspeer/wordfreq; data licence CC BY-SA 4.0",
        "#   (https://creativecommons.org/licenses/by-sa/4.0/). This file is an adapted extract of that data and",
        "#   is distributed under CC BY-SA 4.0; the rest of gate keeps its own licence.",
        f"# Less {len(set(words) - set(kept)):,} words that are also names or places in Faker (MIT) person and",
        "#   address providers or phonenumbers (Apache-2.0) geocoding data (of the",
        f"#   {args.protect:,} most frequent words: only English given names, countries, states and one-word places).",
        f"# Plus {len(EXTRA)} words added by hand (tools/make_common_words.py EXTRA).",
        "# Regenerate: tools/make_common_words.py (its docstring has the commands).",
        f"# {len(kept):,} words, one a line, lower case, sorted.",
    ]
    OUT.write_text("\n".join(header + kept) + "\n", encoding="utf-8")
    print(f"{OUT}: {len(kept):,} words ({len(set(words) - set(kept)):,} names and places left out)")


if __name__ == "__main__":
    main()
