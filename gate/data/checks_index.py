"""The check registry by declaration (gate.plugins): which checks exist, their order and declared literals.

Why a module of its own: the contract loader needs the checks' declared rule names (a `scrub.operators` key that
names none is a typo) and must not import the checks, their base class or the runner, which import the contract.
"""

from __future__ import annotations

from gate.plugins import Registry

#: name -> check class, in run order; iterating reads declarations only, `CHECKS[name]` imports the class
CHECKS: Registry = Registry("check")
