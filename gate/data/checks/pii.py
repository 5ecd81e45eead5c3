"""`pii` and `secret`: possible personal data and credentials in any message of a row.

PII comes from presidio-analyzer with an offline NLP engine (pattern recognisers always, the spaCy NER model
for names and places when it is installed); secrets from detect-secrets' plugins called one by one plus
patterns for current key formats (see `gate.data.pii_scan` for what is read). A finding says "possible"
PII with entity type, score, field and character span; the value never leaves the worker: the snippet is
redacted.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gate.contract import Contract
from gate.contract.file_schema import ROLES, check_options
from gate.data.base import Batch, Check, CheckResult, Finding
from gate.data.pii_scan import RowScanner
from gate.data.scrub_rules import ScrubRules
from gate.pii.config import QUASI_ENTITIES, PiiConfig, SecretConfig

_PII, _SECRET = PiiConfig(), SecretConfig()  # the defaults the options schemas document (stdlib-only module)
#: The message of a value read out from a place's listing (`PiiCheck._stand_in`).
_LISTING = ", a place's address or number the assistant read out from a listing,"
#: ... and of a place's address the model gives for the user's ride "there" (`gate.pii.context.goes_there`).
_THERE = ", the address of a place found earlier, where the user asked to go,"
#: ... and of a place the model found for a user who asked for one by its kind (`searches_for_a_place`).
_FOUND = ", the address or number of a place the user searched for, as the assistant found it,"


@dataclass
class _Seen:
    """What the earlier turns of one row said (values as `_listed_key` writes them): the places' listings the model
    read out, those of them the user asked to go to ("a cab to go there"), and the values the user's turns gave."""

    listed: set[str] = field(default_factory=set)
    there: set[str] = field(default_factory=set)
    given: set[str] = field(default_factory=set)
    going: bool = False  # a user turn asked for a ride "there", to the place found (`wants_to_go_there`)
    searched: bool = False  # a user turn asked for a place by its kind (`searches_for_a_place`)
    own_place: bool = False  # a user turn named someone's place (`names_own_place`)
    ride: bool = False  # a user turn asked for a ride (`asks_for_a_ride`)


def _listed_key(value: str) -> str:
    """A listed value as a later turn repeats it: case, spacing and edge punctuation aside."""
    return " ".join(value.strip(" .,;:").lower().split())


#: What a place's listing gives: its street address and phone number (`gate.pii.context.listed_contact`).
_LISTED_TYPES = frozenset({"ADDRESS", "PHONE_NUMBER"})


def _near_spans(spans: list[tuple[int, int, str]]) -> Callable[[tuple[int, int]], list[tuple[int, int, str]]]:
    """A lookup of the spans that overlap a window (lo, hi), in their order: sorted once by start, then a binary
    search bounded by the longest span, so a field's many snippets do not each read all its spans."""
    ordered = sorted(range(len(spans)), key=lambda k: spans[k][0])
    starts = [spans[k][0] for k in ordered]
    longest = max((e - s for s, e, _ in spans), default=0)

    def near(window: tuple[int, int]) -> list[tuple[int, int, str]]:
        lo, hi = window
        ks = ordered[bisect.bisect_left(starts, lo - longest):bisect.bisect_left(starts, hi)]
        return [spans[k] for k in sorted(ks) if spans[k][0] < hi and spans[k][1] > lo]

    return near


def _recall(fields: list[tuple[str, int, int]], config: Any) -> list[list[tuple[int, int, str]]]:
    """Per (text, lo, hi): the recall scan (`gate.pii.recall_spans_texts`) of `text[lo:hi]`, in text offsets.

    Why: a finding's snippet shows the text around it, through the allowlist of `gate.pii.mask_context`, which
    shows a missed name only when every word of it is a common word ("Will White"); the NER model's spans mask
    those too. Nothing at all (no model loaded, no scan) when NER is off (`use_ner: false`) or not installed: the
    allowlist alone then masks the context. One scan per field covers the windows of all its findings.
    """
    if not fields:
        return []
    try:
        from gate.pii import ner_available, recall_spans_texts

        if config is None or not ner_available(config):
            return [[] for _ in fields]
        found = recall_spans_texts([t[lo:hi] for t, lo, hi in fields], config)
    except ImportError:  # presidio not installed (a secret-only machine): the allowlist alone
        return [[] for _ in fields]
    return [[(lo + s, lo + e, lab) for s, e, lab in spans] for (_, lo, _), spans in zip(fields, found, strict=True)]


