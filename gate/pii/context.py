"""Post-filters that read a hit's surroundings: whether a match is personal data where it stands, not its shape.

Why: on real instruction data (GSM8K, Code Alpaca, GPTeacher) most PII findings were values that have
the shape of an entity but, where they stand, identify nobody:

* a place is personal data where it locates a person (an address, "I live in", "flew to", "moved to", "based
  in"), not in general knowledge ("The capital of France is Paris.") nor when the NER model mistakes a name in a
  word problem for a place ("Natalia sold clips"): `locates_person`;
* an e-mail address has a mailbox on a real domain: `popper.js@1.16.1` (a package pinned to a version) is not
  one: `not_an_email`;
* a phone number is not the operand of arithmetic (`60000 - 10800 = 49200`): `in_arithmetic`; a phone or card
  number is not a decimal number (`0.666667`, the digits after `7.` in `7.666666666666667`): `in_decimal`;
* an IP address in a private, loopback or link-local network (`192.168.1.1`, `10.0.0.5`, `127.0.0.1`) reaches
  nobody: the same address names a host in millions of networks: `not_routable_ip`;
* a URL is not a placeholder on a domain reserved for examples (RFC 2606: `api.example.com`), nor a bare dotted
  name inside code (SQL `d.name`, `user.name`, `self.data`) where the dot is attribute access: `not_a_url`;
* a person's name is not the title-case label or heading of a code output ("Reversed String: olleh"):
  `label_not_a_name`.

Every function depends on the text and the span only (never on a score), so the fast scan path that skips
scoring stays identical to presidio's plain loop (see `gate.pii.postfilters._dropped`).
"""

from __future__ import annotations

import functools
import ipaddress
import re
from collections.abc import Callable
from urllib.parse import urlsplit

# ------------------------------------------------------------------------------------------------------- places

#: Words that make a place someone's address: where they live, moved to or get post, whoever "they" are.
_RESIDING = re.compile(
    r"(?i)\b(?:live[sd]?|living|reside[sd]?|residing|resident|home(?:town)?|based|born|raised|grew\s+up|"
    r"moved?|moving|address\w*|ship(?:s|ped|ping)?|deliver\w*|parcel|sent|mail(?:ed)?|located|relocat\w*)\b")
#: Words that place someone for a while: where they go or come from. In a story ("Sue travelled from New
#: Orleans", every GSM8K problem) they locate nobody real, so they count only with the writer in the clause
#: (`_PERSONAL`): "my sister flew to Rome", "we came from Lyon".
_MOVING = re.compile(
    r"(?i)\b(?:fl(?:y|ies|ew|own|ying|ights?)|travel\w*|trips?|visit\w*|stay(?:s|ed|ing)?|"
    r"commut\w*|(?:come|comes|came|coming|calling|writing|work(?:s|ed|ing)?)\s+(?:from|in|at)|"
    r"(?:heading|going|went|drive|drove|driving)\s+to)\b")
#: The writer in the clause: support text speaks in the first person; stories do not, and instructions speak to
#: a generic "you" ("How would you create a dictionary in Python?").
_PERSONAL = re.compile(r"(?i)\b(?:I|I'm|I've|me|my|mine|we|we're|us|our)\b")
#: "Find me attractions in New York", "show us hotels in Rome": the writer as the one a search is for, which says
#: what they ask, not where they are (cities of such requests were 86 + 56 + 44 false places on the real-data bench)
_FOR_ME = re.compile(r"(?i)\b(?:find|show|get|give|tell|send|search|recommend|list|suggest|fetch|look\s+up|pull"
                     r"(?:\s+up)?|help)\s+(?:me|us)\b")
_PREP_BEFORE = re.compile(r"(?i)\b(?:in|at|from|to|near|around|outside|into|of)\s*$")
#: The place follows a street address or a postcode: "12 Oak Road, Leeds", "10115 Berlin".
_AFTER_ADDRESS = re.compile(
    r"(?:\b(?i:street|st|avenue|ave|road|rd|boulevard|blvd|lane|ln|drive|dr|court|ct|place|pl|square|sq|way|"
    r"terrace|parkway|highway|hwy|close|crescent|row|plaza)\.?|\d{3,}|\b[A-Z]{1,2}\d{1,2}[A-Z]?\s+\d[A-Z]{2})"
    r"[ \t]*,?[ \t]*$")
#: "Toronto, where I live"
_WHERE_AFTER = re.compile(r"(?i)^[ \t,]*(?:is\s+|was\s+)?where\s+(?:I|we|you|he|she|they|my|our|his|her|their)\b")
_CLAUSE_END = re.compile(r"[.!?\n](?=\s|$)|\n")
_WINDOW = 120
#: How far before a value a rule reads the rest of its turn (`sends_there`, `shares_a_place`): a user's turn, not a
#: document; bounded so a long turn costs linear time.
_TURN_WINDOW = 400


def _clause_before(text: str, start: int) -> str:
    """The text of the sentence before `start` (at most `_WINDOW` characters)."""
    left = text[max(0, start - _WINDOW):start]
    cut = 0
    for m in _CLAUSE_END.finditer(left):
        cut = m.end()
    return left[cut:]


def locates_person(text: str, start: int, end: int) -> bool:
    """True when the place at `text[start:end]` says where a person is, lives, goes or gets post.

    Evidence, all within the place's own sentence: a residence word before it ("live", "moved", "based", "ship",
    "address", "sent from"...); a travel word ("flew", "trip", "came from") or a preposition right before it,
    with the writer in the clause ("we are a team at Acme in Spain"; not the writer as the one a search is for:
    "find me hotels in Rome" says what they ask, not where they are); a street address or postcode
    right before it ("12 Oak Road, Leeds"); or "where I live" right after it. General knowledge ("The capital of
    France is Paris.") and third-person stories ("Sue travelled from New Orleans") have none of these.
    """
    before = _clause_before(text, start)
    if _RESIDING.search(before) or _AFTER_ADDRESS.search(before):
        return True
    if (_MOVING.search(before) or _PREP_BEFORE.search(before)) and _PERSONAL.search(_FOR_ME.sub(" ", before)):
        return True
    return bool(_WHERE_AFTER.match(text, end, min(len(text), end + 60)))


# ------------------------------------------------------------------------------------------------------- e-mail

@functools.lru_cache(maxsize=4096)
def _public_suffix(domain: str) -> bool:
    """True when `domain` ends in a public suffix (tldextract's bundled list, never fetched) and has a name."""
    import tldextract

    parts = tldextract.extract(domain)
    return bool(parts.suffix and parts.domain)


def not_an_email(value: str) -> bool:
    """True when the e-mail-shaped `value` has no mailbox on a real domain.

    The part after the last "@" must be a host name whose last label is a letter top-level domain on the Public
    Suffix List, and the part before must not be a path: `popper.js@1.16.1` and `cdn.net/npm/pkg@2.0.3` are
    packages pinned to versions (presidio's own check asks tldextract about the whole string, which finds the
    host before the "/", and scores it 1.0).

    Domains reserved for examples (RFC 2606) are not judged here, unlike URLs: the local part of an address still
    names a mailbox ("jane.doe@"), and the fixtures plant `...@example.net` as personal data.
    """
    local, _, domain = value.rpartition("@")
    domain = domain.rstrip(".").lower()
    if not local or not domain or any(c in local for c in "/{}()[]<>;="):
        return True  # a path, or code: `try{@in.Seek` (C#'s verbatim `@in`)
    tld = domain.rsplit(".", 1)[-1]
    if not tld.isalpha() or len(tld) < 2:
        return True
    return not _public_suffix(domain)


# ------------------------------------------------------------------------------------------------------- phones

_OPERATOR_INSIDE = re.compile(r"\d\s+[-+*/×÷]\s+\d|\d\s*[*/×÷=]\s*\d")
_OPERATOR_AFTER = re.compile(r"\s*[=+*/×÷]")
_OPERATOR_BEFORE = re.compile(r"(?:[=+*/×÷]|<<|>>)\s*$")
#: Words that say a number is a phone number; a bare digit run needs one of them before it.
_PHONE_WORDS = re.compile(r"(?i)\b(?:phone|tel|telephone|mobile|cell|call|fax|whatsapp|sms|text|dial|number|"
                          r"contact|reach)\b")


def in_arithmetic(text: str, start: int, end: int) -> bool:
    """True when the phone-shaped `text[start:end]` is arithmetic: an operator between spaced digit groups inside
    it ("60000 - 10800"), or an operator or "=" right next to it ("60000-10800=49200", GSM8K's "<<...>>"
    calculator notes). A phone number is written with separators, never between operators."""
    if _OPERATOR_INSIDE.search(text, start, end):
        return True
    return bool(_OPERATOR_AFTER.match(text, end) or _OPERATOR_BEFORE.search(text, max(0, start - 4), start))


#: A decimal number, maybe opening a list: `0.666667`, `[0.26862954`.
_DECIMAL = re.compile(r"[\[(]?\d*\.\d+")


def _in_dotted_number(text: str, start: int, end: int) -> bool:
    """True when a digit and a dot stand right before `start`, or a dot and a digit right after `end`: the span is
    cut out of a longer number (a decimal, an object identifier, a version)."""
    return (start >= 2 and text[start - 1] == "." and text[start - 2].isdigit()) or (
        end + 1 < len(text) and text[end] == "." and text[end + 1].isdigit())


