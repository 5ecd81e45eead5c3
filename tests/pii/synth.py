"""Synthetic support-chat messages with planted PII, for tests and for the speed measurement.

Why synthetic: the tests must be deterministic and offline, and the measurement needs ground truth (which spans
are PII) to tell recall from noise. Messages look like the triage data `gate` guards: order ids, ticket ids, version
strings, file names, amounts and dates appear everywhere (they must NOT be flagged), and ~30 % of messages carry one
or two planted PII values whose spans are recorded. `SECRETS` / `PRIVATE_KEY` are fabricated credentials in the
current formats (none is live), shared by the secret, redaction and scrub tests.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

FIRST = ["Jane", "Miguel", "Aisha", "Tomasz", "Priya", "Lukas", "Chen", "Fatima", "Oliver", "Sofia", "Kwame",
         "Hannah", "Ravi", "Elena", "Mateo", "Yuki", "Noah", "Amara", "Liam", "Ingrid"]
LAST = ["Doe", "Garcia", "Khan", "Nowak", "Sharma", "Becker", "Wang", "Haddad", "Smith", "Rossi", "Mensah",
        "Schmidt", "Patel", "Ivanova", "Lopez", "Tanaka", "Brown", "Okafor", "Murphy", "Larsen"]
CITIES = ["Seattle", "Berlin", "Chicago", "Madrid", "Toronto", "Manchester", "Lyon", "Denver", "Dublin", "Austin"]
STREETS = ["Baker Street", "Main St.", "Oak Avenue", "Elm Road", "Maple Drive", "Pine Lane", "Market Street",
           "Cedar Blvd", "High Street", "Sunset Boulevard"]
PRODUCTS = ["CloudSync Pro", "the X200 router", "PayFlow", "the mobile app", "the web dashboard", "DataBridge",
            "the Acme thermostat", "InvoiceHub", "the billing portal", "StreamBox 4K"]
FILES = ["main.py", "config.yaml", "setup.py", "utils.py", "app.js", "index.html", "report.csv", "install.sh"]
DOMAINS = ["example.com", "mailbox.org", "acme-corp.net", "fastmail.co.uk", "contoso.io"]
CARDS = ["4111 1111 1111 1111", "5555-5555-5555-4444", "4012888888881881", "6011 1111 1111 1117"]
IBANS = ["GB82WEST12345698765432", "DE89370400440532013000", "FR1420041010050500013M02606", "NL91ABNA0417164300"]
PHONES = ["+1 415 555 2671", "(212) 867-5309", "+44 20 7946 0958", "+49 30 901820", "206-555-0143",
          "+1 (646) 555-3890", "020 7946 0321"]


@dataclass(frozen=True)
class Planted:
    """One planted PII value: its span in the message and the entity type a detector should report."""

    start: int
    end: int
    entity_type: str


def _clean_sentence(rng: random.Random) -> str:
    """A PII-free sentence full of the identifiers that naive detectors flag (ids, versions, files, dates)."""
    templates = [
        "My order ORD-{o} still shows as pending after {d} days.",
        "Ticket TCK-{t} was closed but the issue with {p} is not fixed.",
        "After updating to v{v} the app crashes when I open {f}.",
        "The invoice INV-{o} lists {n} seats instead of {m}, total ${a}.",
        "Error E{e} appears in the logs at {h}:{mi} every morning since {date}.",
        "I restarted {p} twice and cleared the cache but sync is stuck at {n}%.",
        "We are on build {b} and the export to {f} is missing column {m}.",
        "Please escalate, ticket TCK-{t} has been open since {date} and nobody replied.",
        "Running {f} with --retries {n} gives exit code {e} on version {v}.",
        "The refund for ORD-{o} of ${a} was promised on {date} but never arrived.",
        "Our team of {n} people uses {p} daily and the dashboard loads in {m} seconds.",
        "Can you check why {p} charges us twice for plan P{n}?",
    ]
    return rng.choice(templates).format(
        o=rng.randint(100000, 999999), t=rng.randint(10000, 99999), d=rng.randint(2, 30), p=rng.choice(PRODUCTS),
        v=f"{rng.randint(1, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 9)}", f=rng.choice(FILES),
        n=rng.randint(2, 99), m=rng.randint(2, 99), a=f"{rng.randint(5, 900)}.{rng.randint(0, 99):02d}",
        e=rng.randint(1000, 9999), h=rng.randint(0, 23), mi=f"{rng.randint(0, 59):02d}",
        date=f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}", b=rng.randint(20240101, 20241231),
    )


def _pii_sentence(rng: random.Random) -> tuple[str, list[tuple[str, str]]]:
    """A sentence with one PII value; returns the template text with `{}` and (value, entity_type) pairs."""
    first, last = rng.choice(FIRST), rng.choice(LAST)
    kind = rng.choice(["email", "phone", "card", "ip", "ssn", "iban", "url", "person", "address", "city"])
    if kind == "email":
        value = f"{first.lower()}.{last.lower()}{rng.randint(1, 99)}@{rng.choice(DOMAINS)}"
        return rng.choice(["You can reach me at {} if you need more details.",
                           "Please send the receipt to {} instead."]), [(value, "EMAIL_ADDRESS")]
    if kind == "phone":
        return rng.choice(["Call me back on {} after 5pm.", "My phone number is {} for the courier."]), [
            (rng.choice(PHONES), "PHONE_NUMBER")]
    if kind == "card":
        return rng.choice(["I paid with card {} and it was declined.", "Charge it to {} expiry 09/27."]), [
            (rng.choice(CARDS), "CREDIT_CARD")]
    if kind == "ip":
        value = f"{rng.randint(11, 220)}.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"
        return "Our office IP is {} and it gets blocked by the firewall.", [(value, "IP_ADDRESS")]
    if kind == "ssn":
        value = f"{rng.randint(132, 665)}-{rng.randint(10, 99)}-{rng.randint(1000, 9999)}"
        return "For the tax form my SSN is {}.", [(value, "US_SSN")]
    if kind == "iban":
        return "Please refund to IBAN {} as soon as possible.", [(rng.choice(IBANS), "IBAN_CODE")]
    if kind == "url":
        # a personal page is on a domain someone owns: example.com is reserved (RFC 2606) and no finding
        owned = [d for d in DOMAINS if d != "example.com"]
        value = f"https://{rng.choice(['shop', 'portal', 'my'])}.{rng.choice(owned)}/u/{first.lower()}{last}"
        return "My profile page is {} if that helps.", [(value, "URL")]
    if kind == "person":
        return rng.choice(["This is {} from the finance team.", "My colleague {} opened the first ticket.",
                           "Thanks, {} will follow up tomorrow."]), [(f"{first} {last}", "PERSON")]
    if kind == "address":
        value = f"{rng.randint(2, 2400)} {rng.choice(STREETS)}"
        return "Ship the replacement to {} please.", [(value, "ADDRESS")]
    return "I moved to {} last month and the shipping address is outdated.", [(rng.choice(CITIES), "LOCATION")]


def make_messages(n: int = 2000, seed: int = 7, pii_rate: float = 0.3) -> list[tuple[str, list[Planted]]]:
    """Build `n` ~300-character messages; a fraction `pii_rate` carries one or two planted PII sentences."""
    rng = random.Random(seed)
    out: list[tuple[str, list[Planted]]] = []
    for _ in range(n):
        planted: list[Planted] = []
        has_pii = rng.random() < pii_rate
        n_pii = rng.choice([1, 1, 2]) if has_pii else 0
        pii_slots = set(rng.sample(range(3), n_pii))
        text = rng.choice(["Hi, ", "Hello support, ", "", "Good morning. "])
        slot = 0
        while len(text) < 280 or slot <= max(pii_slots, default=-1):
            if slot in pii_slots:
                template, values = _pii_sentence(rng)
                value, entity = values[0]
                before, after = template.split("{}")
                start = len(text) + len(before)
                planted.append(Planted(start, start + len(value), entity))
                text += before + value + after + " "
            else:
                text += _clean_sentence(rng) + " "
            slot += 1
        out.append((text.rstrip(), planted))
    return out


#: (text with the secret, the secret, expected kind). Values are fabricated; none is a live credential.
SECRETS = [
    ("here is my key sk-proj-AbCdEf1234567890GhIjKlMnOpQrStUvWxYz_0123456789abcd please help",
     "sk-proj-AbCdEf1234567890GhIjKlMnOpQrStUvWxYz_0123456789abcd", "openai_api_key"),
    ("old key sk-4f9TxQ2mLp8RzV1nYc6WbK3jHd7sAe0Gu5oFi2XqZt9PlMn in the script",
     "sk-4f9TxQ2mLp8RzV1nYc6WbK3jHd7sAe0Gu5oFi2XqZt9PlMn", "openai_api_key"),
    ("token ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789 leaked in the log",
     "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789", "github_token"),
    ("oauth gho_16C7e42F292c6912E7710c838347Ae178B4a works", "gho_16C7e42F292c6912E7710c838347Ae178B4a",
     "github_token"),
    ("use github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abc now",
     "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abc",
     "github_pat"),
    ("slack bot xoxb-2456789012-2456789012345-AbCdEfGhIjKlMnOpQrStUvWx in config",
     "xoxb-2456789012-2456789012345-AbCdEfGhIjKlMnOpQrStUvWx", "slack_token"),
    ("user token xoxp-1234567890-0987654321-1122334455-abcdef0123456789abcdef0123456789",
     "xoxp-1234567890-0987654321-1122334455-abcdef0123456789abcdef0123456789", "slack_token"),
    ("AWS key AKIAIOSFODNN7EXAMPLE for the bucket", "AKIAIOSFODNN7EXAMPLE", "aws_access_key_id"),
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
     "aws_secret_access_key"),
    ("jwt eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIn0."
     "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c rest",
     "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIn0."
     "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c", "jwt"),
    ('db config: password = "Tr0ub4dor&3" for prod', "Tr0ub4dor&3", "password_assignment"),
    ("api_key: 9f8e7d6c5b4a39281706f5e4d3c2b1a0 in the env file", "9f8e7d6c5b4a39281706f5e4d3c2b1a0",
     "api_key_assignment"),
    ("client_secret=Zx8Kq2Lm9Np4Rs7Tv1Wy in the yaml", "Zx8Kq2Lm9Np4Rs7Tv1Wy", "api_key_assignment"),
    ("my password is Hunter2 if you need to log in", "Hunter2", "password_phrase"),
    ("hf token hf_abcdefghijklmnopqrstuvwxyzABCDEFGH for the hub", "hf_abcdefghijklmnopqrstuvwxyzABCDEFGH",
     "huggingface_token"),
    ("stripe sk_live_4eC39HqLyjWDarjtT1zdp7dc charge", "sk_live_4eC39HqLyjWDarjtT1zdp7dc", "stripe_key"),
    ("google AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q key", "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
     "google_api_key"),
]

PRIVATE_KEY = ("-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n"
               "VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK\n-----END RSA PRIVATE KEY-----")