def _recall_config(contract: Contract, scanner: RowScanner) -> Any | None:
    """The PII configuration the recall scan follows: the `pii` check's own, also for the `secret` check (whose
    snippets must not load a NER model the contract turned off); the defaults when `checks.pii` is invalid (the
    `pii` check reports that, a `--checks secret` run need not)."""
    if scanner.pii_config is not None:
        return scanner.pii_config
    from gate.data.pii_scan import pii_config
    from gate.errors import GateError

    try:
        return pii_config(contract)
    except GateError:
        from gate.pii.config import PiiConfig

        return PiiConfig()
    except ImportError:  # presidio not installed (a secret-only machine): no recall scan
        return None


class _DetectorCheck(Check):
    def __init__(self, contract: Contract) -> None:
        super().__init__(contract)
        self._by_rule: Counter[str] = Counter()
        self._scanner = RowScanner(contract, pii=self.name == "pii", secrets=self.name == "secret")
        self._recall_config = _recall_config(contract, self._scanner)
        # what `gate scrub` keeps (the contract's `scrub.operators`, e.g. `URL: keep`) is not a finding: one rule
        self._scrub = ScrubRules.of(contract)

    def _hits(self, fh: Any) -> list[Any]:
        raise NotImplementedError

    def _describe(self, hit: Any) -> tuple[str, str]:
        raise NotImplementedError

    def _severity(self, hit: Any, fh: Any, linked: list[Any], stand_in: str) -> tuple[str, str]:
        """(severity, what the message adds) of one hit of field `fh` among the hits of the same field (message)
        that identify someone (`linked`), `stand_in` why the hit itself stands in for a value: an error by
        default."""
        return "error", ""

    def _stand_in(self, hit: Any, fh: Any, asked: str, seen: _Seen) -> str:
        """Why the hit stands in for a value rather than being one, "" when it is one (it can then link the other
        hits of its message to a person); `asked` is the user's turn right before its field, `seen` what earlier
        turns of the row said. Never by default."""
        return ""

    def _remember(self, fh: Any, hits: list[Any], why: list[str], seen: _Seen) -> None:
        """Record in `seen` what field `fh` (its `hits`, their `_stand_in` reasons) tells the later turns of its row.
        Nothing by default: only the pii check's stand-ins read earlier turns."""

    def map(self, batch: Batch) -> Any:
        scanned = self._scanner.scan([row for _, row in batch.rows], self.context)
        texts = kept = 0
        todo: list[tuple[int, str | None, Any, list[Any]]] = []
        # per entry of `todo`: the hits of its field (message) that identify someone. A link is looked for in the
        # same message, not the whole row: in a long dialogue one turn's address said nothing about the names and
        # places of twenty other turns (Schema-Guided Dialogue: a ride's destination made every therapist and
        # hotel of the conversation an error). A row with such a hit fails the gate either way.
        in_field: list[list[Any]] = []
        stand_ins: list[list[str]] = []  # per entry of `todo`, per hit: `_stand_in`, computed once
        for (line, row), fields in zip(batch.rows, scanned, strict=True):
            rid = row.get("id") if isinstance(row.get("id"), str) else None
            texts += len(fields)
            asked = ""
            seen = _Seen()
            for fh in fields:
                hits = [h for h in self._hits(fh) if self._scrub.hit_operator(h) != "keep"]
                kept += len(self._hits(fh)) - len(hits)
                if hits:
                    todo.append((line, rid, fh, hits))
                    why = [self._stand_in(h, fh, asked, seen) for h in hits]
                    stand_ins.append(why)
                    in_field.append([h for h, w in zip(hits, why, strict=True) if not w])
                else:
                    why = []
                self._remember(fh, hits, why, seen)
                asked = fh.text if fh.role == "user" else ""
        snippets = self._snippets(todo) if self.context.snippets else [[None] * len(t[3]) for t in todo]
        findings = []
        for (line, rid, fh, hits), shown, linked, why in zip(todo, snippets, in_field, stand_ins, strict=True):
            for hit, snip, stand_in in zip(hits, shown, why, strict=True):
                rule, message = self._describe(hit)
                severity, why_more = self._severity(hit, fh, linked, stand_in)
                findings.append(Finding(self.name, batch.split, line, fh.path, rule, severity,
                                        f"{message}{why_more} at characters {hit.start}-{hit.end}", snip, rid))
        return findings, Counter({"scanned": len(batch.rows), "texts_scanned": texts, "kept_by_scrub_rule": kept})

    def _snippets(self, todo: list[tuple[int, str | None, Any, list[Any]]]) -> list[list[str | None]]:
        """Per field with hits, the snippet of each hit: windows, one recall scan per field, context masking.
        Not called for `--snippets none` (`RunContext.snippets`), which would throw all of it away."""
        from gate.pii import snippet, snippet_window
        from gate.pii.redact import merged_spans

        # per field, its hits merged once and each snippet's recall spans looked up near its window: a field of
        # 3,000 hits is built in linear time, not 3,000 times over (a pull request writes the rows)
        merged = [merged_spans(fh.text, fh.pii + fh.secrets) for _, _, fh, _ in todo]
        windows = [[snippet_window(fh.text, (), focus=h, merged=m) for h in hits]
                   for (_, _, fh, hits), m in zip(todo, merged, strict=True)]
        hulls = [(fh.text, min(w[0] for w in ws), max(w[1] for w in ws))
                 for (_, _, fh, _), ws in zip(todo, windows, strict=True)]
        # a field the scan read whole with the model has its spans already; only the others need the recall scan
        need = [k for k, (_, _, fh, _) in enumerate(todo) if fh.spans is None]
        recalled = dict(zip(need, _recall([hulls[k] for k in need], self._recall_config), strict=True))
        extras = [fh.spans if fh.spans is not None else recalled[k] for k, (_, _, fh, _) in enumerate(todo)]
        return [[snippet(fh.text, (), focus=h, extra=near(w), merged=m) for h, w in zip(hits, ws, strict=True)]
                for (_, _, fh, hits), m, ws, near in zip(todo, merged, windows, map(_near_spans, extras),
                                                          strict=True)]

    def reduce(self, partial: Any) -> None:
        findings, counts = partial
        self.findings.extend(findings)
        self.counts.update(counts)
        self._by_rule.update(f.rule for f in findings)

    def details(self) -> dict[str, Any]:
        return {"by_rule": dict(sorted(self._by_rule.items())), "label": "flagged / possible"}

    def _summary(self, noun: str, prefix: str) -> str:
        """The findings, and apart the errors that fail the gate and their rows: with warnings among them "2,820
        spans in 1,022 rows" alone read as 1,022 failing rows where 136 failed."""
        kinds = ", ".join(f"{k[len(prefix):]} {v}" for k, v in sorted(self._by_rule.items())) or "none"
        head = f"{len(self.findings)} {noun} in {self.flagged_rows()} row(s)"
        errors = [f for f in self.findings if f.severity == "error"]
        if len(errors) < len(self.findings):
            rows = len({(f.split, f.row) for f in errors if f.row is not None})
            head += f": {len(errors)} error(s) in {rows} row(s), {len(self.findings) - len(errors)} warning(s)"
        return f"{head} ({kinds})"


