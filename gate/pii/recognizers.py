"""Pattern recognisers for formats presidio's own miss: English street addresses (presidio ships no address
recogniser), local phone numbers with separators, 19-digit cards, non-English and multi-line street addresses,
names in signatures.

Why a module of its own: each recogniser is a plain presidio `PatternRecognizer` (so presidio's context words,
scores and thresholds apply, and gate's fast scan stays identical to presidio's plain loop run with the same
recognisers); `gate.pii.presidio_engine` uses `street_address_recognizer` as the ADDRESS entity's recogniser and
only adds the others next to the recogniser of the entity they report.
What each was measured to find, and at what precision, is in bench/results/pii_quality.md.

Every recogniser here is built only when its entity is asked for, and presidio is imported only when one is built.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from presidio_analyzer import EntityRecognizer

#: Flags of every recogniser here: case-sensitive (capitals matter for names), multi-line.
_FLAGS = re.DOTALL | re.MULTILINE

#: Words that say a digit run is a phone number (presidio compares them with lemmas in the 5 words before).
PHONE_CONTEXT = ["phone", "telephone", "tel", "mobile", "cell", "call", "fax", "whatsapp", "sms", "text", "dial",
                 "number", "contact", "reach", "ring"]

#: Digits not glued to a longer number, a word, a decimal point or a "+", nor the tail of a longer number written
#: in groups ("(212) 867-5309": presidio's own recogniser owns those).
_NB = r"(?<![\w.+\-/])(?<![\d)][ \t\-.)]{1,2})"
_PHONE_SCORE = 0.41
_NA = r"(?![\w]|[.\-/ \t]\d)"


def street_address_recognizer(language: str = "en") -> EntityRecognizer:
    """A presidio `PatternRecognizer` for street addresses ("221 Baker Street", "12 Main St.") → `ADDRESS`.

    Why our own: presidio ships no address recogniser and the small NER model finds street addresses about half
    the time. House number, one to three capitalised name words, a street-type word. Case-sensitive for the name
    words (otherwise "2 kids and a dog Street..." style prose matches), case-insensitive for the street type.
    """
    from presidio_analyzer import Pattern, PatternRecognizer

    street_types = (
        "Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|Place|Pl|Square|Sq|Terrace|Ter|"
        "Way|Parkway|Pkwy|Highway|Hwy|Circle|Cir|Close|Crescent|Row|Alley|Plaza|Trail"
    )
    regex = (
        r"\b\d{1,5}[A-Za-z]?,?[ \t]+(?:[A-Z][A-Za-z'\-]+\.?[ \t]+){1,3}"
        rf"(?i:{street_types})\b\.?"
    )
    return PatternRecognizer(
        supported_entity="ADDRESS", name="StreetAddressRecognizer", supported_language=language,
        patterns=[Pattern("street address", regex, 0.5)],
        context=["address", "ship", "deliver", "street", "live", "located", "mail"],
        global_regex_flags=_FLAGS,
    )


def local_phone_recognizer(language: str = "en") -> EntityRecognizer:
    """Local phone numbers without an area code or in pairs of digits, which phonenumbers refuses: `555-0142`,
    `450 0840` (a 7-digit subscriber number), `60-56-85-91`, `06 12 34 56 78`, `06.12.34.56.78`.

    Scored 0.41: presidio's 0.4 for a phone number without context, plus a hair so that where presidio's own
    recogniser reports the same span, one result wins by score (presidio breaks equal scores by set order). A
    form with spaces is found only after a phone word in the 30 characters before it on its line ("call me on
    450 0840"), because spaced digit groups are also lists of numbers ("10 20 30 40"); the regex checks it, so it
    holds without an NLP pipeline (pattern-only mode has no context words). Pairs need four or five groups with
    one separator throughout; gate's phone post-filters (arithmetic, plain numbers) apply as to every phone hit.
    """
    from presidio_analyzer import Pattern, PatternRecognizer

    announced = r"(?<=\b(?i:" + "|".join(PHONE_CONTEXT) + r")\b[^\n\d]{0,30})"
    patterns = [
        Pattern("local 3-4 hyphen", _NB + r"\d{3}-\d{4}" + _NA, _PHONE_SCORE),
        Pattern("local 3-4 space", announced + _NB + r"\d{3}[ .]\d{4}" + _NA, _PHONE_SCORE),
        Pattern("pairs hyphen", _NB + r"\d{2}(?:-\d{2}){3,4}" + _NA, _PHONE_SCORE),
        Pattern("pairs dot", _NB + r"\d{2}(?:\.\d{2}){4}" + _NA, _PHONE_SCORE),
        Pattern("pairs space", announced + _NB + r"\d{2}(?: \d{2}){3,4}" + _NA, _PHONE_SCORE),
    ]
    return PatternRecognizer(supported_entity="PHONE_NUMBER", name="LocalPhoneRecognizer",
                             supported_language=language, patterns=patterns, context=PHONE_CONTEXT,
                             global_regex_flags=_FLAGS)


def luhn_valid(digits: str) -> bool:
    """The Luhn checksum every payment card number carries."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def long_card_recognizer(language: str = "en") -> EntityRecognizer:
    """Card numbers of 18 and 19 digits (Visa, Maestro, UnionPay, Discover issue them), which presidio's card
    regex (at most 17 digits) cannot match: `4482 0706 5881 2300 677`. Luhn-valid only, scored as presidio
    scores a valid card (1.0)."""
    from presidio_analyzer import Pattern, PatternRecognizer

    class LongCardRecognizer(PatternRecognizer):
        """See `long_card_recognizer`."""

        def validate_result(self, pattern_text: str) -> bool:
            digits = re.sub(r"[- ]", "", pattern_text)
            return len(digits) in (18, 19) and luhn_valid(digits)

    regex = _NB + r"[2-6]\d{3}(?:[- ]?\d{4}){3}[- ]?\d{2,3}" + _NA
    return LongCardRecognizer(supported_entity="CREDIT_CARD", name="LongCardRecognizer",
                              supported_language=language, patterns=[Pattern("card 18-19", regex, 0.3)],
                              context=["card", "credit", "visa", "mastercard", "maestro", "charged"],
                              global_regex_flags=_FLAGS)


#: Just above the 0.5 of gate's English street recogniser: where both match, the longer span of this one (with
#: the unit, postcode and town) is the finding `resolve_overlaps` keeps; and on the same span presidio keeps one
#: result by score, where an equal score would leave the choice to set order (not reproducible).
_ADDRESS_SCORE = 0.55
#: Street words that end a street's name in one word (German, Dutch, Danish, Norwegian, Icelandic, Swedish,
#: Hungarian, Finnish): the endings of their national street registers.
_COMPOUND_SUFFIX = (
    "straße|strasse|str\\.|gasse|weg|allee|platz|ring|damm|ufer|steig|pfad|chaussee|markt|gata|gatan|gaten|gade|"
    "vej|veien|vegen|vegur|stræde|stig|laan|straat|gracht|plein|kade|dreef|singel|steeg|baan|hof|pad|boulevard|"
    "utca|tie|katu|polku|vei|veg|alléen|bakken|berget|bråten|engen|hagen|haugen|holtet|høgda|jordet|kollen|"
    "kroken|lia|lunden|løkka|moen|myra|plassen|ringen|roa|røa|skogen|stien|stranda|stubben|svingen|toppen|tunet|"
    "vika|åsen"
)
#: Street words that start it (French, Spanish, Catalan, Italian, Portuguese, Polish).
_ROMANCE_TYPE = (
    "rue|avenue|av\\.|boulevard|bd|chemin|allée|impasse|place|quai|route|calle|c/|c\\.|avenida|avda\\.|paseo|plaza|"
    "camino|carrer|carretera|callejón|cañada|cuesta|glorieta|rambla|ronda|pasaje|travesía|urbanización|alameda|"
    "via|viale|piazza|piazzale|corso|vicolo|largo|strada|contrada|borgo|canale|incrocio|stretto|rotonda|salita|"
    "lungomare|rua|travessa|praça|ulica|ul\\."
)
_PARTICLE = r"(?:(?:de|del|de la|des|du|di|della|dei|da|do|dos|das|la|le|les|el|von|van)[ \t]+|[ldLD]['’])"
_NAME = r"[A-ZÀ-ÞĀ-Ž][\w'’\-]*"
#: English street types: the street suffixes of USPS Publication 28 (Appendix C1) that are words, and the
#: British ones ("Mews", "Close", "Parade").
_EN_TYPE = (
    "Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|Place|Pl|Square|Sq|Terrace|Ter|"
    "Way|Parkway|Pkwy|Highway|Hwy|Circle|Cir|Close|Crescent|Row|Alley|Plaza|Trail|Mews|Parade|Quay|Rise|Wharf|"
    "Drove|Gate|Yard|Alley|Branch|Bridge|Brooks?|Burgs?|Bypass|Camp|Canyon|Cape|Causeway|Centers?|Circles|"
    "Cliffs?|Club|Common|Corners?|Course|Courts|Coves?|Creek|Crest|Crossing|Crossroad|Curve|Dale|Dam|Divide|"
    "Drives|Estates?|Expressway|Extensions?|Falls?|Ferry|Fields?|Flats?|Fords?|Forest|Forges?|Forks?|Fort|"
    "Freeway|Gardens?|Gateway|Glens?|Greens?|Groves?|Harbors?|Haven|Heights|Hills?|Hollow|Inlet|Islands?|Isle|"
    "Junctions?|Keys?|Knolls?|Lakes?|Landing|Lights?|Loaf|Locks?|Lodge|Loop|Mall|Manors?|Meadows?|Mills?|"
    "Mission|Motorway|Mount|Mountains?|Neck|Orchard|Oval|Overpass|Parks?|Parkways|Pass|Passage|Path|Pike|Pines?|"
    "Plains?|Points?|Ports?|Prairie|Radial|Ramp|Ranch|Rapids?|Rest|Ridges?|River|Roads|Route|Run|Shoals?|"
    "Shores?|Skyway|Springs?|Spurs?|Squares|Station|Stravenue|Stream|Streets|Summit|Throughway|Trace|Track|"
    "Trafficway|Tunnel|Turnpike|Underpass|Unions?|Valleys?|Viaduct|Views?|Villages?|Ville|Vista|Walks?|Wall|"
    "Ways|Wells?"
)
#: What can follow a street on the same or the next line: an apartment or suite, then a postcode and town.
_UNIT_WORD = r"(?i:apt|apartment|suite|ste|unit|flat|floor|fl|piso|puerta|appartamento|piano|studio)"
_UNIT = r"(?:,?[ \t]*\n?[ \t]*" + _UNIT_WORD + r"\.?[ \t]*#?\d+[A-Za-z]?)?"
#: After a house number: not a unit of time or measure, which makes the number a count ("1 year", "3 km").
_NOT_A_COUNT = (r"(?![ \t]*(?i:years?|yrs?|months?|weeks?|days?|hours?|hrs?|minutes?|mins?|seconds?|secs?|times?|"
                r"percent|per[ \t]+cent|km|kg|cm|mm|miles?|points?|pieces?|people|persons?|rooms?|nights?|seats?|"
                r"tickets?)\b|[ \t]*%)")
#: After a house number: not a venue's word, which makes the words a name ("1 Hotel Brooklyn Bridge", "21 Club").
_NOT_A_VENUE = (r"(?!(?:Hotels?|Motel|Inn|Hostel|Restaurants?|Caf[eé]|Bar|Pub|Salon|Spa|Studios?|Gym|Cinemas?|"
                r"Theat(?:er|re)s?|Museum|Gallery|Club)\b)")
#: Before a house number: not a cinema chain, whose number counts screens ("Century 25 Union Landing", "AMC 16").
_NOT_A_SCREEN_COUNT = r"(?<!Century )(?<!Cinemark )(?<!AMC )(?<!Regal )(?<!Cineplex )"
_UK_POSTCODE = r"[A-Z]{1,2}\d[A-Z\d]?[ \t]+\d[A-Z]{2}"
_TOWN = (r"(?:,?[ \t]*\n?[ \t]*(?:\d{4,5}|[A-Z]{1,2}-\d{4,5}),?[ \t]+" + _NAME + r"(?:[ \t]+" + _NAME + r")?"
         r"|,?[ \t]*\n?[ \t]*" + _NAME + r"(?:[ \t]+" + _NAME + r")?,[ \t]+(?:[A-Z]{2}[ \t]+)?\d{5}(?:-\d{4})?"
         r"|,?[ \t]*\n?[ \t]*(?:" + _NAME + r"(?:[ \t]+" + _NAME + r")?,?[ \t]*\n?[ \t]*)?" + _UK_POSTCODE + r")?")


def street_address_patterns_recognizer(language: str = "en") -> EntityRecognizer:
    """Street addresses gate's English pattern misses: a compound street name and its number (`Ziegelgasse 19`,
    `Tungata 11`, `Steckelweg 21`), a Romance street (`12, rue de la Paix`, `Via Roma 12`, `Calle de Alcalá,
    45`), an English street written over several lines (`39336 Susan Avenue\\nLake Christopher, AR 92895`,
    `Rott Crossroad\\nApt. 322`), each with the unit, postcode and town that follow it.

    Every form needs a street word and a house or unit number: capitalised words alone are names, not places.
    """
    from presidio_analyzer import Pattern, PatternRecognizer

    # the stem has 3 letters or more ("During 1" is no "Du-ring"), a "-ring" street's stem ends in a consonant
    # ("Kaiserring", "Hohenzollernring"; "Securing 1 room" is a verb) and the number is no count ("Jenilia 1 year
    # ago")
    compound = (r"\b(?![\w'’\-]*[aeiouy]ring\b)[A-ZÀ-ÞĀ-Ž][\w'’\-]{2,}(?i:" + _COMPOUND_SUFFIX
                + r")[ \t]+\d{1,5}[a-zA-Z]?\b" + _NOT_A_COUNT
                + _UNIT + _TOWN)
    romance_type = r"(?i:" + _ROMANCE_TYPE + r")"
    romance_name = _PARTICLE + r"*" + _NAME + r"(?:[ \t]+(?:" + _PARTICLE + r")*" + _NAME + r"){0,3}"
    romance_after = (r"(?<![\w])" + romance_type + r"[ \t]+" + romance_name + r",?[ \t]+(?:n[º°o]\.?[ \t]*)?"
                     r"\d{1,5}[a-zA-Z]?\b" + _UNIT + _TOWN)
    romance_before = (r"\b\d{1,5}(?:[ \t]?(?:bis|ter))?,?[ \t]+" + romance_type + r"[ \t]+" + romance_name
                      + _UNIT + _TOWN)
    english = (_NOT_A_SCREEN_COUNT + r"\b\d{1,5}[A-Za-z]?,?[ \t]+" + _NOT_A_VENUE + r"(?:" + _NAME + r"\.?[ \t]+){1,3}"
               r"(?:" + _EN_TYPE + r")\b\.?" + _UNIT + _TOWN)
    english_unit = (r"\b(?:" + _NAME + r"[ \t]+){1,3}(?:" + _EN_TYPE + r")\b\.?,?[ \t]*\n?[ \t]*"
                    r"(?i:apt|apartment|suite|ste|unit|flat)\.?[ \t]*#?\d+[A-Za-z]?" + _TOWN)
    unit_first = (r"\b(?:Flat|Apartment|Apt\.?|Unit|Studio|Suite)[ \t]+\d+[A-Za-z]?,?[ \t]*\n?[ \t]*"
                  r"(?:\d{1,5}[A-Za-z]?[ \t]+)?(?:" + _NAME + r"[ \t]+){1,3}(?:" + _EN_TYPE + r")\b\.?" + _TOWN)
    romance_postcode = (r"(?<![\w])" + romance_type + r"[ \t]+" + romance_name + r",?[ \t]*\n?[ \t]*\d{5}[ \t]+"
                        + _NAME)
    military = (r"\b(?:PSC|CMR|Unit|USNS|USNV|USS|USCGC)[ \t]+[\w ,]{1,30}\n?[ \t]*(?:APO|FPO|DPO)[ \t]+A[AEP]"
                r"[ \t]+\d{5}")
    return PatternRecognizer(
        supported_entity="ADDRESS", name="StreetAddressPatternsRecognizer", supported_language=language,
        patterns=[Pattern(name, regex, _ADDRESS_SCORE) for name, regex in (
            ("compound street", compound), ("romance street", romance_after),
            ("romance street, number first", romance_before), ("english street block", english),
            ("english street and unit", english_unit), ("unit, then street", unit_first),
            ("romance street and postcode", romance_postcode), ("military address", military))],
        context=["address", "ship", "deliver", "street", "live", "located", "mail"],
        global_regex_flags=_FLAGS,
    )


#: Sign-offs after which a line holding only capitalised words is the writer's name.
_SIGN_OFF = (r"(?i:regards|best|best wishes|kind regards|warm regards|thanks|thank you|many thanks|cheers|"
             r"sincerely|yours|yours truly|yours sincerely|respectfully|cordially|love|signed)")


def signature_recognizer(language: str = "en") -> EntityRecognizer:
    """The writer's name on the line after a sign-off ("Kind regards,\\n Mijail C Adomo", also quoted or after a
    dash), two to four capitalised words, initials allowed, and nothing else on that line. The NER model misses
    such names (no sentence around them); the sign-off is the evidence that it is a person."""
    from presidio_analyzer import Pattern, PatternRecognizer

    word = r"[A-ZÀ-ÞĀ-Ž](?:[\w'’\-]+|\.?)"
    regex = (r"(?<=\b" + _SIGN_OFF + r"[ \t]*[,.!]?[ \t]*\n[ \t>\"'“\-–—]*)"
             + word + r"(?:[ \t]+" + _PARTICLE + r"?" + word + r"){1,3}(?=[ \t\"'”]*(?:\n|$))")
    return PatternRecognizer(supported_entity="PERSON", name="SignatureRecognizer", supported_language=language,
                             patterns=[Pattern("signature", regex, 0.6)], global_regex_flags=_FLAGS)


#: Words that follow a greeting but name nobody ("Hi Team", "Thanks Again", "Hello World").
_NOT_ADDRESSEE = ("Team|All|Everyone|Everybody|There|Sir|Sirs|Madam|Support|World|Again|Guys|Folks|Friends|So|"
                  "Very|Much|For|In|Both|You|Y'all|God|Lord|Admin|Mods?|Reddit|OP|Ma'am|Doc|Dude|Man|Bro|Mate|"
                  "Mr|Mrs|Ms|Miss|Dr")
_WORD = r"[A-ZÀ-ÞĀ-Ž][a-zà-ÿā-ž'’\-]+"


def greeting_recognizer(language: str = "en") -> EntityRecognizer:
    """Each name of the list a greeting or thanks addresses: "Hi Teresa and Jodi", "Thanks, Anna, Bob & Jodi",
    "Dear Ms Green". The NER model misses given names there (no verb, no sentence), and gate drops a lone given
    name that nothing ties to the writer or reader (`gate.pii.context.lone_name`); the greeting is that tie.
    A name is a title-case word and at most one more ("Naomi Ryan"), not a greeting filler ("Hi Team"), and
    ends the greeting: punctuation, a line end or the next name follows it ("Hi, We are..." names nobody)."""
    from presidio_analyzer import Pattern, PatternRecognizer

    greet = r"(?i:hi|hello|hey|dear|thanks|thank[ \t]+you|cheers|welcome|congrats|congratulations|good[ \t]+morning)"
    name = r"(?!(?:" + _NOT_ADDRESSEE + r")\b)" + _WORD + r"(?:[ \t]+" + _PARTICLE + r"?(?!(?:" + _NOT_ADDRESSEE + \
        r")\b)" + _WORD + r")?"
    joint = r"(?:[ \t]*,[ \t]*(?:and[ \t]+|&[ \t]*)?|[ \t]+(?:and|&)[ \t]+)"
    regex = (r"(?<=(?:^|[\n.!?;:(\"'])[ \t]*" + greet + r"[ \t]*,?[ \t]+(?:(?:Mr|Mrs|Ms|Miss|Dr)\.?[ \t]+)?"
             r"(?:" + name + joint + r")*)" + name + r"(?=[ \t]*(?:[,!.:;\n]|$|(?:and|&)[ \t]))")
    return PatternRecognizer(supported_entity="PERSON", name="GreetingRecognizer", supported_language=language,
                             patterns=[Pattern("greeting", regex, 0.5)], global_regex_flags=_FLAGS)


#: Per recogniser: a search that must succeed for it to match anything (3 + 4 digits or four digit pairs across
#: separators; 16 card digits in groups of four; a sign-off or greeting word; the address patterns:
#: `_street_words_prefilter`), so the fast scan skips it on other texts and stays equal to the plain loop.
_PREFILTERS = {
    "LocalPhoneRecognizer": r"\d{3}[-. ]\d{4}|\d\d[-. ]\d\d[-. ]\d\d[-. ]\d\d",
    "LongCardRecognizer": r"\d{4}(?:[- ]?\d{4}){3}",
    "SignatureRecognizer": r"\b" + _SIGN_OFF + r"\b",
    "GreetingRecognizer": r"\b(?i:hi|hello|hey|dear|thanks|thank|cheers|welcome|congrats|congratulations|good)\b",
}


def prefilter(rec: EntityRecognizer) -> Callable[[str], Any] | None:
    """The cheap search that must succeed on a text for `rec` to match in it (None: always run it)."""
    import regex

    if rec.name == "StreetAddressPatternsRecognizer":
        return _street_words_prefilter()
    pattern = _PREFILTERS.get(rec.name)
    return None if pattern is None else regex.compile(pattern, _FLAGS).search


def _street_words_prefilter() -> Callable[[str], Any]:
    """The address patterns' prefilter: a digit, and a word one of the forms needs: a capitalised English street
    word (or APO/FPO/DPO), a Romance street word in any case, or a word ending in a compound street suffix.

    Why words in sets rather than a regex of them: the alternation of ~300 street words searched 1.8 CPU s on 5,000
    chat messages, more than the recogniser it guards (1.0 s); a set lookup per word is ~20x cheaper. Sound: every
    pattern holds a number, and its street word as a whole word (English, Romance: a space, a line start or
    punctuation on the left, a space, "." or "/" on the right) or at the end of a word (a compound); case-folding
    both sides matches at least what the patterns' case-insensitive groups match.
    """
    import regex

    def words(alternation: str) -> list[str]:
        out = []
        for w in alternation.split("|"):
            w = w.replace("\\.", "").replace("/", "")
            out += [w[:-2], w[:-1]] if w.endswith("s?") else [w]
        return out

    english = frozenset(words(_EN_TYPE)) | {"APO", "FPO", "DPO"}
    romance = frozenset(w.casefold() for w in words(_ROMANCE_TYPE))
    compound = tuple(w.casefold() for w in words(_COMPOUND_SUFFIX))
    digit, word = regex.compile(r"\d").search, re.compile(r"[^\W\d_]+").findall

    def search(text: str) -> bool | None:
        if digit(text) is None:
            return None
        for w in word(text):
            if w in english:
                return True
            folded = w.casefold()
            if folded in romance or folded.endswith(compound):
                return True
        return None
    return search


def extra_recognizers(entity: str, language: str = "en") -> list[EntityRecognizer]:
    """The recognisers of this module that report `entity` (none for most entities)."""
    if entity == "PHONE_NUMBER":
        return [local_phone_recognizer(language)]
    if entity == "CREDIT_CARD":
        return [long_card_recognizer(language)]
    if entity == "ADDRESS":
        return [street_address_patterns_recognizer(language)]
    if entity == "PERSON":
        return [signature_recognizer(language), greeting_recognizer(language)]
    return []