def in_decimal(text: str, start: int, end: int) -> bool:
    """True when the phone- or card-shaped `text[start:end]` is a decimal number: the fraction digits of one
    (`666666666666667` right after `7.`), or a number with one decimal point and nothing else (`0.27577711`, a
    model's normalisation constant) with no phone word in the 40 characters before, or the whole part of one
    (`2147483647` before `.0`). A written phone number never continues a decimal and has no lone decimal point;
    one written `555.1234` is announced as one."""
    if _in_dotted_number(text, start, end):  # fraction digits, or the whole part (`2147483647.0 * Math.floor`)
        return True
    return bool(_DECIMAL.fullmatch(text, start, end)) and not _PHONE_WORDS.search(text, max(0, start - 40), start)


#: Networks whose addresses are reused by every site (RFC 1918, loopback, link-local; IPv6 alike). Not the
#: documentation ranges (RFC 5737): those are kept as personal data like example values are elsewhere.
_LOCAL_NETS = tuple(ipaddress.ip_network(n) for n in (
    "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "127.0.0.0/8", "169.254.0.0/16", "0.0.0.0/32",
    "::1/128", "fe80::/10", "fc00::/7"))


#: The public DNS resolvers (Google, Cloudflare, Quad9, OpenDNS, Level 3): one address answers millions of users,
#: and setup guides tell every reader to type it.
_PUBLIC_RESOLVERS = frozenset(ipaddress.ip_address(a) for a in (
    "8.8.8.8", "8.8.4.4", "1.1.1.1", "1.0.0.1", "9.9.9.9", "149.112.112.112", "208.67.222.222", "208.67.220.220",
    "4.2.2.1", "4.2.2.2", "2001:4860:4860::8888", "2001:4860:4860::8844", "2606:4700:4700::1111",
    "2606:4700:4700::1001", "2620:fe::fe"))


def not_routable_ip(value: str) -> bool:
    """True for an address in a private, loopback or link-local network: it names a host inside whichever network
    the reader is in, so it identifies and reaches nobody (router pages, `localhost` examples, lab configs). So
    does a public DNS resolver's (`8.8.8.8`): a service everyone uses, in every network how-to."""
    try:
        ip = ipaddress.ip_address(value.strip("[]()'\" "))
    except ValueError:
        return False
    return ip in _PUBLIC_RESOLVERS or any(ip.version == net.version and ip in net for net in _LOCAL_NETS)


def not_a_host_address(text: str, start: int, end: int) -> bool:
    """True when the address-shaped `text[start:end]` names no host: four numbers cut out of a longer dotted
    sequence (an object identifier `1.3.6.1.5.2.3.1`, a version `5.2.3.3` after `1.3.6.1.`), or a netmask
    (`255.255.255.0`: ones then zeros, a network's size, not a machine)."""
    if _in_dotted_number(text, start, end):
        return True
    try:
        ip = ipaddress.ip_address(text[start:end].strip("[]()'\" "))
    except ValueError:
        return False
    if ip.version != 4 or not str(ip).startswith("255."):
        return False
    bits = int(ip)
    inverted = ~bits & 0xFFFFFFFF
    return inverted & (inverted + 1) == 0  # the zeros are one run at the end


#: A number named as an identifier right before it: "with id 12345-67890", "order no. 4155550134", "SKU: 555-01".
_ID_LABEL = re.compile(r"(?i)\b(?:ids?|identifier|sku|serial|ticket|order|invoice|tracking|reference|ref)"
                       r"\s*(?:#|no\.?|number|num)?\s*[:=#]?\s*$")


def labelled_an_id(text: str, start: int) -> bool:
    """True when the word right before the number names it an identifier (an id, an order, a ticket, a SKU): a
    phone number is announced as one ("call", "phone"), an id by its label; on the real-data bench "When will size
    40 be ready with id 12345-67890?" failed the gate as a phone number."""
    return bool(_ID_LABEL.search(text, max(0, start - 24), start))


def not_a_phone_shape(text: str, start: int, end: int) -> bool:
    """True when the phone-shaped `text[start:end]` is a plain number or a count: digits only (no "+",
    bracket or separator: an amount, an id, a Unix time such as 1633972405) with no phone word ("call",
    "phone", "mobile"...) in the 40 characters before, or digit groups none of which has three digits
    ("1 2 3 4 5 6 7 8 9 10", a printed sequence). Every written phone number has a group of three or more, and
    one written without any separator is announced as one, except numbers written in pairs (`60-56-85-91`,
    `06 12 34 56 78`, see `_in_pairs`) or after a country code (`+33 3 68 31 83 00`)."""
    value = text[start:end]
    groups = re.findall(r"\d+", value)
    if max(map(len, groups), default=0) < 3:
        return not (_in_pairs(text, start, end, groups) or _INTERNATIONAL.match(value))
    if value.isdigit():
        return not _PHONE_WORDS.search(text, max(0, start - 40), start)
    return False


#: "+33 3 68 31 83 00", "+45 60 77 37 96": a country code, then short groups (France, Denmark, Norway).
_INTERNATIONAL = re.compile(r"\+\d{1,3}[ .\-]\d{1,2}(?:[ .\-]\d{2}){3,4}$")
_PAIRS = re.compile(r"\d{2}(?:(?P<sep>[-. ])\d{2})(?:(?P=sep)\d{2}){2,3}")


def _in_pairs(text: str, start: int, end: int, groups: list[str]) -> bool:
    """True for a phone number written in four or five pairs of digits with one separator (Denmark, Norway,
    France, West Africa write them so): hyphens or dots alone, spaces only with a phone word in the 40 characters
    before (spaced pairs are also lists of numbers: "10 20 30 40")."""
    m = _PAIRS.fullmatch(text, start, end)
    if m is None or not 4 <= len(groups) <= 5:
        return False
    return m.group("sep") != " " or bool(_PHONE_WORDS.search(text, max(0, start - 40), start))


# --------------------------------------------------------------------------------------------------------- URLs

#: RFC 2606 / RFC 6761: names reserved for documentation and tests; no person can own one.
_RESERVED = re.compile(r"(?:^|\.)(?:example\.(?:com|net|org|edu)|[^.]+\.(?:example|test|invalid|localhost)|"
                       r"localhost)$")
_IDENTIFIER_LABEL = re.compile(r"_|[a-z][A-Z]")
#: the last label of a bare dotted name in title case is a class (`java.util.Date`); a host's top-level domain is
#: written in lower case ("Amazon.com") or all upper case
_CLASS_LABEL = re.compile(r"[A-Z][a-z0-9]+[A-Za-z0-9]*")


@functools.lru_cache(maxsize=16)
def _code_spans(text: str) -> tuple[tuple[int, int], ...]:
    from gate.pii.code import code_spans

    return tuple(code_spans(text))


def _host(value: str) -> tuple[str, bool]:
    """(host name, whether the URL is bare: no scheme, no "www.", no path, query or user)."""
    v = value.strip("\"'<>()[]{}")
    has_scheme = "://" in v
    parts = urlsplit(v if has_scheme else "//" + v)
    try:
        host = (parts.hostname or "").rstrip(".")
    except ValueError:
        host = ""
    bare = not has_scheme and not v.lower().startswith("www.") and not any(c in v for c in "/?#@")
    return host, bare


#: What makes a URL a person's: a user name or e-mail in it, a profile path, a handle, or a query naming them; a
#: page on a social network's own host (not `developers.facebook.com/docs`, nor a video on YouTube).
_PERSONAL_URL = re.compile(
    r"(?i)//[^/?#\s]*@|/(?:users?|u|in|profiles?|people|members?|authors?|~)[/=][^/?#\s]+|/~[^/?#\s]+|/@[\w.-]+"
    r"|[?&](?:e?mail|user(?:name)?|name|first_?name|last_?name|phone|tel|login|account|uid)="
    r"|[\w.+-]+@[\w-]+\.[\w.]+"
    r"|(?<![\w.-])(?:www\.|m\.)?(?:facebook|fb|twitter|x|instagram|linkedin|tiktok|threads|mastodon\.social|t)"
    r"\.(?:com|me|net)/(?!$)")
#: A URL written as a string literal in code: right after `(`, `=`, `,`, `[` or `:` and a quote.
_CODE_LITERAL_BEFORE = re.compile(r"[(=,\[:]\s*[\"']$")


def not_a_url(text: str, start: int, end: int) -> bool:
    """True when the URL-shaped `text[start:end]` points at no one: a host reserved for examples (with or without
    scheme and path), a bare dotted name (no scheme, "www." or path) that is code: inside a code span (fence,
    inline code, a code-shaped line such as SQL), or with a label that is an identifier (`user_id.name`,
    `myObj.data`) or a single character (`d.name` in SQL); or a resource named in code: a URL given as a string
    literal (`hub.load('https://tfhub.dev/google/...')`, `url = "https://..."`) or inside a code span, with nothing
    personal in it (`_PERSONAL_URL`: a user name, an e-mail, a profile path or handle, a query naming someone).
    A model, dataset or API a program loads identifies no one: 1,377 of 1,512 URL findings on the real-data bench
    were model handles in code (bench/results/real_data.md)."""
    host, bare = _host(text[start:end])
    if host and _RESERVED.search(host.lower()):
        return True
    if not bare:
        value = text[start:end]
        if _PERSONAL_URL.search(value):
            return False
        literal = bool(_CODE_LITERAL_BEFORE.search(text, max(0, start - 4), start)) or (
            value[:1] in "\"'" and bool(_CODE_LITERAL_BEFORE.search(text, max(0, start - 3), start + 1)))
        return literal or any(s <= start < e for s, e in _code_spans(text))
    labels = text[start:end].strip("\"'<>()[]{}").split(".")
    if len(labels[0]) == 1 or any(_IDENTIFIER_LABEL.search(label) for label in labels):
        return True
    if _CLASS_LABEL.fullmatch(labels[-1]) or text.startswith("(", end):
        return True  # a class or a call, not a host: `java.util.Date`, `IPython.display.Audio`, `model.to(device)`
    return any(s <= start < e for s, e in _code_spans(text))


