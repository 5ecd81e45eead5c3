"""One request object per use case, read by every face: the CLI builds it, the service's body model is derived from
its fields, the remote client sends those fields and refuses the rest.

Why one object: an option added to the CLI alone was dropped on the way to the service (`gate check --snippets none`
with GATE_URL set sent four fields and passed), and the check's options went down three layers as 19 keyword
arguments. Each field says here, once, where it can be honoured:

- `remote`: the service runs it exactly as the CLI would; the client sends it.
- `client`: the client's own business (where the reports land, how much it prints); never sent, never refused.
- `local`: only a local run can honour it (the record to write, the cores to use, a git ref of the caller's
  tree); with GATE_URL set a value other than the default is refused in one line, exit 2, never dropped.

A `path` field names a file the service confines to its roots before the job sees it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

FAIL_ON = ("error", "warning", "never")
CHECK_ENGINES = ("local", "ray")
SNIPPET_MODES = ("masked", "none")

Where = Literal["remote", "client", "local"]


def _f(default: Any, where: Where, help: str, *, path: bool = False, flag: str | None = None) -> Any:
    return field(default=default, metadata={"where": where, "help": help, "path": path, "flag": flag})


@dataclass(frozen=True)
class CheckRequest:
    """`gate check DATASET --contract C ...`: check a dataset against its contract."""

    dataset: str = _f(dataclasses.MISSING, "remote", "Dataset file or directory (under one of the service's roots).",
                      path=True)
    contract: str = _f(dataclasses.MISSING, "remote", "Data contract YAML (under one of the service's roots).",
                       path=True)
    report_dir: str = _f("gate-report", "client", "Where report.md, report.json and junit.xml go.", flag="--out")
    quiet: bool = _f(False, "client", "Only the verdict line.")
    checks: tuple[str, ...] | None = _f(None, "remote", "The subset of checks to run; default all.")
    fail_on: str = _f("error", "remote", "Which check status fails the gate: " + ", ".join(FAIL_ON) + ".")
    max_examples: int = _f(10, "remote", "Findings shown per check in report.md.")
    snippets: str = _f("masked", "remote", "Context with each finding: masked or none.")
    tokenizer: str | None = _f(None, "remote", "Tokenizer directory; replaces the contract's (under a root).",
                               path=True)
    db: str | None = _f(None, "local", "DuckDB record to write (the service writes its own).")
    record: bool = _f(True, "local", "Record the run (the service always does).", flag="--no-db")
    workers: int | None = _f(None, "local", "Worker processes (the service sets its own).")
    engine: str = _f("local", "local", "Where the row work runs: " + ", ".join(CHECK_ENGINES) + ".")
    address: str | None = _f(None, "local", "Ray cluster address for engine=ray.")
    changed_since: str | None = _f(None, "local", "Check only the datasets git shows changed since this ref.")
    base: str | None = _f(None, "local", "Incremental: only rows changed since this git ref, against the index.")
    index: str | None = _f(None, "local", "Index directory for base.")
    fail_on_existing: bool = _f(False, "local", "With changed_since: findings the base had fail too.")
    allow_contract_change: bool = _f(False, "local", "Judge by this tree's contract where it loosens the base's.")

    def __post_init__(self) -> None:
        if self.checks is not None and not isinstance(self.checks, tuple):
            object.__setattr__(self, "checks", tuple(self.checks))

    def with_(self, **changes: Any) -> CheckRequest:
        return dataclasses.replace(self, **changes)


def fields_where(cls: type, where: Where) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls) if f.metadata["where"] == where)


def path_fields(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls) if f.metadata["path"])


def flag_of(cls: type, name: str) -> str:
    """The CLI flag a field is given with (for one-line refusals that name what the user typed)."""
    meta = {f.name: f.metadata for f in dataclasses.fields(cls)}[name]
    return meta["flag"] or "--" + name.replace("_", "-")


def unsent(req: Any) -> list[str]:
    """The flags of the `local` fields given a value other than their default: what a service cannot honour."""
    return [flag_of(type(req), f.name) for f in dataclasses.fields(req)
            if f.metadata["where"] == "local" and getattr(req, f.name) != f.default]


def remote_body(req: Any) -> dict[str, Any]:
    """The JSON body the client sends: every `remote` field, lists as lists."""
    return {name: (list(v) if isinstance(v := getattr(req, name), tuple) else v)
            for name in fields_where(type(req), "remote")}


def body_model(cls: type) -> Any:
    """The service's pydantic body model for a request class: its `remote` fields, with their defaults, help and
    allowed values, unknown fields refused. Derived, so a field added here is accepted there without a second edit."""
    from pydantic import ConfigDict, Field, create_model

    choices: dict[str, Any] = {"fail_on": Literal[FAIL_ON], "snippets": Literal[SNIPPET_MODES]}  # type: ignore[valid-type]
    bounds: dict[str, dict[str, int]] = {"max_examples": {"ge": 0, "le": 1000}}
    spec: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.metadata["where"] != "remote":
            continue
        typ = choices.get(f.name, f.type if not isinstance(f.type, str) else _TYPES[f.type])
        default = ... if f.default is dataclasses.MISSING else f.default
        spec[f.name] = (typ, Field(default, description=f.metadata["help"], **bounds.get(f.name, {})))
    return create_model(cls.__name__, __config__=ConfigDict(extra="forbid"), **spec)


# annotations are strings under `from __future__ import annotations`: the ones remote fields use
_TYPES: dict[str, Any] = {"str": str, "str | None": str | None, "int": int, "bool": bool,
                          "tuple[str, ...] | None": list[str] | None}