class PiiCheck(_DetectorCheck):
    name = "pii"
    rules = ("pii.*",)  # pii.<ENTITY>; scrub operator keys are checked against the entity names
    order = 60
    incremental = "per_row"
    version = "1"
    # read by gate.data.pii_scan.pii_config (gate.pii.PiiConfig says what each key means)
    options_schema = check_options({
        "entities": {"type": "array", "items": {"type": "string"}, "default": list(_PII.entities), "description":
                     "Entity types found by pattern recognisers (presidio's, plus gate's street ADDRESS); any "
                     "local presidio recogniser can be opted in here (DATE_TIME, UUID, DE_TAX_ID...)."},
        "ner_entities": {"type": "array", "items": {"type": "string"}, "default": list(_PII.ner_entities),
                         "description": "Entity types found by the spaCy NER model (when `use_ner` and installed)."},
        "use_ner": {"type": "boolean", "default": _PII.use_ner, "description":
                    "Look for names and places with the pinned spaCy model (the report warns when it is missing)."},
        "default_threshold": {"type": "number", "minimum": 0, "maximum": 1, "default": _PII.default_threshold,
                              "description": "Lowest presidio score a hit needs, for entities without their own "
                                             "threshold."},
        "thresholds": {"type": "object", "additionalProperties": {"type": "number", "minimum": 0, "maximum": 1},
                       "default": dict(_PII.thresholds), "description":
                       "Lowest score per entity type (phone numbers score 0.4 without context words)."},
        "context_words": {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}},
                          "default": {}, "description": "Extra words per entity type that raise a nearby hit's "
                                                        "score (presidio's context enhancer)."},
        "roles": {**ROLES, "default": None, "description": "Roles whose messages are read (null: every role)."},
        "quasi_identifiers": {"type": "array", "items": {"type": "string"}, "default": list(QUASI_ENTITIES),
                              "description": "Entity types that identify nobody on their own (a name, a place, a "
                                             "web address): a warning unless something links them to a person: "
                                             "another entity type in the same message (an e-mail, a phone number...) "
                                             "or, for a full name, an introduction, greeting, sign-off or hand-over "
                                             "beside it, or the writer's relation to them; for a URL, a profile "
                                             "path, a user or a name in it, or the writer's own page; then an "
                                             "error. [] makes every entity an error."},
        "stand_ins": {"type": "string", "enum": ["warning", "error"], "default": "warning", "description":
                      "Severity of a value the row's own words present as a stand-in: an example in "
                      "documentation (e.g. ...), a stock placeholder (123 Main Street, john.doe@example.com) or a "
                      "place's address or number read out from a listing. `warning` (the default) keeps real "
                      "instruction data reviewable; `error` fails the gate on them too, for data whose writers "
                      "are not trusted to word their rows (the reason stays in the message)."},
    })

    def __init__(self, contract: Contract) -> None:
        super().__init__(contract)
        quasi = contract.options(self.name).get("quasi_identifiers", QUASI_ENTITIES)
        self._quasi = frozenset(quasi) if isinstance(quasi, list | tuple) else frozenset(QUASI_ENTITIES)
        # the context rules read the row's own text, which a pull request writes: a trusted contract can refuse them
        self._stand_in_severity = contract.options(self.name).get("stand_ins", "warning")

    def _hits(self, fh: Any) -> list[Any]:
        return fh.pii

    def _severity(self, hit: Any, fh: Any, linked: list[Any], stand_in: str) -> tuple[str, str]:
        """A quasi-identifier (a name, a place) fails the gate only when something links it to a person: a direct
        identifier in the same message (an e-mail, a phone number...), or, for a full name, an introduction, greeting,
        sign-off or hand-over right beside it, or the writer's relation to them (`gate.pii.context.names_a_person`);
        a given name alone ("Hi, I am Karan", "Dear John") needs the direct identifier: on the real-data bench 7 of
        the 8 introduced lone given names that failed the gate were labelled false (a first name identifies no one);
        for a URL, a profile path, a user or a name in it, or the writer's "my profile page"
        (`gate.pii.context.url_names_someone`).
        Alone it identifies nobody (a story's character, a city of an anonymous request, a public figure asked
        about): a warning a reviewer reads, not a failed gate. So is a value that stands in for one (`_stand_in`: a
        tool's "e.g. '123 Main St'", `john.doe@example.com`), which links nothing either."""
        if stand_in:
            return self._stand_in_severity, stand_in
        if hit.entity_type in self._quasi and linked:
            from gate.pii.context import share_recipient

            # "share the location 960 Moraga Road #1 to Keith": the address links nobody to Keith
            linked = [h for h in linked if not share_recipient(fh.text, (h.start, h.end), (hit.start, hit.end))]
        if hit.entity_type not in self._quasi or any(h.entity_type not in self._quasi for h in linked):
            return "error", ""
        if hit.entity_type == "PERSON":
            from gate.pii.context import names_a_person

            if len(fh.text[hit.start:hit.end].split()) < 2:
                return "warning", ", a given name alone: nothing in its message links it to a person,"
            if names_a_person(fh.text, hit.start, hit.end, model_speaks=fh.role == "assistant"):
                return "error", ""
        if hit.entity_type == "URL":
            from gate.pii.context import url_names_someone

            if url_names_someone(fh.text, hit.start, hit.end):
                return "error", ""
        return "warning", ", alone: nothing in its message links it to a person,"

    def _remember(self, fh: Any, hits: list[Any], why: list[str], seen: _Seen) -> None:
        """The values of `fh` read out as a listing or a trip "there" (`_stand_in`), those a user turn gave, and
        whether a user turn asked for a ride "there" (`wants_to_go_there`), for a place by its kind
        (`searches_for_a_place`), named someone's place (`names_own_place`) or asked for a ride (`asks_for_a_ride`)."""
        for h, w in zip(hits, why, strict=True):
            if w in (_LISTING, _THERE, _FOUND):
                seen.listed.add(_listed_key(fh.text[h.start:h.end]))
            if w == _THERE:
                seen.there.add(_listed_key(fh.text[h.start:h.end]))
        if fh.role == "user":
            from gate.pii.context import asks_for_a_ride, names_own_place, searches_for_a_place, wants_to_go_there

            seen.given.update(_listed_key(fh.text[h.start:h.end]) for h in hits)
            if not seen.going:
                seen.going = wants_to_go_there(fh.text)
            seen.own_place = seen.own_place or names_own_place(fh.text)
            seen.ride = seen.ride or asks_for_a_ride(fh.text)
            seen.searched = seen.searched or searches_for_a_place(fh.text)

    def _stand_in(self, hit: Any, fh: Any, asked: str, seen: _Seen) -> str:
        """Why the hit stands in for a value rather than being one (what the warning says), or "": a value written
        as an example in documentation ("e.g. '123 Main St'", a schema's default), a stock placeholder
        (`john.doe@example.com`, `123-456-7890`), or a place's address or number the model reads out from a listing
        (`listed_contact`, the answer to the user's `asked` "What is their phone number?", the address it gives for
        the user's ride "there", or an address no user turn gave that it offers to share, `offers_to_share`)
        identifies and links nobody, unless the sentence ties it to a person (`names_no_owner`). Nor does such a
        value when a later turn shares it ("share the location 199 Aegean Way with Jonathan") or, for a ride
        "there", confirms the ride: the place the model found, not where the writer is. A ride the user books to a
        listed place without pointing "there" stays their destination (a finding a reader labels true).
        An address or number the model gives, no user turn gave and nothing ties to a person, in a dialogue where the
        user asked for a place by its kind ("the nearest hotel") and never for their own place or a ride, is the
        found place's however the model words it (`searches_for_a_place`)."""
        from gate.pii.context import (
            asks_about_own_place,
            asks_for_listing,
            given_as_example,
            goes_there,
            heads_to,
            listed_contact,
            names_no_owner,
            navigates,
            offers_to_share,
            placeholder_value,
            searches_for_a_place,
            sends_there,
            shares_a_place,
            shares_it,
        )

        if given_as_example(fh.text, hit.start):
            return ", given as an example in documentation (e.g., a format, a default),"
        value = fh.text[hit.start:hit.end]
        if placeholder_value(hit.entity_type, value):
            return ", a stock placeholder value,"
        if hit.entity_type not in _LISTED_TYPES:
            return ""
        key = _listed_key(value)
        address = hit.entity_type == "ADDRESS"
        unowned = names_no_owner(fh.text, hit.start)  # nothing in its sentence ties it to a person
        if fh.role == "assistant":
            if asks_about_own_place(asked):
                # the answer to "Where does my friend live?": "347 Alta Mesa Ave. is the address." (KVRET) is the
                # friend's, however worded
                return ""
            if listed_contact(fh.text, hit.start, hit.end) or (unowned and (
                    asks_for_listing(asked, value)
                    or (address and key not in seen.given and offers_to_share(fh.text, hit.start, hit.end)))):
                return _LISTING
            if address and unowned and (goes_there(asked, value) or (seen.going and key not in seen.given)):
                return _THERE
            if (unowned and seen.searched and not (seen.own_place or seen.ride) and key not in seen.given
                    and (searches_for_a_place(asked) or navigates(asked) or navigates(fh.text))):
                return _FOUND
        elif address and fh.role == "user":
            # the user types the found place's address: "I need a cab to get there. I want to head to 45 San
            # Clemente Drive", "I need to go to 750 Tennant Station on a shared ride, i require a cab to go there";
            # or gives it after an earlier turn asked for a cab "there", before the model named an address (a
            # different address after the model named one is the user's own choice: "No, I need to go to ...")
            if unowned and (sends_there(fh.text, hit.start, hit.end)
                            or (seen.going and not seen.there and heads_to(fh.text, hit.start))):
                return _THERE
            if shares_a_place(fh.text, hit.start):
                return _LISTING
        if key in seen.listed and unowned:
            if address and shares_it(fh.text, hit.start):
                return ", the address of a place the assistant read out earlier, shared with someone,"
            if key in seen.there:
                return ", the address of a place found earlier, where the user asked to go, repeated,"
        return ""

    def _describe(self, hit: Any) -> tuple[str, str]:
        return f"pii.{hit.entity_type}", f"possible {hit.entity_type} (score {hit.score:.2f}, {hit.recognizer})"

    def details(self) -> dict[str, Any]:
        from gate.pii import engine_info

        out = {**super().details(), "engine": engine_info(self._scanner.pii_config)}
        cfg = self._scanner.pii_config
        if cfg is not None and cfg.use_ner and cfg.ner_entities and not out["engine"]["ner"]:
            # without this, names and places go unchecked while report.json says use_ner
            from gate import install_hint

            out["warnings"] = [f"NER requested (use_ner: true) but the spaCy model {cfg.ner_model} is not "
                               f"installed: {', '.join(cfg.ner_entities)} not checked ({install_hint('ner')})"]
        return out

    def result(self) -> CheckResult:
        res = super().result()
        res.summary = self._summary("possible PII span(s)", "pii.")
        return res


