"""Secret detection for chat text: detect-secrets plugins line by line, plus our own regexes for current key formats.

Why both:

* detect-secrets (1.5.0, last release 2024-05) knows AWS, GitHub classic, Slack, Stripe, JWT, private-key
  headers, `password = "..."` in quotes, and quoted high-entropy strings. Its `scan_line` is an ad-hoc mode that
  turns every word into a "Base64 High Entropy String" (80k junk hits on 2,000 messages), so each plugin's
  `analyze_line` is called instead (entropy limits and quoting apply), and the heuristic filters detect-secrets
  applies in its own scans (UUIDs, sequences, templates like `${TOKEN}`, `pragma: allowlist secret`) are applied
  to its results.
* It misses OpenAI project keys (`sk-proj-...`, 0/29 measured), fine-grained GitHub PATs (`github_pat_`),
  Hugging Face and Anthropic tokens, unquoted `api_key: ...` and "my password is hunter2". Our patterns cover
  those, run on the whole text (so a private-key block spanning lines is one hit).

Toy values are not secrets (Code Alpaca): a value that restates its slot's name (`'mypassword'`,
`password == 'password'`), carries a slot word (`'your_api_key_here'`) or is a code expression, and in an
assignment a one-case word with digits under `TOY_BITS` bits (`'qwerty'`, `"admin123"`), and a value typed as
counting runs (`123412`, `12345-ABCDE`). Key formats are never judged so; a password told in prose ("my password is
hunter2") still is one. Two high-entropy results are no secret by construction: a "base64" string that mixes the
standard and the URL-safe alphabets (a model id `owner/name-with-dashes`), and the digest of empty input.

A `SecretHit` is offsets and a kind, never the secret itself.
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from gate.pii.config import SecretConfig, require


@dataclass(frozen=True)
class SecretHit:
    """One secret: where it is (character offsets in the text), what kind, which detector. Never the value."""

    kind: str
    start: int
    end: int
    detector: str

    @property
    def entity_type(self) -> str:
        """Scrub operators and reports group every secret kind under one entity type."""
        return "SECRET"

    @property
    def label(self) -> str:
        """The kind, which redaction uses to pick a safe form (e.g. key blocks show only their header)."""
        return self.kind


# ---------------------------------------------------------------------------------------------------- own patterns

_B = r"(?<![A-Za-z0-9_\-])"  # not glued to a longer token on the left
_E = r"(?![A-Za-z0-9_\-])"  # nor on the right
_KEY_NAME = (r"api[_\-]?key|apikey|secret[_\-]?key|client[_\-]?secret|access[_\-]?token|auth[_\-]?token|"
             r"bearer[_\-]?token|private[_\-]?key|secret|token")
_ASSIGN = r"[\"']?\s*(?:=>|:=|[:=])\s*[\"']?"

#: (kind, regex, group holding the secret). Order matters for ties: earlier = more specific kind kept.
OWN_PATTERNS: tuple[tuple[str, re.Pattern[str], int], ...] = (
    ("private_key", re.compile(
        r"-----BEGIN (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----"
        r"(?:.{0,16000}?-----END (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----)?", re.DOTALL), 0),
    ("openai_api_key", re.compile(_B + r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{20,}" + _E), 0),
    ("anthropic_api_key", re.compile(_B + r"sk-ant-[a-z]{3,8}\d{2}-[A-Za-z0-9_\-]{20,}" + _E), 0),
    ("openai_api_key", re.compile(_B + r"sk-[A-Za-z0-9]{32,}" + _E), 0),
    ("github_token", re.compile(_B + r"(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,255}" + _E), 0),
    ("github_pat", re.compile(_B + r"github_pat_[A-Za-z0-9_]{22,255}" + _E), 0),
    ("gitlab_token", re.compile(_B + r"glpat-[A-Za-z0-9_\-]{20,}" + _E), 0),
    ("slack_token", re.compile(_B + r"xox[abprse]-(?:[A-Za-z0-9]+-){1,5}[A-Za-z0-9]+" + _E), 0),
    ("slack_webhook", re.compile(r"https://hooks\.slack\.com/services/T[A-Z0-9]+/B[A-Z0-9]+/[A-Za-z0-9]+"), 0),
    ("huggingface_token", re.compile(_B + r"hf_[A-Za-z0-9]{30,}" + _E), 0),
    ("google_api_key", re.compile(_B + r"AIza[0-9A-Za-z_\-]{35}" + _E), 0),
    ("stripe_key", re.compile(_B + r"(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{20,}" + _E), 0),
    ("aws_access_key_id", re.compile(
        r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA|AIDA|AROA|AGPA|ANPA|ANVA|APKA)[A-Z0-9]{16}(?![A-Z0-9])"), 0),
    ("aws_secret_access_key", re.compile(
        r"(?i)aws.{0,30}?(?:secret|private).{0,30}?[\"'=:\s]\s*[\"']?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"), 1),
    ("jwt", re.compile(_B + r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*"), 0),
    ("password_assignment", re.compile(
        r"(?i)\b(?:password|passwd|pwd|passphrase|db_pass(?:word)?)\b" + _ASSIGN + r"([^\s\"',;]{4,})"), 1),
    ("api_key_assignment", re.compile(r"(?i)\b(?:" + _KEY_NAME + r")\b" + _ASSIGN + r"([^\s\"',;]{8,})"), 1),
    ("password_phrase", re.compile(
        r"(?i)\b(?:password|passcode|passwd|pwd|pin)\s+(?:is|was|will be|=)\s*:?\s*[\"']?([^\s\"',;]{4,})"), 1),
)

#: Values after `password =` / `api_key:` that are placeholders or prose, not secrets.
_PLACEHOLDER_WORDS = frozenset({
    "null", "none", "nil", "true", "false", "undefined", "empty", "changeme", "password", "secret", "token",
    "redacted", "hidden", "required", "optional", "incorrect", "wrong", "invalid", "expired", "reset", "missing",
    "correct", "right", "same", "different", "blank", "set", "unset", "here", "example", "placeholder", "string",
    "your_api_key", "your-api-key", "xxxxxxxx", "not", "too", "being", "still", "also", "now", "stored",
})
_TEMPLATED = re.compile(r"^(?:[<{\[$%(]|\*{3,}|x{4,}$|\.{3})|(?:getenv|environ|process\.env|\{\{)", re.IGNORECASE)


#: Words that mark a value as a slot to fill, not a value: `your_api_key_here`, `<insert token>`, `sample-key`.
_SLOT_WORDS = frozenset({"your", "yours", "here", "example", "sample", "dummy", "fake", "placeholder", "insert",
                         "replace", "enter", "todo", "fixme", "xxx", "xxxx"})
#: The names secrets go by; a value that restates one (`'mypassword'`, `password == 'password'`,
#: `SECRET_KEY = 'your_secret_key'`) names the slot it fills instead of filling it.
_SECRET_NAMES = re.compile(r"pass(?:word|wd|phrase)?|secret|api_?key|apikey|token|credential")
#: Keyboard and counting runs: a value made only of such runs ("abcdef123", "qwerty123") is typed, not drawn.
_RUNS = ("abcdefghijklmnopqrstuvwxyz", "0123456789", "qwertyuiop", "asdfghjkl", "zxcvbnm")
_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


#: Leetspeak a restated name hides behind: "P@ssw0rd!" is "password" (the whole value; "Sup3rS3cret" is chosen).
_LEET = str.maketrans({"@": "a", "4": "a", "0": "o", "1": "i", "3": "e", "$": "s", "5": "s", "7": "t"})
#: The counting sequences, digits read round (`1234567890`), for `_typed_runs`.
_SEQS = ("abcdefghijklmnopqrstuvwxyz", "01234567890", "qwertyuiop", "asdfghjkl", "zxcvbnm")


def _typed_runs(v: str) -> bool:
    """True when the value's letters and digits are a few counting or keyboard runs typed one after another:
    `123123`, `123412`, `12341234`, `12345-ABCDE`, `A1234567B` (a format example), `1234567890`. Each stretch is
    the longest piece of a sequence that starts there; a drawn value breaks into pieces of one or two characters,
    a typed one into pieces of three on average or more (a 16-character random key passes this with odds far
    below one in a million)."""
    chars = re.sub(r"[^a-z0-9]", "", v.lower())
    if len(chars) < 6:
        return False
    pieces, i = 0, 0
    while i < len(chars):
        longest = max(_longest_run(chars, i, seq) for seq in _SEQS)
        i += max(1, longest)
        pieces += 1
    return pieces * 3 <= len(chars)


def _longest_run(chars: str, i: int, seq: str) -> int:
    j = seq.find(chars[i])
    if j < 0:
        return 0
    n = 1
    while i + n < len(chars) and j + n < len(seq) and chars[i + n] == seq[j + n]:
        n += 1
    return n


def _is_toy(value: str) -> bool:
    """True for a value that names or marks its slot: it restates a secret's name ("mypassword", "myPass",
    "your_secret_key", "password123", "P@ssw0rd!"), or has a slot word ("your_api_key_here", "sample-token"), or
    is a code expression rather than a literal ("login()", "os.getenv(...)"), or is only keyboard and counting
    runs ("abcdef123", "123412", "12345-ABCDE"). Real keys and chosen passwords have none of
    these; toy values in tutorials, code answers and function-call examples have them all the time (Code Alpaca,
    BFCL)."""
    v = value.strip("\"'`.,;:")
    if "(" in v or v.endswith(")"):
        return True
    folded = re.sub(r"[^a-z0-9]", "", v.lower())
    if _SECRET_NAMES.search(folded) or _SECRET_NAMES.fullmatch(re.sub(r"[^a-z]", "", v.lower().translate(_LEET))):
        return True
    runs = re.findall(r"[a-z]+|\d+", v.lower())
    if v.isalnum() and runs and all(len(r) >= 3 and any(r in seq for seq in _RUNS) for r in runs):
        return True  # "abcdef123", "qwerty"
    if _typed_runs(v):
        return True
    return any(w.lower() in _SLOT_WORDS for w in _WORDS.findall(v))


def _not_one_base64(value: str) -> bool:
    """True for a string that mixes the two base64 alphabets: `/` or `+` (standard) with `-` or `_` (URL-safe).
    One encoding uses one alphabet, so such a string is no encoded key; it is a path or an id such as a Hugging
    Face model `laion/CLIP-convnext_base_w-laion2B-s13B-b82K`, which detect-secrets' base64 charset (both
    alphabets at once) reads as high entropy."""
    return bool(re.search(r"[/+]", value)) and bool(re.search(r"[-_]", value))


@functools.lru_cache(maxsize=1)
def _empty_digests() -> frozenset[str]:
    """The digests of empty input (MD5, SHA-1, SHA-2): constants printed in docs and tests, not secrets."""
    import hashlib

    return frozenset(getattr(hashlib, n)(b"").hexdigest() for n in ("md5", "sha1", "sha224", "sha256", "sha384",
                                                                     "sha512"))


#: Below this many bits (characters x Shannon entropy per character), a word-and-digits value is a toy one:
#: "qwerty", "abc123", "admin123" (about 15-24 bits; any API key or token carries more than 100).
TOY_BITS = 25.0


def _low_entropy_word(value: str) -> bool:
    """True for a dictionary-like value of little entropy: one-case letters with optional trailing digits and
    under `TOY_BITS` bits ("qwerty", "admin123"). "Tr0ub4dor&3" and "sunshine2024" are above or of another shape."""
    import math
    from collections import Counter

    v = value.strip("\"'`.,;:")
    if not re.fullmatch(r"(?:[a-z]+|[A-Z]+)\d*", v):
        return False
    n = len(v)
    bits = -sum(c / n * math.log2(c / n) for c in Counter(v).values()) * n
    return bits < TOY_BITS


def _example_key(v: str) -> bool:
    """A value given for an API key that no key service draws: a short number (`1231289312`) or a word and a
    number (`gorilla-123`). Said of keys only: `sunshine2024` is a realistic password."""
    return (v.isdigit() and len(v) < 16) or bool(re.fullmatch(r"[A-Za-z]+[-_.]?\d{1,6}", v))


def _is_placeholder(value: str, kind: str) -> bool:
    """True for values that only look like an assignment target: templates, env lookups, prose words, toy values
    that restate or mark their slot (`_is_toy`)."""
    v = value.strip("\"'.,;:)")
    if len(v) < 4 or _TEMPLATED.search(v) or v.lower() in _PLACEHOLDER_WORDS or len(set(v.lower())) <= 2:
        return True
    if _is_toy(value) or (kind.endswith("_assignment") and _low_entropy_word(value)):
        return True
    if kind == "password_phrase":
        # "my password is incorrect": prose. Keep only values that look chosen: a digit, a symbol, or mixed case.
        return v.isalpha() and (v.islower() or v.isupper() or v.istitle())
    if kind == "api_key_assignment":
        # "token: expired yesterday" / "secret: santa": a key value has a digit or is long and mixed. Keys are
        # drawn from letters and digits: a short number (`1231289312`) or a word and a number (`gorilla-123`) is
        # an example value, not a key
        if _example_key(v):
            return True
        return not (any(c.isdigit() for c in v) or (len(v) >= 16 and not v.isalpha()))
    return False


def _own_hits(text: str) -> list[SecretHit]:
    """Our regexes over the whole text (multi-line key blocks stay one hit)."""
    hits = []
    for kind, pattern, group in OWN_PATTERNS:
        for m in pattern.finditer(text):
            start, end = m.span(group)
            if start < 0 or end <= start:
                continue
            # "password = ..." also reads as a phrase; judged as the assignment it is (toy values in code)
            as_kind = "password_assignment" if kind == "password_phrase" and "=" in text[m.start():start] else kind
            if group and _is_placeholder(text[start:end], as_kind):
                continue
            hits.append(SecretHit(kind, start, end, f"gate:{kind}"))
    return hits


# ------------------------------------------------------------------------------------------------- detect-secrets

def _slug(secret_type: str) -> str:
    """detect-secrets' display name → a kind: "Base64 High Entropy String" → "base64_high_entropy_string"."""
    return re.sub(r"[^a-z0-9]+", "_", secret_type.lower()).strip("_")