#: The writer's own page: "my profile page is https://...", "our blog at ...".
_OWN_PAGE_BEFORE = re.compile(r"(?i)\b(?:my|our|his|her|their)\s+(?:[\w-]+\s+){0,2}(?:profile|page|site|website|"
                              r"blog|portfolio|account|homepage|channel|feed|cv|resume)\b")


def url_names_someone(text: str, start: int, end: int) -> bool:
    """True when the URL at `text[start:end]` is a person's: a user name or e-mail in it, a profile path or handle,
    a query naming someone (`_PERSONAL_URL`), or the writer calling it their own page ("my profile page is ...")
    in its sentence. Any other URL names a site, a library or a file: a quasi-identifier at most."""
    return bool(_PERSONAL_URL.search(text, start, end) or _OWN_PAGE_BEFORE.search(_clause_before(text, start)))


# ------------------------------------------------------------------------------------------------------ persons

_LABEL_BEFORE = re.compile(r"(?:^|\n)[ \t]*(?:#{1,6}[ \t]+|[-*+>][ \t]+|\d{1,3}[.)][ \t]+)?(?:\*\*|__)?$")
_LABEL_AFTER = re.compile(r"(?:\*\*|__)?[ \t]*(?::|$|\n)")


def label_not_a_name(text: str, start: int, end: int, lexicon: Callable[[], Callable[[str], str]]) -> bool:
    """True when the PERSON `text[start:end]` is the title-case label or heading of a line ("Reversed String:
    olleh", "# Input String") made of ordinary English words, one of them a verb or adjective ("reversed",
    "input", "original"): names are nouns, and a name that is a dictionary word ("John Smith", "Grace") is kept
    unless every word is one and one is not a noun. `lexicon()` gives the function from a word to its classes in
    the model's lemmatizer index ("" when unknown): WordNet's nouns, verbs, adjectives and adverbs; it is only
    built for a hit in label position."""
    if not (_LABEL_BEFORE.search(text, max(0, start - 16), start) and _LABEL_AFTER.match(text, end)):
        return False
    words = text[start:end].split()
    classify = lexicon()
    classes = [classify(w.lower()) for w in words]
    return len(words) >= 1 and all(classes) and any(set(c) - {"n"} for c in classes)


def not_the_models_script(value: str) -> bool:
    """True when a NER name or place holds a letter of a script other than Latin: the pinned model reads English,
    and on Chinese text it tags whole sentences and list items as PERSON ("1. 苹果的主要产地是哪里？..."; 56 of the
    1,135 NER warnings of the real-data bench, all in its BELLE rows, none a name). Names written in another script
    are therefore not searched by this model (docs/security.md says so); Latin names with accents ("José Müller")
    are. (A span over a line break is kept: the model tags a header's "Alex\nSubject", and the name is in it.)"""
    return any(ch.isalpha() and ch > "\u024f" and not "\u1e00" <= ch <= "\u1eff" for ch in value)


#: Languages whose line the English model is not asked to read names in: the Latin-script languages spaCy ships
#: stop-word lists for that a chat or instruction set is likely to hold.
_OTHER_LANGUAGES = ("es", "fr", "de", "it", "pt", "nl", "sv", "da", "nb", "pl", "tr", "ro", "ca", "cs", "fi", "hu",
                    "id")
_WORD2 = re.compile(r"[^\W\d_]{2,}")


@functools.lru_cache(maxsize=1)
def _stop_words_apart() -> tuple[frozenset[str], tuple[frozenset[str], ...]]:
    """spaCy's English stop words, and per other language its stop words that are not English ones."""
    import importlib

    from gate.data.text import english_stop_words

    english = english_stop_words()
    return english, tuple(frozenset(importlib.import_module(f"spacy.lang.{code}.stop_words").STOP_WORDS) - english
                          for code in _OTHER_LANGUAGES)


@functools.lru_cache(maxsize=256)
def _line_not_english(line: str) -> bool:
    words = [w.lower() for w in _WORD2.findall(line)]
    if len(words) < 3:
        return False
    english, others = _stop_words_apart()
    in_english = sum(w in english for w in words)
    for stops in others:
        hits = [w for w in words if w in stops]
        if len(hits) >= max(3, 0.2 * len(words)) and len(hits) > 2 * in_english and len(set(hits)) >= 3:
            return True
    return False


def not_english(text: str, start: int, end: int) -> bool:
    """True when the line holding `text[start:end]` is written in another language: its words hold at least three
    different stop words of one of `_OTHER_LANGUAGES` (spaCy's lists, less the English ones), a fifth of its words or
    more and over twice its English stop words. The pinned NER model reads English; on other languages it tags
    ordinary words ("Guten Tag", "ancora arrivato", "avec le"), and a phone number in the same message made them
    errors. Names in such a line are not searched (docs/security.md). On the real-data bench 50 lines of 104,321
    read so (the French, German, Spanish, Swedish, Dutch and Indonesian requests of APIBench and CONCODE; one line
    of Java), none of 47,000 Schema-Guided Dialogue and KVRET lines; "Maria de la Cruz" in an English line is
    read."""
    lo = text.rfind("\n", max(0, start - 2000), start) + 1
    hi = text.find("\n", end, end + 2000)
    line = text[lo:hi if hi >= 0 else min(len(text), end + 2000)]
    try:
        return _line_not_english(line)
    except ImportError:  # no spaCy: no NER span to judge either
        return False


#: Words that open a noun phrase: after a common first word ("Load the ...") they make the span an instruction
#: ("and" is not one: "Will and Grace Smith" is two names)
_DETERMINERS = frozenset({"the", "a", "an", "this", "that", "these", "those", "my", "your", "our", "its", "their",
                          "all", "some", "each", "every"})


def words_not_a_name(value: str) -> bool:
    """True when the words of a PERSON span say it is no name: written in lower case with a common English word
    in it ("danny collects", "jack receive", "returns null": the small model joins a name in lower-cased text with
    the verb after it, and reads code and French as names), or with a lower-case function word between title-case
    common words, or after a first word that is a common word ("Load the Universal Sentence Encoder": 51 of the
    real-data bench's PERSON warnings; a name's first word is no common word, the list leaving out given names, so
    "Catherine the Great" is kept). Common words are gate's snippet allowlist
    (gate/pii/common_words.txt), which leaves out given names, surnames and places, and the function words spaCy's
    English stop words. On the real-data bench 215 of 407 PERSON findings read were lower case, nearly all such
    pairs; a name in lower case ("naomi ryan") has no common word and is kept, and so is a title-case name made of
    common words ("Will White")."""
    from gate.data.text import english_stop_words
    from gate.pii.redact import common_words

    words = re.findall(r"[^\W\d_]+(?:['’][^\W\d_]+)?", value)
    if len(words) < 2:
        return False
    common = common_words()
    stems = [w.lower() for w in words]
    if value == value.lower():
        return any(w in common or (w.endswith("s") and w[:-1] in common) for w in stems)
    inner = words[1:-1]
    if stems[0] in common and inner and inner[0] in _DETERMINERS:
        return True  # an instruction, not a name: "Load the Universal Sentence Encoder", "Create a Keras model"
    return any(w.islower() and w in english_stop_words() for w in inner) and all(
        w in common or w in english_stop_words() for w in stems)


#: What ties a lone given name to the writer or reader: an introduction, a greeting, a sign-off, a hand-over, a
#: message header ("From: Alex"). "to" and "from" in prose tie nobody: "give $2 to Jonathan", "3 more from Sam" are
#: word problems' characters (79 and 26 of the 155 lone given names the real-data bench kept read so).
_NAMING = re.compile(
    r"(?i)(?:\bname\s*(?:is\b|:)|\b(?:I\s+am|I'm|this\s+is|it's|call\s+me|ask\s+for|speak\s+(?:to|with)|"
    r"talk\s+to|contact|signed|regards|thanks|thank\s+you|cheers|best|sincerely|dear|hi|hello|hey|attn)\b|"
    r"\b(?:from|to|cc)[ \t]*:)[\s,:!.\-]*$")