class SecretCheck(_DetectorCheck):
    name = "secret"
    rules = ("secret.*",)  # secret.<kind>
    order = 70
    incremental = "per_row"
    version = "1"
    # read by gate.data.pii_scan.secret_config (gate.pii.SecretConfig says what each key means)
    options_schema = check_options({
        "detect_secrets": {"type": "boolean", "default": _SECRET.detect_secrets, "description":
                           "Run detect-secrets' plugins, one by one, on every line."},
        "own_patterns": {"type": "boolean", "default": _SECRET.own_patterns, "description":
                         "Run gate's patterns for current key formats (sk-proj-, github_pat_, hf_, ...)."},
        "plugins": {"type": "array", "items": {"type": "string"}, "default": list(_SECRET.plugins),
                    "description": "The detect-secrets plugins to run, by class name."},
        "base64_limit": {"type": "number", "minimum": 0, "maximum": 8, "default": _SECRET.base64_limit,
                         "description": "Shannon entropy above which a quoted base64 string is a secret."},
        "hex_limit": {"type": "number", "minimum": 0, "maximum": 8, "default": _SECRET.hex_limit,
                      "description": "Shannon entropy above which a quoted hex string is a secret."},
        "roles": {**ROLES, "default": None, "description": "Roles whose messages are read (null: every role)."},
    })

    def _hits(self, fh: Any) -> list[Any]:
        return fh.secrets

    def _describe(self, hit: Any) -> tuple[str, str]:
        return f"secret.{hit.kind}", f"possible secret: {hit.kind} ({hit.detector})"

    def result(self) -> CheckResult:
        res = super().result()
        res.summary = self._summary("possible secret(s)", "secret.")
        return res
