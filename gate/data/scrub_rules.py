"""What `gate scrub` does with each finding, read once from the contract's `scrub` section: the one rule that both
`gate scrub` and `gate check` follow.

Why one rule: a scrub that dropped rows no check had flagged (it deduplicated its own rewritten text) and kept rows
a check had flagged, and a check that failed on URLs the contract told scrub to keep, gave a user two verdicts on
one dataset. Here a finding's action is decided from the finding alone (its check and rule, on the original text):

- a `pii`/`secret` hit: its operator (`gate.pii.anonymize.hit_operator`: by rule `pii.URL`, secret kind, entity
  type `URL`, else `default_operator`). `keep` means it is not a finding at all: the check does not report it;
- a duplicate (`exact_duplicate`, `near_duplicate`, `semantic_duplicate`) or a leak (`leakage`): `drop_row`
  while `drop_duplicates` / `drop_leakage` are on (the default); the check names which copy goes;
- an empty user or assistant message (`contract`'s `messages.empty`): `drop_row` (nothing can repair it);
- any other finding rule named under `operators` (`contract.refusal`, `field.pattern`, `length`): that operator.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gate.contract import Contract

#: Checks whose findings are copies of another row: the row they flag goes while `drop_duplicates` is on.
DUPLICATE_CHECKS = ("exact_duplicate", "near_duplicate", "semantic_duplicate")
#: Finding rules dropped unless the contract's operators say otherwise: rows no operator can repair.
DEFAULT_DROP_RULES = ("messages.empty",)
#: The contract check's rules that are checked per column over the whole dataset (great-expectations), by prefix.
COLUMN_RULES = ("field.", "source.", "language.")
#: Checks whose hits scrub rewrites value by value (their operators are per entity, not per row).
DETECTOR_CHECKS = ("pii", "secret")


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
        if check in DUPLICATE_CHECKS:
            return "drop_row" if self.drop_duplicates else None
        if check == "leakage":
            return "drop_row" if self.drop_leakage else None
        if check == "contract" and rule in DEFAULT_DROP_RULES:
            return "drop_row"
        return None

    def needs_column_rules(self) -> bool:
        """Whether a drop rule may come from the contract check's column rules (`field.*`, `source.allowed`,
        `language.allowed`: great-expectations over the whole dataset, gate.contract.expectations), rather than from
        its per-row rules alone (`messages.empty`)."""
        return any(op == "drop_row" and (name == "contract" or name.removeprefix("contract.").startswith(COLUMN_RULES))
                   for name, op in self.operators)