def lone_name(text: str, start: int, end: int) -> bool:
    """True when the PERSON `text[start:end]` is one word (a given name alone) and nothing right before it ties
    it to the writer or reader ("my name is", "I'm", "Hi", "Thanks,", "ask for", a sign-off on the line above).

    A given name alone identifies nobody: the characters of word problems ("Natalia sold clips", every GSM8K
    row) and stories are such names. Full names, and given names that introduce, greet or sign, are kept, and so
    is every name of a list that such words introduce ("Thanks Teresa and Jodi").
    """
    if len(text[start:end].split()) != 1:
        return False
    if text[start:start + 1].isupper() and _CONTACT_AFTER.match(text, end, end + 80):
        return False
    return not any(_NAMING.search(text, max(0, s - 40), s) for s in _list_starts(text, start))


#: A lone given name followed by its own e-mail address or number ("an email to Andy at andy@gorilla.ai", "Andy
#: (555-0134)") is that person's: the name is kept whatever stands before it.
#: (a number: seven digits or more, so "in Marshall on 2023.3.1" is a date, not Marshall's number)
_CONTACT_AFTER = re.compile(r"[ \t]*(?:at|via|on|:|,|-|\(|<)?[ \t]*"
                            r"(?:[\w.+-]+@[\w-]+\.\w|\+?\d(?:[ \t().-]{0,2}\d){6,})")


def _clause_after(text: str, end: int) -> str:
    """The text of the sentence after `end` (at most `_WINDOW` characters)."""
    right = text[end:end + _WINDOW]
    m = _CLAUSE_END.search(right)
    return right[:m.start()] if m else right


#: Who a person is to the writer: "my manager", "our accountant" (the name follows, or follows after a comma).
_RELATION = (r"(?:colleague|co-?worker|manager|boss|supervisor|wife|husband|partner|fianc[eé]e?|son|daughter|child|"
             r"mother|father|mom|mum|dad|brother|sister|aunt|uncle|cousin|grandmother|grandfather|friend|"
             r"neighbou?r|landlord|landlady|tenant|roommate|doctor|dentist|lawyer|accountant|client|customer|"
             r"employee|assistant|teacher|student|patient|contact)")
#: An introduction, a greeting, a sign-off or a hand-over right before the name (nothing but spaces and
#: punctuation between), or the writer's relation to them: "my name is X", "Hi X", "Regards,\nX", "ask for X".
_INTRODUCED = re.compile(
    r"(?i)(?:\bname\s*(?:is\b|:)|\b(?:I\s+am|I'm|this\s+is|call\s+me|ask\s+for|speak\s+(?:to|with)|signed|"
    r"regards|thanks|thank\s+you|cheers|sincerely|dear|hi|hello|hey|attn|(?:my|our)\s+" + _RELATION + r"s?)\b)"
    r"[\s,:!.\-]*$")
#: The speaker naming themselves: in the assistant's own turn that names the model's persona ("My name is
#: Vicuna"), not a person.
_SELF_NAMED = re.compile(r"(?i)(?:\bname\s*(?:is\b|:)|\b(?:I\s+am|I'm|this\s+is|call\s+me)\b)[\s,:!.\-]*$")
#: The same after the name: "X from our office", "X, my landlord", "X (our accountant)".
#: "in my" only for a group ("X in our team"): "Bad Habit by Ben Platt in my bedroom" ties no one to the writer.
_RELATED_AFTER = re.compile(r"(?i)[\s,(]*(?:(?:from|at|of)\s+(?:our|my)\b|in\s+(?:our|my)\s+(?:team|office|company|"
                            r"department|group|class|family|lab|unit)\b|(?:my|our)\s+" + _RELATION + r"\b)")


def _names_a_thing(text: str, start: int) -> bool:
    """"The salon name is Bateau Hair Salon", "It's name is La Hacienda": a place's name, no introduction."""
    return bool(_THING_NAMED.search(text, max(0, start - 40), start))


def names_a_person(text: str, start: int, end: int, *, model_speaks: bool = False) -> bool:
    """True when the PERSON `text[start:end]` is someone real in the conversation: introduced, greeted, signed or
    handed over right before it ("my name is", "Hi", "Regards,", "ask for", "my landlord": `_INTRODUCED`, for
    every name of its list), or tied to the writer right after it ("X from our office", "X, my accountant").

    Anything else is a name mentioned, not a person identified: a character of a story or a word problem, a
    public figure asked about ("the net worth of LeBron James", "a movie with Bret McKenzie"), a product that
    reads as a name. The first version of this rule counted the writer anywhere in the sentence ("I would like to
    know ... LeBron James") and still failed 280 of the real-data bench's 738 false PERSON findings.
    `model_speaks`: the text is the assistant's turn, whose self-introduction names the model's persona.
    """
    for s in _list_starts(text, start):
        window = max(0, s - 40)
        if (_INTRODUCED.search(text, window, s) and not (model_speaks and _SELF_NAMED.search(text, window, s))
                and not _names_a_thing(text, s)):
            return True
    return bool(_RELATED_AFTER.match(text, end, min(len(text), end + 40)))


#: A name before a list joint: "Teresa and ", "Teresa, ", "Teresa & " (title-case word, then the joint).
_LISTED_BEFORE = re.compile(r"[A-ZÀ-ÞĀ-Ž][\w'’\-]*(?:,[ \t]*(?:and|&|or)?|[ \t]+(?:and|&|or))[ \t]+$")


def _list_starts(text: str, start: int) -> list[int]:
    """The starts of the names in the list that ends with the name at `start`, this one first: "Hi Teresa and
    Jodi" gives Jodi's and Teresa's, so a greeting or introduction before the first name ties every name in the
    list (`Jodi` was dropped as a lone name). At most five names back."""
    starts = [start]
    for _ in range(5):
        m = _LISTED_BEFORE.search(text, max(0, starts[-1] - 40), starts[-1])
        if m is None:
            break
        starts.append(m.start())
    return starts


# ------------------------------------------------------------------------------------------------------ examples

#: What introduces an example in documentation: "e.g.", "for example", "such as", "in the format", "sample".
_EXAMPLE_WORD = (r"(?:\be\.\s?g\.|\bi\.\s?e\.|\bfor\s+(?:example|instance)|\bexamples?\b|\bsample\b|\bsuch\s+as"
                 r"|\bformat(?:ted)?\b(?:\s+(?:as|of|like|is|should\s+be|must\s+be))?|\blike(?=\s*[\"'`]))")
#: ...then, before the value, at most a few earlier quoted examples ("'name@example.com' or '...'") and a quote.
_QUOTED = r"(?:[\"'`\u2018\u201c][^\"'`\u2019\u201d\n]{0,80}[\"'`\u2019\u201d]\s*(?:,|or|and|/)\s*)"
#: The value opens the example or stands inside its quotes ("Springfield" in "e.g. '123 Main St, Springfield'").
_EXAMPLE_BEFORE = re.compile(r"(?i)" + _EXAMPLE_WORD + r"\s*[,:]?\s*" + _QUOTED
                             + r"{0,3}(?:[\"'`\u2018\u201c][^\"'`\u2019\u201d\n]{0,80}|[(\[]?\s*)$")
#: A JSON schema's own example values: `"default": "default@example.com"`, `"examples": ["+12345678900"]`.
_SCHEMA_VALUE_BEFORE = re.compile(r"(?i)[\"'](?:default|examples?|placeholder)[\"']\s*:\s*\[?\s*[\"']$")


def given_as_example(text: str, start: int) -> bool:
    """True when the value at `start` is written as an example in documentation: right after "e.g.", "for
    example", "such as", "in the format", "like '...'" (possibly after other quoted examples: "in the format
    'name@example.com' or '+12345678900'"), or as a JSON schema's `default`, `example(s)` or `placeholder`.

    Why: function-calling data carries its tools' documentation, and that documentation shows the shape of a
    value with a made-up one ("the pickup address, e.g. '123 Main St, Springfield, IL'"); on the real-data bench
    these were most of the phone numbers, e-mails and street addresses that failed the gate. The value is still
    reported (a warning): a real one written as an example is rare, and a reviewer sees it. Part of a quoted
    example counts too ("Springfield" in "e.g. '123 Main St, Springfield, IL'")."""
    return bool(_EXAMPLE_BEFORE.search(text, max(0, start - 240), start)
                or _SCHEMA_VALUE_BEFORE.search(text, max(0, start - 24), start))


# ------------------------------------------------------------------------------------------------------ listings

#: What a place's listing says before its address or number: "located at", "held at", "its address is", "the
#: contact number for the hotel is", "you can reach them at", "they are at", "a house with a rating of 4.3 at".
_VENUE = (r"(?:house|home|apartment|apartments|flat|property|condo|restaurant|cafe|caf\u00e9|bar|hotel|motel|hostel|"
          r"salon|spa|venue|store|shop|office|clinic|dentist|doctor|hospital|pharmacy|museum|theater|theatre|cinema|"
          r"park|stadium|arena|gym|studio|gallery|church|school|library|bank|station|airport|company|business|"
          r"agency|center|centre|mall|market|branch|place|attraction|event|show|concert|game|festival|room|"
          r"reservation|booking|stay|practice|residence)"
          r"(?:s|es)?")
#: A business, never a dwelling or a part of one: a name beside an address ("the hotel 45 Park Lane", "the 45 Park
#: Lane hotel") makes it the business's; "Home: 12 Oak Road" or "12 Oak Road apartment 4" stays someone's.
_BUSINESS = r"(?!(?:home|house|apartment|flat|property|condo|office|place|room|studio|branch)(?:s|es)?\b)" + _VENUE
#: A thing's name given: "the salon name is", "its name is" (see `_INTRODUCED`).
_THING_NAMED = re.compile(r"(?i)\b(?:its|it's|it’s|their|" + _BUSINESS + r"(?:'s)?)\s+name\s*(?:is\b|:)"
                          r"[\s,:!.\-]*$")
