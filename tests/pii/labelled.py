"""A labelled corpus of support-chat messages: Faker values planted in sentences, with every value's span known.

Why generated: a leak test needs ground truth that nobody here picked to suit the masker. Faker (seeded, six
locales) supplies names with accents and hyphens, street addresses with and without house numbers, cities,
countries, companies, phone numbers in national formats, IBANs, e-mails, URLs, dates of birth, SSNs, cards and
IP addresses; the templates put them where support text has them (greetings, signatures, "ship to", "call me
on"). The corpus is for asserting that no labelled value ever appears in an artifact, so it labels every value,
whether or not the PII check is expected to find it.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

LOCALES = ("en_US", "en_GB", "de_DE", "fr_FR", "es_ES", "it_IT")

#: {key} → (label, Faker call); a template names the keys it plants
_VALUES = {
    "name": ("PERSON", lambda f: f.name()),
    "first": ("PERSON", lambda f: f.first_name()),
    "last": ("PERSON", lambda f: f.last_name()),
    "street": ("ADDRESS", lambda f: f.street_address()),
    "address": ("ADDRESS", lambda f: " ".join(f.address().split())),
    "city": ("LOCATION", lambda f: f.city()),
    "country": ("LOCATION", lambda f: f.country()),
    "company": ("ORGANIZATION", lambda f: f.company()),
    "phone": ("PHONE_NUMBER", lambda f: f.phone_number()),
    "iban": ("IBAN_CODE", lambda f: f.iban()),
    "email": ("EMAIL_ADDRESS", lambda f: f.email()),
    "url": ("URL", lambda f: f.url()),
    "dob": ("DATE_OF_BIRTH", lambda f: f.date_of_birth().isoformat()),
    "ssn": ("US_SSN", lambda f: f.ssn()),
    "card": ("CREDIT_CARD", lambda f: f.credit_card_number()),
    "ip": ("IP_ADDRESS", lambda f: f.ipv4_public()),
    "postcode": ("POSTCODE", lambda f: f.postcode()),
}

TEMPLATES = (
    "Hi, this is {name} from {company}. Please send the new invoice to {email}.",
    "I moved to {city} last month, the shipping address should now be {address}.",
    "Please ship the replacement router to {street}, {postcode} {city}, {country}.",
    "You can reach me on {phone} after five, or ask for {first} at the front desk.",
    "For the refund please use IBAN {iban}, the account holder is {name}.",
    "My date of birth is {dob} and the SSN on file is {ssn}, can you verify my account?",
    "The card {card} was charged twice for the same order, my name on the card is {name}.",
    "Our office IP {ip} gets blocked by your firewall since Tuesday, our admin is {name}.",
    "The docs at {url} still show the old pricing, {first} from {company} noticed it first.",
    "Best regards, {name} | {company} | {phone} | {email}",
    "Mr {last} asked me to forward this: the export from {city} fails every night.",
    "Can {first} {last} call me back? I am usually at {street} in {city} until noon.",
    "We are a small team at {company} in {country} and the dashboard is very slow for us.",
    "Thanks {first}! The ticket can be closed. Sent from {city}, {country}.",
    "Please update the billing contact to {name} ({email}), postcode {postcode}.",
    "Our accountant {name} will send the signed contract from {address} by post.",
)


@dataclass
class Labelled:
    """One message and the values planted in it: (start, end, label) spans."""

    text: str
    values: list[tuple[int, int, str]] = field(default_factory=list)

    def strings(self) -> list[str]:
        return [self.text[s:e] for s, e, _ in self.values]


def make_labelled(n: int = 1200, seed: int = 15) -> list[Labelled]:
    """`n` messages, each from one template with fresh values from a random locale; the same for a seed in every
    process (a corpus that changed with PYTHONHASHSEED made a leak test pass or fail by chance)."""
    from faker import Faker

    rng = random.Random(seed)
    fakers = {}
    for i, loc in enumerate(LOCALES):
        f = Faker(loc)
        f.seed_instance(seed * 100 + i)
        for provider in f.providers:  # it_IT builds its city list from a set: its order changed with the hash seed
            if isinstance(getattr(provider, "cities", None), (list, tuple)):
                provider.cities = sorted(provider.cities)
        fakers[loc] = f
    out = []
    for _ in range(n):
        f = fakers[rng.choice(LOCALES)]
        template = rng.choice(TEMPLATES)
        text, values, pos = "", [], 0
        for m in re.finditer(r"\{(\w+)\}", template):
            text += template[pos:m.start()]
            label, make = _VALUES[m.group(1)]
            value = str(make(f))
            values.append((len(text), len(text) + len(value), label))
            text += value
            pos = m.end()
        text += template[pos:]
        out.append(Labelled(text, values))
    return out


def leaked(values: set[str], artifact: str) -> list[str]:
    """The labelled values that occur in `artifact` as a whole token (not inside a longer word or number)."""
    # `in` first (a C substring search): a regex per value over a megabyte report took minutes
    return sorted(v for v in values
                  if v in artifact and re.search(r"(?<![\w])" + re.escape(v) + r"(?![\w])", artifact))
