"""What `gate scrub` does with each finding, read once from the contract's `scrub` section: the one rule that both
`gate scrub` and `gate check` follow.

Why one rule: a scrub that dropped rows no check had flagged (it deduplicated its own rewritten text) and kept rows
a check had flagged, and a check that failed on URLs the contract told scrub to keep, gave a user two verdicts on
one dataset. Here a finding's action is decided from the finding alone (its check and rule, on the original text):

- a `pii`/`secret` hit: its operator (`gate.pii.anonymize.hit_operator`: by rule `pii.URL`, secret kind, entity
  type `URL`, else `default_operator`). `keep` means it is not a finding at all: the check does not report it;
- any finding whose rule, rule family or check is named under `operators` (`contract.refusal`, `field.pattern`,
  `length`, a plugin's `too_many_turns`): that operator;
- else what its check declares (`Check.drop_action`, `drop_rules`, `drop_switch`): a duplicate (`exact_duplicate`,
  `near_duplicate`, `semantic_duplicate`) or a leak (`leakage`) is `drop_row` while `drop_duplicates` /
  `drop_leakage` are on (the default), the check naming which copy goes; an empty user or assistant message
  (`contract`'s `messages.empty`) is `drop_row` (nothing can repair it).

The keys of `operators` are checked at load (`operator_key_problem`): a typo (`EMAIL_ADRESS`) would drop nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gate.contract import Contract
from gate.data.operator_keys import DETECTOR_CHECKS

#: The contract check's rules that are checked per column over the whole dataset (great-expectations), by prefix.
COLUMN_RULES = ("field.", "source.", "language.")
#: Checks whose hits scrub rewrites value by value (their operators are per entity, not per row).


@dataclass(frozen=True)
class ScrubRules:
    """The contract's `scrub` section as decisions (no salt: `gate check` reads it too and never hashes)."""

    operators: tuple[tuple[str, str], ...] = ()
    default_operator: str = "replace"
    drop_duplicates: bool = True
    drop_leakage: bool = True

    @classmethod
    def of(cls, contract: Contract) -> ScrubRules:
        sec = dict(contract.raw.get("scrub") or {})
        return cls(tuple(sorted(dict(sec.get("operators") or {}).items())),
                   str(sec.get("default_operator", "replace")),
                   bool(sec.get("drop_duplicates", True)), bool(sec.get("drop_leakage", True)))

    def hit_operator(self, hit: Any) -> str:
        """What scrub does with one PII or secret hit (`keep`, `replace`, `pseudonym`, `hash`, `drop_row`)."""
        from gate.pii.anonymize import hit_operator

        return hit_operator(hit, dict(self.operators), self.default_operator)

    def finding_action(self, check: str, rule: str) -> str | None:
        """What scrub does with the row of a finding of another check than pii/secret: `drop_row`, `keep` or None
        (scrub leaves the row as it is). An operator named for the rule (`messages.empty`, `contract.refusal`),
        its family (`leakage` for `leakage.near`) or its check wins over the defaults."""
        if check in DETECTOR_CHECKS:
            return None
        ops = dict(self.operators)
        for name in (f"{check}.{rule}", rule, rule.split(".")[0], check):
            if name in ops:
                return ops[name]
        return self.default_action(check, rule)

    def default_action(self, check: str, rule: str) -> str | None:
        """What the check declares scrub does with a row it flags (`Check.drop_action`, narrowed by `drop_rules`,
        turned off by the contract's `drop_switch` flag): the duplicate checks and `leakage` drop, the contract check
        drops `messages.empty`, a plugin drops what it declares. None for a check this installation does not know."""
        from gate.data.checks_index import CHECKS

        if check not in CHECKS:
            return None
        action = CHECKS.literal(check, "drop_action")
        if action is None:
            return None
        rules = CHECKS.literal(check, "drop_rules") or ()
        if rules and rule not in rules:
            return None
        switch = CHECKS.literal(check, "drop_switch")
        if switch is not None and not getattr(self, switch, True):
            return None
        return str(action)

    def drops(self, check: str, rule: str) -> bool:
        """Whether `gate scrub` drops a row for this finding: its action, or for a `pii`/`secret` finding the operator
        of its rule (`pii.CREDIT_CARD`, `secret.jwt`), entity type or secret kind, else `default_operator`."""
        if check not in DETECTOR_CHECKS:
            return self.finding_action(check, rule) == "drop_row"
        ops = dict(self.operators)
        head, _, tail = rule.partition(".")
        names = [rule, tail] + (["SECRET"] if head == "secret" else [])
        return next((ops[n] for n in names if n in ops), self.default_operator) == "drop_row"

    def needs_column_rules(self) -> bool:
        """Whether a drop rule may come from the contract check's column rules (`field.*`, `source.allowed`,
        `language.allowed`: great-expectations over the whole dataset, gate.contract.expectations), rather than from
        its per-row rules alone (`messages.empty`)."""
        return any(op == "drop_row" and (name == "contract" or name.removeprefix("contract.").startswith(COLUMN_RULES))
                   for name, op in self.operators)