_LISTING_BEFORE = re.compile(
    r"(?i)(?:\b(?:located|situated|based|held|hosted|headquartered|found)\s+(?:at|on|in)"
    r"|\b(?:their|its|it's|the(?:\s+" + _VENUE + r"(?:'s)?)?)\s+(?:(?:main|contact|phone|telephone|street|office|"
    r"business|front\s+desk|venue|exact|full|direct)\s+)*(?:number|phone|telephone|line|address|location)"
    r"(?:\s+[^.!?\n]{0,30}?)?\s+(?:is|are|:)"
    r"(?:\s+(?:listed\s+as|as\s+follows:?))?"
    # the same with no article, opening the clause: "Contact number is 408-226-5822."
    r"|(?:^|(?<=[.!?]))\s*(?:(?:main|contact|phone|telephone)\s+)*(?:number|phone|address)\s+(?:is|:)"
    r"|\b(?:reach|call|contact|find|locate|visit|phone|ring|get)\s+(?:them|it|the\s+" + _BUSINESS + r")\b"
    r"[^.!?\n]{0,20}?\b(?:at|on|by)"
    r"(?:\s+the\s+(?:phone\s+)?number)?"
    r"|\b(?:they|it)\s+can\s+be\s+(?:called|reached|contacted|found)\s+(?:at|on)"
    r"|\b(?:the\s+)?(?:phone|number\s+to\s+call)\s+is"
    r"|\b(?:they|it)\s+(?:are|is)\s+(?:located\s+)?(?:at|on)|\b(?:they're|it's|is|one)\s+at"
    r"|\b" + _VENUE + r"\b(?:[^.!?\n]|\.(?=\S)){0,60}?\b(?:at|on|in|@|number)|\b" + _BUSINESS
    # a place named by its address: "a 5 star hotel called 45 Park Lane", "the hotel 45 Park Lane"
    + r"|\b(?:called|named)"
    # an option the model offers from what a search returned: "How about 1 Rue Bayard?", "One of them is ...",
    # "May I suggest ...", "There's one with a rating of 4.5 at ...", "One stay ... is there at ..."
    r"|\b(?:how|what)\s+about(?:\b(?:[^.!?\n]|\.(?=\S)){0,40}?\b(?:at|on|in))?"
    r"|\bwhat\s+do\s+you\s+think\s+(?:about|of)|\b(?:one|another)(?:\s+of\s+them)?\s+is|\b(?:suggest|recommend)"
    r"|\b(?:(?:the\s+)?first(?:\s+one|\s+up)?|next(?:\s+up)?)\s+is"
    r"|\b(?:there(?:'s|\s+is)|found|have|got)\s+one\b(?:[^.!?\n]|\.(?=\S)){0,40}?\b(?:at|on|in)"
    # what the model has to offer: "I have 1 Kensington Street", "I have a 3.7 at ...", "I've found 45 Park Lane",
    # "One great one is Heron Court at ...", "One with 2 bedrooms ... at ..."
    r"|\b(?:I\s+have|I've|we\s+have|we've)(?:\s+(?:also\s+)?found)?(?:\s+(?:a|an)\b(?:[^.!?\n]|\.(?=\S)){0,30}?"
    r"\b(?:at|on|in))?|\b(?:I|we)\s+found(?:\s+(?:this|the|an?)\s+address:?|\s+this\s+one\s+(?:at|on|in))?"
    r"|\bat\s+(?:the\s+street\s+)?address|\b(?:the\s+)?(?:first|second|next|last)\s+one\s+is\s+(?:at|on|in)"
    r"|^\s*there\s+also|\bthere(?:'s|\s+is|\s+are)(?:\s+also)?\s*$"
    # an event's venue: "It will start at 6:30 pm at ...", "It will be at ... on March 11th"
    r"|\b(?:it|they)\s+(?:will\s+(?:start|be|begin|take\s+place)|starts|begins|takes\s+place)\b[^.!?\n]{0,25}?"
    r"\b(?:at|on|in)"
    r"|^\s*(?:one|another)\b(?:[^.!?\n]|\.(?=\S)){0,60}?\b(?:at|on|in)"
    # a rated result: "one in particular is nice and has a 4.1 rating at ..."
    r"|\b(?:has|with)\s+(?:a\s+)?[\d.]+(?:\s+star)?\s+rating\s+(?:at|on|in)"
    r"|\bis\s+there\s+(?:at|on|in)"
    # what a search found, described: "There is a nice 3 bed, 2 bath in Amber Court @ ..."
    r"|\bthere(?:'s|\s+is|\s+are)\b(?:[^.!?\n]|\.(?=\S)){0,50}?(?:\b(?:at|on|in)|@)|^\s*here(?:'s|\s+is)\s*$"
    r"|\b(?:a|an|the)\s+(?:[\w.-]+\s+){0,3}" + _BUSINESS + r"\b[^.!?\n]{0,30}?\bis\s*$"
    # a booked event's venue: "Your seats are confirmed. Enjoy it at ...", "the theatre is Century 20 Great Mall"
    r"|\benjoy\b[^.!?\n]{0,30}?\b(?:at|in)|\bthe\s+" + _BUSINESS + r"\s+is\s+(?:(?-i:[A-Z])[\w'&-]*\s+){0,3}"
    r")"
    # a house number the recogniser left outside its span ("located in 1 | Rue Bayard", "at 100-| 15 Ditmars")
    r"[\s:,]*(?:number\s+)?(?:\d+[A-Za-z]?(?:[/-]\d+)?\s+|\d+[/-])?$")
#: Whose the value is, in the words before it: the writer's or a third person's ("my", "our", "his", "her",
#: "Jessica's number"), or the reader's home, number or people ("your address", "your friend's house"). "Your" about
#: anything else is the booking the model is talking about ("you got your rooms, the number to call is ...", "10
#: hotels of your choice and 45 Park Lane is one among them").
_YOURS = (r"\byour\s+(?:(?!(?:their|its|the|a|an|destination|pickup|pick-up|drop-off|dropoff|delivery|end|final)\b)"
          r"[\w'-]+\s+)??(?:home|house|apartment|flat|place|address|number|"
          r"phone|location|residence|door|" + _RELATION + r")(?:s|es|'s)?\b")
#: ...where a place's own ("the hotel's phone number", "the venue's address") is the listing's; a person's home
#: ("Sarah's house at ...") is hers, and "Home is ..." the reader's.
_PERSONAL_BEFORE = re.compile(r"(?i)\b(?:my|our|his|her)\b|" + _YOURS + r"|\b(?!(?:what|that|it|where|here|there|who"
                              r"|he|she|let|how|which|this|" + _VENUE + r")'s)[a-z]+'s\s+(?:\w+\s+)?"
                              r"(?:number|phone|address|home|house|apartment|flat|condo)"
                              # a clause that opens on the reader's home ("Home is 5 miles away at ...", "Home: ...")
                              r"|^\s*home\b(?!\s+(?:depot|goods))")


#: The listing after the value: "+61 2 8889 7700 is their phone number".
_LISTING_AFTER = re.compile(r"(?i)[\s.,]*(?:(?:is|are)\s+(?:their|its|the)\s+(?:\w+\s+){0,2}(?:number|phone|address)"
                            r"|there(?:'s|\s+is)\s+(?:one|a|an)\b|is\s+one\s+(?:of|among)\s+them\b"
                            # a rated listing: "1006 Spring Street has a 3.9 rating", "... with a 4.5 star rating"
                            r"|(?:has|with)\s+(?:a\s+|an\s+)?(?:[\w.-]+\s+){0,3}(?:rating|stars?)\b"
                            # "Aegena at ... is a good one", "... is one I highly recommend"
                            r"|is\s+(?:a|the)\s+(?:\w+\s+){0,2}one\b|is\s+one\s+I\b"
                            # "... is the address and it cost", "... offers 2 bed rooms", "... also looks nice"
                            r"|is\s+the\s+(?:street\s+)?address\b|offers\s+\d+\s+(?:bed|bath|rooms?\b)"
                            r"|(?:also\s+)?looks\s+(?:nice|good|great)\b|(?:is\s+)?rated\s+(?:at\s+)?\d"
                            # "45 Park Lane, a 5 star hotel", "..., and the rating is 4.2"
                            r"|,\s*(?:a|an)\s+(?:[\w.-]+\s+){0,3}" + _BUSINESS
                            + r"\b|(?:,\s*)?and\s+the\s+rating\s+is\b"
                            # a home for rent described: "It's 18 Clark avenue and has 3 bedrooms", "... at 100
                            # Chilpancingo Parkway is the one with 3 bed rooms"
                            r"|is\s+the\s+one\b|(?:and\s+)?(?:has|have|with)\s+\d+\s+(?:bed|bath|rooms?\b)"
                            # "the 45 Park Lane hotel", "45 Park Lane is a great place"
                            r"|" + _BUSINESS + r"\b|(?:is|was)\s+(?:a|an|the)\s+(?:[\w.-]+\s+){0,3}" + _VENUE + r"\b)")


