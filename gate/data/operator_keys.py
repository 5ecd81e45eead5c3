"""Which keys `scrub.operators` may name: the contract loader's typo check, apart from the scrub rules.

Why apart: the contract loader asks this, and gate.data.scrub_rules sits above the checks (registry, base), which
import the contract; reading the check declarations through gate.data.checks_index (gate.plugins only) keeps the
contract below the data door.
"""

from __future__ import annotations

#: the checks that report per PII entity and secret kind (their rules are named by those, not declared)
DETECTOR_CHECKS = ("pii", "secret")


def operator_key_problem(key: str) -> str | None:
    """Why `key` of the contract's `scrub.operators` names nothing scrub can meet, or None: a key must be a PII entity
    type (`EMAIL_ADDRESS`), `SECRET`, a secret kind, a rule a check declares (`pii.URL`, `messages.empty`,
    `contract.refusal`, a rule family such as `field`) or a check's name (a plugin's too). Why: a typo
    (`EMAIL_ADRESS: drop_row`) was accepted and dropped nothing; `gate contract lint`, `gate check` and `gate scrub`
    all load the contract, so all three refuse it."""
    import difflib

    exact, prefixes = _operator_keys()
    if key in exact or any(key.startswith(p) and len(key) > len(p) for p in prefixes):
        return None
    if key.islower() and key in _detect_secrets_kinds():
        return None
    hint = difflib.get_close_matches(key, sorted(exact), n=1)
    return (f"'{key}' names no PII entity, secret kind, finding rule or check"
            + (f" (did you mean '{hint[0]}'?)" if hint else ""))


def _operator_keys() -> tuple[set[str], tuple[str, ...]]:
    """(the keys `scrub.operators` accepts, the prefixes under which any key is accepted): entity types and secret
    kinds, and per usable check its name, its declared `rules` (each also as `<check>.<rule>` and its family), or,
    for a check that declares none, `<check>.` as a prefix."""
    from gate.data.checks_index import CHECKS
    from gate.pii.config import FIREABLE_NER_ENTITIES, KNOWN_PATTERN_ENTITIES
    from gate.pii.secrets import OWN_PATTERNS

    entities = {*KNOWN_PATTERN_ENTITIES, *FIREABLE_NER_ENTITIES}
    kinds = {kind for kind, _, _ in OWN_PATTERNS}
    exact = {*entities, "SECRET", *(f"pii.{e}" for e in entities), *kinds, *(f"secret.{k}" for k in kinds)}
    prefixes = ["secret."]  # detect-secrets' kinds are named by its plugins, installed or not
    for name in CHECKS.usable():
        exact.add(name)
        rules = tuple(CHECKS.literal(name, "rules") or ())
        if not rules:
            prefixes.append(f"{name}.")
        for rule in rules:
            if rule.endswith(".*"):  # a family; pii/secret rules are named by entity and kind above
                if name not in DETECTOR_CHECKS:
                    prefixes.append(rule[:-1])
                continue
            exact.update((rule, f"{name}.{rule}", rule.split(".")[0]))
    return exact, tuple(prefixes)


def _detect_secrets_kinds() -> set[str]:
    """The secret kinds detect-secrets' plugins report (`base64_high_entropy_string`), when it is installed."""
    try:
        from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    except ImportError:
        return set()
    from gate.pii.secrets import _slug

    return {_slug(t) for t in get_mapping_from_secret_type_to_class()}