@contextlib.contextmanager
def _ds_plugins(config: SecretConfig) -> Iterator[list[Any]]:
    """detect-secrets plugin instances for `config`, inside a `transient_settings` block.

    The block also guarantees detect-secrets' verification filter is off, so no plugin's `verify()` (which calls
    the Slack/Stripe/AWS... APIs over the network) can run, whatever the process-wide settings are.
    """
    require("detect_secrets", "detect-secrets")
    from detect_secrets.settings import get_plugins, transient_settings

    used: list[dict[str, Any]] = []
    for name in config.plugins:
        entry: dict[str, Any] = {"name": name}
        if name == "Base64HighEntropyString":
            entry["limit"] = config.base64_limit
        elif name == "HexHighEntropyString":
            entry["limit"] = config.hex_limit
        used.append(entry)
    with transient_settings({"plugins_used": used, "filters_used": []}):
        yield list(get_plugins())


@functools.lru_cache(maxsize=1)
def _ds_filters() -> tuple[Any, ...]:
    """detect-secrets' heuristic filters, called directly (its scan machinery is not used)."""
    from detect_secrets.filters import heuristic

    names = ("is_sequential_string", "is_potential_uuid", "is_templated_secret", "is_prefixed_with_dollar_sign",
             "is_not_alphanumeric_string")
    return tuple(getattr(heuristic, n) for n in names if hasattr(heuristic, n))