#: Someone's home in the clause: "the house where Tom lives, at ..." is his address, not a listing.
#: A bare "live" or "living" only before where: "live music", "a living room" say nothing of anyone's home.
_LIVES = re.compile(r"(?i)\b(?:lives|lived|reside[sd]?|residing)\b"
                    r"|\b(?:live|living)\s+(?:in|at|on|with|there|here|near|by|nearby|next)\b")


def listed_contact(text: str, start: int, end: int) -> bool:
    """True when the model's turn reads out the street address or phone number of a place it found: "Their number
    is +1 604-697-0202", "The venue is located at 2367 Shattuck Avenue", "a nice house located at 100 Greenwich
    Street", "The contact number for the hotel is ...", "You can find them at ..."; or offers it as one of a
    search's results: "How about 1 Addington Street?", "One of them is 1 Rue Bayard", "a 5 star hotel called 45 Park
    Lane", "At 10 East Thomas Road there's one".

    Why: dialogue and tool-use data (Schema-Guided Dialogue, MultiWOZ) is made of such listings, the contact
    details of restaurants, salons, hotels and homes for rent a service returned; on 1,200 Schema-Guided Dialogue
    rows they were 929 pii errors (and linked 900 names and places more), none of them anyone's. The sentence must
    not tie the value to a person ("my", "your", "his", "Jessica's number") nor say someone lives there; the
    caller asks only for the assistant's turns, so a user who gives their own address or number still fails the
    gate."""
    before = _clause_before(text, start)
    # "Your appointment is made and their address is" is the place's; searched from a position, not a slice, so
    # "Another house" holds no "her"
    if _PERSONAL_BEFORE.search(before, max(0, len(before) - 40)) or _LIVES.search(before):
        return False
    if _LISTING_BEFORE.search(before) or _LISTING_AFTER.match(text, end, min(len(text), end + 60)):
        return True
    # a home for rent described in the value's sentence or the next ("At 1010 Power Avenue there's Belmont
    # Apartment Homes. It has 3 bed rooms and 2 baths", "a 4 BR 3 BTH at ... for $5200"); whose home it is was read
    # above ("Sarah's house at ...")
    if _FOR_RENT.search(text, start - len(before), min(len(text), end + _WINDOW)):
        return True
    # a search's results, the value opening the sentence after "I found 10 houses." or rated later in its own
    # sentence ("12, Mangalam Place, Sector 3, Rohini, New Delhi has a 4.3 rating"), or in the next one ("Yiu might
    # like 10044 Pacific Mesa Boulevard. It has a 4.5 star rating")
    head = text[max(0, start - len(before) - _WINDOW):start - len(before)]
    return bool((len(before) <= 30 and _FOUND_BEFORE.search(head))
                or _RATED_LATER.match(text, end, min(len(text), end + 90)))


#: A home for rent described: its rooms ("3 bed rooms and 2 baths", "a 4 BR 3 BTH"), its rent ("The rent there is
#: $3,850 a month", "for 4000 dollars a month"). Read only in the model's turns (`listed_contact`): a user who says
#: "my flat at ... has 2 bedrooms" gives their own address.
_FOR_RENT = re.compile(r"(?i)\b\d+\s*(?:bed\s*rooms?|beds?|br|bath\s*rooms?|baths?|bth)\b|\brent\b"
                       r"|(?:\$\s*\d[\d,.]*|\b\d[\d,.]*\s+dollars)\s*(?:a|per|/)\s*month\b")
#: The sentence before a search's results: "I found 10 houses.", "There are 6 apartments:".
_FOUND_BEFORE = re.compile(r"(?i)\b(?:found|have|got|are|located|discovered|see)\s+(?:\d+|ten|several|some|a\s+few)\s+"
                           r"(?:[\w-]+\s+){0,2}" + _VENUE + r"\b[^.!?\n]*[.!?:]\s*$")
#: A search result's rating: "has a 4.3 rating", "has a rating of 4.2", "rated 4.5".
_RATING = r"(?:has\s+(?:a\s+)?(?:rating\s+of\s+[\d.]+|[\d.]+(?:\s+star)?\s+rating)|rated\s+(?:at\s+)?[\d.]+)"
#: A rating later in the value's sentence or at the start of the next one ("It has a rating of 4.4", "The rating is
#: 4.4"), also when the value's span took the sentence's full stop ("... 100 Greenwich Street. It has ...").
_RATED_LATER = re.compile(r"(?i)[^.!?\n]{0,50}?\b" + _RATING + r"|(?:[^.!?\n]{0,50}[.!?]|(?<=[.!?]))\s*"
                          r"(?:it|its|it's|the)\s+(?:" + _RATING + r"|has\s+(?:a\s+)?[\d.]+|rating\s+is|is\s+rated)")


#: A user asking for a place's contact details: "What is their phone number?", "Tell me the address.", "Can I get
#: a contact number?", "What number do I have to call?"
_ASKS_LISTING = re.compile(r"(?i)\b(?:phone|number|digits|ad+res+|contact|location"
                           r"|where(?:'s|\s+is|\s+are|\s+was)?\s+(?:it|they|the|that|this|those|these|their|its)"
                           r"|where\s+at"
                           r"|where\s+(?:will|can|do|should)\s+(?:I|we)\s+find\s+(?:it|them|the))\b")
#: A question written without its question mark: "Whats their number and address".
#: ...or a request in a few words: "phone number for me", "the address please".
_UNMARKED_QUESTION = re.compile(r"(?i)(?:what|what's|whats|where|where's|wheres|how"
                                r"|(?:the\s+|their\s+|its\s+)?(?:phone|number|address|contact))\b")
#: The user naming the place whose details they ask for: "the phone number of this property for my reference":
#: a "my" elsewhere in that sentence is the purpose, not whose the number is.
_OF_A_PLACE = re.compile(r"(?i)\b(?:phone|number|address|location|contact)\b[^.!?\n]{0,20}?\b(?:of|for)\s+"
                         r"(?:this|that|the)\s+(?:" + _BUSINESS + r"|property|properties)\b"
                         r"|\b(?:their|its)\s+(?:\w+\s+)?(?:phone|number|address|contact|line)\b")


#: ...or requesting them: "Give me the phone number", "let me know their phone number", "I need their address".
_REQUESTS_LISTING = re.compile(r"(?i)\b(?:give|tell|share|send|get|need|know|have|provide)\b[^.!?\n]{0,30}\b"
                               r"(?:(?:their|its|the)\s+(?:\w+\s+)?(?:phone|number|address|contact)"
                               r"|(?:me|us)\s+(?:the\s+)?(?:phone|number|address|contact))")


#: One sentence of a user's turn, with its closing mark.
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]*")


def _asks_about_a_place(asked: str, value: str, asks: Callable[[str], bool]) -> bool:
    """The user's turn `asked` points the model's next turn at a place: a sentence of it `asks` (a place's number,
    a ride there) and ties nothing to a person ("my", "his", "Jessica's number"), and the turn does not hold
    `value` itself (then the user gave it). Only the asking sentence is read for the tie: in "Thank you for your
    assistance. Can you get me a cab to go there?" the "your" thanks the model."""
    if not asked or value.strip(" .,") in asked:
        return False
    return _points_at_a_place(asked, asks)


@functools.lru_cache(maxsize=64)
def _points_at_a_place(asked: str, asks: Callable[[str], bool]) -> bool:
    """`_asks_about_a_place` without the value: the same for every value of the model's turn, so read once per turn
    (a turn of thousands of values read the user's turn thousands of times)."""
    return any(asks(s) and (bool(_OF_A_PLACE.search(s)) or not _PERSONAL_BEFORE.search(_COMPANIONS.sub("", s)))
               for s in _SENTENCE.findall(asked))


#: Who rides along: "a cab to reach there with my friends" says whom the user travels with, not whose the place is.
_COMPANIONS = re.compile(r"(?i)\b(?:with|(?:me|us)\s+and)\s+(?:my|our|his|her)\s+(?:[\w'-]+\s+){0,2}?[\w'-]+")


def _asks_listing(sentence: str) -> bool:
    question = sentence.rstrip().endswith("?") or bool(_UNMARKED_QUESTION.match(sentence.strip()))
    return (question and bool(_ASKS_LISTING.search(sentence))) or bool(_REQUESTS_LISTING.search(sentence))


def asks_for_listing(asked: str, value: str) -> bool:
    """True when the user's turn right before the model's asks for a place's phone number or address (theirs, its,
    "the address"), so the `value` the model answers with is the listing: "What is their phone?" / "It is 20 7071
    5029." (Schema-Guided Dialogue's answers carry no cue of their own). Not when the asking sentence names a
    person ("my", "your", "his", "her", "Jessica's number"), nor when the user gave the value themselves (the
    model's call repeats the user's own destination)."""
    return _asks_about_a_place(asked, value, _asks_listing)


#: A user sending the model "there": to a place already named in the dialogue ("I need a cab to go there", "Can you
#: get me a ride there?", "How do I get there?"; not "get me an appointment there").
_GOES_THERE = re.compile(r"(?i)\bget\s+(?:me\s+|us\s+)?there\b"
                         r"|\b(?:go|going|ride|cab|taxi|car|transport(?:ation)?|take\s+(?:me|us)|travel|head(?:ing)?)\b"
                         r"[^.!?\n]{0,40}"
                         r"(?:\bthere\b|\b(?:to|visit|for)\s+(?:the|this|that)\s+(?:" + _BUSINESS
                         + r"|apartments?|propert(?:y|ies)|condos?|appointment|movie|film|match|destination)\b"
                         r"|\bfor\s+(?:the|that)\s+appointment\b)")


