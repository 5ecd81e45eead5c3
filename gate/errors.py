"""Errors that end a run with exit code 1 and exactly one readable line.

The CLI catches `GateError` and prints `str(err)`; everything a user can get wrong (a file, a line,
a field) is carried in the exception so the message can point at it without a traceback.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Exit codes are an API: CI pipelines branch on them."""

    PASS = 0
    ERROR = 1  # the gate itself could not run: bad input, missing file, engine down
    USAGE = 2
    GATE_FAILED = 100  # the data or the candidate is not good enough


class GateError(Exception):
    """A problem with the input or the environment, reported as one line: `file:line: field: message`."""

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None,
                 field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.line = line
        self.field = field

    def __str__(self) -> str:
        where = ""
        if self.file:
            where = self.file
            if self.line is not None:
                where += f":{self.line}"
            where += ": "
        field = f"{self.field}: " if self.field else ""
        return f"{where}{field}{self.message}"


class InputError(GateError):
    """The dataset cannot be read as declared (missing, empty, malformed, not UTF-8...)."""


class ContractError(GateError):
    """The contract file is not a valid contract (unknown key, wrong type, bad JSON Schema...)."""
