"""What every runner provides: a launch plan (command, environment, generated files) and where its checkpoint lands.

Runners only translate; launching, logging, metric parsing and checkpoint collection are shared
(`gate.train.plan_launch`), so the local runner's end-to-end test exercises the same machinery a cluster run uses.
"""

from __future__ import annotations

import shlex
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path

from gate.train.spec import TrainSpec


@dataclass(frozen=True)
class LaunchPlan:
    """Everything needed to start the trainer by hand: `files` are written under `<output_dir>/plan/`, and the
    `command` refers to them by absolute path."""

    runner: str
    command: tuple[str, ...]
    files: dict[str, str]
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    notes: tuple[str, ...] = ()

    def shell(self) -> str:
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(self.env.items()))
        return (env + " " if env else "") + shlex.join(self.command)


class Runner(ABC):
    name: str = ""

    @abstractmethod
    def plan(self, spec: TrainSpec, plan_dir: Path) -> LaunchPlan:
        """The exact launch; `plan_dir` is where `files` will live (so commands can name them)."""

    @abstractmethod
    def find_checkpoint(self, spec: TrainSpec) -> Path | None:
        """The final checkpoint directory after a successful run, or None when the trainer wrote none."""

    def preflight(self, plan: LaunchPlan) -> None:  # noqa: B027 - optional hook
        """Raises GateError when the trainer cannot start here (binary missing...), before anything is recorded."""