def _ds_filtered(secret: str, line: str, plugin: Any) -> bool:
    """True when detect-secrets' own heuristics would drop this result in a normal detect-secrets scan."""
    from detect_secrets.filters import heuristic

    for fn in _ds_filters():
        if fn(secret):
            return True
    if getattr(heuristic, "is_likely_id_string", None) and heuristic.is_likely_id_string(secret, line, plugin):
        return True
    if _is_toy(secret):
        return True  # `password == 'password'`, `API_KEY = "YOUR_API_KEY"`, `'abcdef123'`: a slot, not a secret
    kind = type(plugin).__name__
    if kind == "Base64HighEntropyString" and _not_one_base64(secret):
        return True
    if secret.lower() in _empty_digests():
        return True
    if kind == "KeywordDetector" and _example_key(secret) and re.search(
            r"(?i)\b(?:" + _KEY_NAME + r")\b" + _ASSIGN + re.escape(secret), line):
        return True  # `api_key="gorilla-123"`, as the own api_key_assignment pattern judges it
    if type(plugin).__name__ == "KeywordDetector" and heuristic.is_indirect_reference(line):
        return True
    if type(plugin).__name__ == "KeywordDetector" and _low_entropy_word(secret):
        return True  # `password = "qwerty"`: a toy value
    return "allowlist secret" in line  # detect-secrets' inline pragma: "pragma: allowlist secret"