def wants_to_go_there(turn: str) -> bool:
    """True when a sentence of the user's `turn` asks for a ride to a place the dialogue found ("Can you get me a
    cab to go there?", "I need a ride to the restaurant", "a cab for the appointment") and ties it to no person.
    Why: the model often asks how many seats first and names the address turns later ("Is your destination 600
    Redwood Highway?"); it is the found place's all the same."""
    return any(_GOES_THERE.search(s) and not _PERSONAL_BEFORE.search(_COMPANIONS.sub("", s))
               for s in _SENTENCE.findall(turn))


#: A user asking for a place by its kind, not by whose it is: "directions to the nearest starbucks", "Is there a
#: grocery store within 3 miles of me?", "Take me to a hospital.", "find a coffee place", "I need a place to live",
#: "Find pizza.", "Where can I get groceries?", "find me the best parking spot".
_SEARCHES = re.compile(r"(?i)\b(?:nearest|closest|nearby|near\s+(?:me|here|by|us)|around\s+here|close\s+by"
                       r"|in\s+(?:the|this|my|our)\s+area|within\s+\d+\s+miles?|locally)\b"
                       r"|\b(?:find|search(?:ing)?(?:\s+for)?|look(?:ing)?\s+for|locate|directions?\s+to|route\s+to"
                       r"|navigate\s+to|take\s+(?:me|us)\s+to|where\s+(?:is|are|can)|is\s+there|are\s+there"
                       r"|need|want)\s+(?:me\s+|us\s+)?(?:a|an|some|any|the\s+(?:best|local|cheapest|quickest|"
                       r"fastest|nearest|closest))\b"
                       # "Find pizza.", "Where can I get groceries?"
                       r"|^\W*find\s+(?!(?:my|our|his|her|their|your|him|them|out)\b)\w"
                       r"|\bwhere\s+can\s+(?:I|we)\s+(?:get|find|buy|eat|grab)\b")
#: ...and a place that is someone's: "my friend's house", "take me home", "What is my address?", "Where does Tom
#: live?".
_KIN = r"(?:friend|mom|mum|mother|dad|father|sister|brother|parent|grandma|grandmother|grandpa|grandfather|aunt|uncle)"
_OWN_PLACE = re.compile(r"(?i)\b(?:my|our)\s+(?:" + _KIN + r"(?:'s|s'|s)?\s+|own\s+|new\s+)?"
                        r"(?:home|house|place|address|apartment|flat)\b"
                        r"|\b" + _KIN + r"(?:'s|s'|s)\s+(?:home|house|place|address|apartment|flat)\b"
                        r"|\b(?:go|get|take\s+(?:me|us)|drive|head(?:ing)?|navigate|directions|route|way)\s+(?:\w+\s+){0,2}?home\b"
                        r"|\bwhere\s+(?:do|does|did)\s+(?:[\w'-]+\s+){1,2}live\b|\blives\b")
#: A ride or a cab: what the user asks for is then where they go (`wants_to_go_there` reads which).
_RIDE = re.compile(r"(?i)\b(?:ride|cab|taxi|uber|lyft|car\s+service|pick\s*(?:me|us)?\s*up|pickup|drop\s+(?:me|us))\b")


@functools.lru_cache(maxsize=64)
def searches_for_a_place(turn: str) -> bool:
    """True when the user's turn asks for a place by its kind ("the nearest hotel", "a coffee place", "Is there a
    parking garage?"). Why: the street address and number the model answers with are then those of the place its
    search found ("The Travelers Lodge is 1 miles away at 333 Arbol Dr", "Setting navigation to 270 Altaire Walk
    now"), in hundreds of wordings no list of listing phrases covers (the in-car dialogues of KVRET: 30 of the 44
    pii errors on its 606 dialogues). A user's own place ("my friend's house", "take me home") or a ride, whose
    destination is the rider's, keeps the rule off for the whole dialogue, this turn included: the caller reads
    those once per turn (`names_own_place`, `asks_for_a_ride`), not again here."""
    return bool(_SEARCHES.search(turn))


#: A car's navigation: "Setting navigation to ...", "the quickest route", "directions there", "set the GPS", "2 miles
#: away", "no traffic".
_NAVIGATES = re.compile(r"(?i)\b(?:navigat\w*|route|directions?|gps|map|traffic|\d+\s+(?:miles?|km|kilometers?)"
                        r"\s+away)\b")


@functools.lru_cache(maxsize=64)
def navigates(turn: str) -> bool:
    """True when the turn speaks of a car's navigation: after a search for a place (`searches_for_a_place`), the
    address it routes to is the found place's ("Setting navigation to 270 Altaire Walk now", "Yes, the route to 611
    Ames Ave is the quickest")."""
    return bool(_NAVIGATES.search(turn))


def names_own_place(turn: str) -> bool:
    """True when the user's turn names someone's place ("my friend's house", "take me home", "Where does Tom
    live?"): the dialogue's addresses may then be a person's, and `searches_for_a_place` no longer speaks for them."""
    return bool(_OWN_PLACE.search(turn))


#: Someone's place as where a search starts from: "a dentist near my home", "directions from my house".
_FROM_OWN = re.compile(r"(?i)\b(?:near(?:est)?|around|close(?:st)?\s+to|next\s+to|from|by|within)\s+(?:\w+\s+){0,3}$")


@functools.lru_cache(maxsize=64)
def asks_about_own_place(turn: str) -> bool:
    """True when the user's turn asks about someone's place itself ("Where does my friend live?", "What is the
    address of my friend's house?"), not from it ("a pharmacy near my home"). Why: the model's answer is then that
    person's address however it is worded ("347 Alta Mesa Ave. is the address.", KVRET), where the same words after
    a search would read as a place's listing."""
    # the few words before each mention only: a search of the whole prefix per mention is quadratic in a long turn
    return any(not _FROM_OWN.search(turn, max(0, m.start() - 60), m.start()) for m in _OWN_PLACE.finditer(turn))


def asks_for_a_ride(turn: str) -> bool:
    """True when the user's turn asks for a ride, cab or pickup: its destination is where the rider goes, so
    `searches_for_a_place` no longer speaks for the dialogue's addresses (`wants_to_go_there` reads which are the
    found place's)."""
    return bool(_RIDE.search(turn))


#: The words of a trip right before its destination: "we are going to", "I'm headed to", "a cab to", "my destination
#: is".
_HEADS_TO = re.compile(r"(?i)\b(?:go(?:ing)?|head(?:ed|ing)?|travel(?:l?ing)?|get|ride|cab|taxi|car|trip|destination"
                       r"|drive|drop\s+(?:me|us))\b[^.!?\n]{0,20}$")


def sends_there(turn: str, start: int, end: int) -> bool:
    """True when the user's turn asks for a ride "there" before the address at `start:end` or in the rest of its
    sentence: the address the user types is then the found place's ("I need a cab to get there. I want to head to
    45 San Clemente Drive", "I need to go to 750 Tennant Station on a shared ride, i require a cab to go there")."""
    # the words of a bounded window before the value: the whole prefix for each of a turn's values was quadratic in a
    # long turn (a pull request writes it); a "there" further back leaves the address an error, the safe side
    return wants_to_go_there(turn[max(0, start - _TURN_WINDOW):start]) or wants_to_go_there(_clause_after(turn, end))


def heads_to(turn: str, start: int) -> bool:
    """True when the words right before `start` in the user's turn send someone there ("we are going to 750
    Tennant Station"), not when they share an address or name where an event is."""
    before = _clause_before(turn, start)
    # "Yes please to 3127 Fillmore street." answers "Do you want a shared ride?"; "share the location to ..." shares
    return bool(_HEADS_TO.search(before)) or (bool(re.search(r"(?i)\bto\s*$", before)) and not _SHARING.search(before))


def goes_there(asked: str, value: str) -> bool:
    """True when the user's turn right before the model's asks to go "there", a place named earlier in the
    dialogue, so the street address the model confirms ("a shared ride for 2 to 1400 North Dutton Avenue?") is
    that place's, which the model found, not one the user gave: "a cab to go there" after a salon was found
    (Schema-Guided Dialogue). Not when the user's turn holds the address itself or its asking sentence ties the
    trip to a person ("my home is there")."""
    return _asks_about_a_place(asked, value, lambda sentence: bool(_GOES_THERE.search(sentence)))


#: Sharing a place with someone: "share the location 199 Aegean Way with Jonathan", "So that's sharing 16 Mint
#: Plaza with Douglas", "send the address ... to Keith".
#: Not a shared ride ("a shared ride for 2 to ...", "a ride share to ..."): its destination is the rider's.
_SHARING = re.compile(r"(?i)(?<!ride\s)\b(?:shar(?:e|es|ed|ing)\b(?!\s+(?:a\s+)?(?:ride|cab|taxi|car|seat)s?\b)"
                      r"|send(?:ing)?\s+(?:the\s+)?(?:location|address)\b)")


_SENTENCE_END = re.compile(r"[.!?\n]")


