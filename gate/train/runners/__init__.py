"""Runners turn a training spec into a launch plan for one trainer; `get_runner` picks one by its CLI name."""

from __future__ import annotations

from gate.requests import TRAIN_RUNNERS as RUNNERS  # one list, which the CLI offers
from gate.train.runners.base import LaunchPlan, Runner


def get_runner(name: str) -> Runner:
    if name == "local":
        from gate.train.runners.local import LocalRunner

        return LocalRunner()
    if name == "nemo-automodel":
        from gate.train.runners.nemo_automodel import NemoAutomodelRunner

        return NemoAutomodelRunner()
    if name == "ms-swift":
        from gate.train.runners.ms_swift import MsSwiftRunner

        return MsSwiftRunner()
    from gate.errors import GateError

    raise GateError(f"unknown runner '{name}' (one of {', '.join(RUNNERS)})", field="--runner")


__all__ = ["RUNNERS", "LaunchPlan", "Runner", "get_runner"]