def _windows(text: str, size: int) -> Iterator[tuple[int, str]]:
    """Lines of `text` with offsets; lines longer than `size` as overlapping windows cut at spaces.

    Why: detect-secrets' keyword regexes backtrack; a 1 MB single-line text would take minutes. Secrets are far
    shorter than the 200-character overlap (private-key blocks are found by our own pattern on the whole text).
    """
    pos = 0
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        if len(body) <= size:
            yield pos, body
        else:
            start = 0
            while start < len(body):
                end = min(len(body), start + size)
                if end < len(body):
                    cut = body.rfind(" ", start + size // 2, end)
                    end = cut if cut > start else end
                yield pos + start, body[start:end]
                if end >= len(body):
                    break
                start = max(start + 1, end - 200)
        pos += len(line)


def _ds_hits(text: str, plugins: Sequence[Any], config: SecretConfig) -> list[SecretHit]:
    """Each plugin's `analyze_line` on each line (never `scan_line`), mapped back to offsets in `text`."""
    from detect_secrets.util.code_snippet import get_code_snippet

    hits = []
    for offset, line in _windows(text, config.max_line_chars):
        if len(line) < 8:
            continue
        context = get_code_snippet([line], 1)
        for plugin in plugins:
            for found in plugin.analyze_line(filename="chat.txt", line=line, line_number=1, context=context):
                secret = found.secret_value
                if not secret or _ds_filtered(secret, line, plugin):
                    continue
                kind = _slug(found.type)
                at = line.find(secret)
                while at >= 0:
                    hits.append(SecretHit(kind, offset + at, offset + at + len(secret),
                                          f"detect-secrets:{type(plugin).__name__}"))
                    at = line.find(secret, at + 1)
    return hits


# ------------------------------------------------------------------------------------------------------------ API

def _merge(hits: list[SecretHit]) -> list[SecretHit]:
    """Drop hits inside a longer (or equal, earlier-listed) hit; sort by position. Own patterns list first."""
    ordered = sorted(enumerate(hits), key=lambda p: (p[1].start, -(p[1].end - p[1].start), p[0]))
    kept: list[SecretHit] = []
    for _, h in ordered:
        if any(k.start <= h.start and h.end <= k.end for k in kept):
            continue
        kept.append(h)
    return sorted(set(kept), key=lambda h: (h.start, h.end, h.kind, h.detector))


def _scan_one(text: str, plugins: Sequence[Any], config: SecretConfig) -> list[SecretHit]:
    """All hits of one text, merged."""
    if not text:
        return []
    hits = _own_hits(text) if config.own_patterns else []
    if plugins:
        hits += _ds_hits(text, plugins, config)
    return _merge(hits)


def scan_secrets_texts(texts: Sequence[str], config: SecretConfig | None = None) -> list[list[SecretHit]]:
    """Scan many texts (identical texts once); per text, its secrets sorted by position."""
    config = config or SecretConfig()
    unique: dict[str, list[SecretHit]] = dict.fromkeys(texts, [])
    with contextlib.ExitStack() as stack:
        plugins = stack.enter_context(_ds_plugins(config)) if config.detect_secrets and config.plugins else []
        for text in unique:
            unique[text] = _scan_one(text, plugins, config)
    return [list(unique[t]) for t in texts]


def scan_secrets(text: str, config: SecretConfig | None = None) -> list[SecretHit]:
    """Scan one text. For many texts use `scan_secrets_texts` (the plugin set-up is paid once per call)."""
    return scan_secrets_texts([text], config)[0]