def offers_to_share(text: str, start: int, end: int) -> bool:
    """True when the model's question offers the value as the one to share: "Which address do you want me to share?
    57 North Milpitas Boulevard, KLIA International Airport or somewhere else?", "What address to be shared, 1047
    Lincoln Highway suite 101?". Why: the model offers what its search found (Schema-Guided Dialogue); the caller
    asks only for a value no earlier user turn gave, so a model repeating the user's own address in a question
    ("Could you confirm that you're sharing 1512 Locust Street with Amy?") still fails the gate."""
    left = text[max(0, start - _WINDOW):start]
    cuts = [m.end() for m in _CLAUSE_END.finditer(left)]
    before = left[cuts[-2] if len(cuts) > 1 else 0:]  # the sentence before the value's, and its own start
    after = _SENTENCE_END.search(text, end)
    return (bool(after) and after.group() == "?" and bool(_SHARING.search(before))
            and not _PERSONAL_BEFORE.search(before))


def names_no_owner(text: str, start: int) -> bool:
    """True when nothing in the sentence before the value ties it to a person ("my", "his", "your friend's house",
    "Tom lives"). Why: a value that is a place's by the dialogue around it (an earlier turn listed it, the user
    asked "Where is it?") is still someone's where the sentence says so: "a shared ride for 2 to 485 Castro
    Street" after the model found the restaurant there is the restaurant's address, "a ride to my friend's place at
    485 Castro Street" is not."""
    before = _clause_before(text, start)
    return not (_PERSONAL_BEFORE.search(before) or _LIVES.search(before))


def share_recipient(text: str, value: tuple[int, int], name: tuple[int, int]) -> bool:
    """True when the name at span `name` is whom the value at span `value`, a few words away, is shared with:
    "share the location 960 Moraga Road #1 to Keith", "share with Tyler the address ...". Why: the shared address
    locates its place (or the writer), not the recipient, so it links no given name to anyone (Schema-Guided
    Dialogue: the contacts' first names were errors beside every shared address)."""
    (first, first_end), (second, _) = sorted((value, name))
    gap = text[first_end:second]  # a few words: "... #1 to ", " the address "; never a clause about the name
    if len(gap) > 25 or _CLAUSE_END.search(gap) or _LIVES.search(gap) or _PERSONAL_BEFORE.search(gap):
        return False
    return (bool(_SHARING.search(_clause_before(text, first) + text[first:second]))
            and bool(re.search(r"(?i)\b(?:with|to)\s+$", text[:name[0]])))


#: The user sharing a found place's address in the words of the request: "share the address for this place with
#: Betty. So, the address that I want shared is ...", "can you just share their address with Denise, It's ...".
_SHARES_A_PLACE = re.compile(r"(?i)\b(?:share|send)\b[^.!?\n]{0,30}?\b(?:(?:their|its)\s+(?:address|location)|"
                             r"(?:address|location)\s+(?:of|for)\s+(?:this|that|the)\s+(?:place|" + _BUSINESS
                             + r")\b)")


def shares_a_place(turn: str, start: int) -> bool:
    """True when the user's turn, before the address at `start`, asks to share a place's address ("their address",
    "the address for this place") and nothing in the address's sentence ties it to a person. Why: the user then
    types the address of the place the model found (Schema-Guided Dialogue); "share my address" stays theirs."""
    return bool(_SHARES_A_PLACE.search(turn, max(0, start - _TURN_WINDOW), start)) and names_no_owner(turn, start)


def shares_it(text: str, start: int) -> bool:
    """True when the turn, before `start`, shares a place with someone ("To confirm, you'd like to share an address
    with Betty. This address is, ..."). Why: a messaging tool's "share location" sends the address of a place the
    model found (Schema-Guided Dialogue: 8 of 31 false pii errors); the caller asks it only for an address an
    earlier turn read out as a place's listing, so a user sharing an address of their own, never listed, still
    fails the gate."""
    return bool(_SHARING.search(text, max(0, start - _WINDOW), start))


#: Mailboxes that stand for "someone" in documentation and tests, on a domain nobody's mail goes to.
_PLACEHOLDER_MAILBOXES = frozenset({
    "john.doe", "jane.doe", "johndoe", "janedoe", "john_doe", "jane_doe", "john", "jane", "user", "username",
    "name", "email", "e-mail", "example", "test", "someone", "somebody", "you", "your.name", "yourname",
    "your_name", "your.email", "youremail", "your_email", "first.last", "firstname.lastname", "local-part",
    "localpart", "me", "foo", "bar", "admin", "support", "info", "contact", "hr", "manager", "customer", "sales",
    "noreply", "no-reply", "default", "assistant", "landlord", "boss", "friend", "colleague", "team", "office"})
#: Role accounts (RFC 2142's, and a sender's automatic mail): a function of an organisation, whoever reads it, on
#: any domain: `alerts@info6.citi.com`, `abuse@`, `noreply@`.
_ROLE_MAILBOXES = frozenset({
    "info", "marketing", "sales", "support", "abuse", "noc", "security", "postmaster", "hostmaster", "usenet",
    "news", "webmaster", "www", "uucp", "ftp", "noreply", "no-reply", "donotreply", "do-not-reply", "alerts",
    "alert", "notifications", "notification", "newsletter", "mailer-daemon", "bounce", "bounces"})
_PLACEHOLDER_DOMAINS = re.compile(r"(?i)(?:^|\.)(?:example\.(?:com|net|org|edu)|[^.]+\.(?:example|test|invalid)|"
                                  r"(?:your|my)?(?:domain|email|company)\.com)$")


#: The names documentation gives "some person": English, British and German stand-ins, not anyone's name.
_PLACEHOLDER_NAMES = frozenset({"john doe", "jane doe", "john q. public", "john q public", "richard roe",
                                "jane roe", "joe bloggs", "max mustermann", "erika mustermann"})


#: Addresses everybody knows and nobody lives at: fiction's (Sherlock Holmes's, the Simpsons', the Dursleys') and
#: the seats of public institutions, written in requests and tests as "some address".
_STOCK_ADDRESSES = frozenset({"221b baker street", "221b baker st", "742 evergreen terrace", "4 privet drive",
                              "12 grimmauld place", "1313 mockingbird lane", "31 spooner street",
                              "124 conch street", "1600 pennsylvania avenue", "1600 pennsylvania ave",
                              "1600 amphitheatre parkway", "1 infinite loop", "10 downing street"})


def _counting_run(digits: str) -> int:
    """How many digits from the start count up or down by one (`4567891` gives 6)."""
    if len(digits) < 2:
        return len(digits)
    step = int(digits[1]) - int(digits[0])
    if step not in (1, -1):
        return 1
    n = 2
    while n < len(digits) and int(digits[n]) - int(digits[n - 1]) == step:
        n += 1
    return n


def placeholder_value(entity_type: str, value: str) -> bool:
    """True for the stock values documentation uses for "some e-mail" or "some phone number": a placeholder
    mailbox (`john.doe`, `user`, `admin`...) on a domain reserved for examples or named "domain" (both at once:
    `jane.doe@example.com`, `example@domain.com`, `assistant@example.com`), or a role account on any domain
    (`alerts@`, `noreply@`, RFC 2142's `info@`, `abuse@`: an organisation's function, not a person); a phone
    number whose first six digits or more count up or down (`123-456-7890`, `+12345678900`, `456-7890`) or that
    repeats one digit (`000-000-0000`), which no numbering plan issues (not the North American numbers set aside
    for fiction, 555-0100 to 555-0199: like a realistic mailbox on a reserved domain, that is how test data plants
    a phone number without using anyone's); a street address whose house number counts up or down (`123 Main
    Street`, `456 Oak Avenue`, `321 Elm St`: with their towns, most of the false pii errors left on the real-data
    bench) or that everybody knows and nobody lives at (`221B Baker Street`, `1600 Pennsylvania Avenue`); or a
    stand-in name (`John Doe`, `Max Mustermann`).

    Why both parts for an e-mail: a realistic mailbox on a reserved domain (`m.holloway82@example.net`) is how
    test data, gate's own fixtures among them, plants personal data without using anyone's; it stays an error."""
    if entity_type == "EMAIL_ADDRESS":
        local, _, domain = value.strip("\"'<>()").rpartition("@")
        return local.lower() in _ROLE_MAILBOXES or (local.lower() in _PLACEHOLDER_MAILBOXES
                                                   and bool(_PLACEHOLDER_DOMAINS.search(domain.rstrip("."))))
    if entity_type == "PERSON":
        return " ".join(value.strip("\"'.,").lower().split()) in _PLACEHOLDER_NAMES
    if entity_type == "PHONE_NUMBER":
        digits = "".join(c for c in value if c.isdigit())
        national = [digits] + ([digits[1:]] if len(digits) == 11 and digits[0] == "1" else [])  # NANP's "+1"
        return any(_counting_run(d) >= 6 or re.fullmatch(r"(\d)\1{6,}", d) is not None for d in national)
    if entity_type == "ADDRESS":
        street = " ".join(value.strip("\"'.,").lower().split())
        number = re.match(r"(\d+)[a-z]?\s", street)
        return street in _STOCK_ADDRESSES or (number is not None and len(number.group(1)) >= 3
                                              and _counting_run(number.group(1)) == len(number.group(1)))
    return False
