"""Which checks exist, in the order they run and appear in reports."""

from __future__ import annotations

from gate.data.base import Check
from gate.data.checks.boilerplate import BoilerplateCheck
from gate.data.checks.contamination import ContaminationCheck
from gate.data.checks.contract import ContractCheck
from gate.data.checks.exact_duplicate import ExactDuplicateCheck
from gate.data.checks.group_split import GroupSplitCheck
from gate.data.checks.length import LengthCheck
from gate.data.checks.near_duplicate import LeakageCheck, NearDuplicateCheck
from gate.data.checks.pii import PiiCheck, SecretCheck
from gate.data.checks.semantic_duplicate import SemanticDuplicateCheck
from gate.data.checks.template import TemplateCheck

CHECKS: dict[str, type[Check]] = {
    "contract": ContractCheck,
    "exact_duplicate": ExactDuplicateCheck,
    "near_duplicate": NearDuplicateCheck,
    "semantic_duplicate": SemanticDuplicateCheck,
    "leakage": LeakageCheck,
    "pii": PiiCheck,
    "secret": SecretCheck,
    "contamination": ContaminationCheck,
    "group_split": GroupSplitCheck,
    "template": TemplateCheck,
    "length": LengthCheck,
    "boilerplate": BoilerplateCheck,
}


def available() -> list[str]:
    return list(CHECKS)
