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

Split, scrub and decide have no service route: every field is `local`, and they run where the CLI runs. They are
requests all the same, so the CLI, the use case and any later face read one list of options. Check, review and
apply have a service route (POST /checks, POST /reviews, POST /corrections) and a remote client
(gate.service.remote): with GATE_URL set, the CLI sends the `remote` fields there and the job's reports come back
(an apply job's corrected copy through the shared filesystem: no route sends a dataset's rows).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

FAIL_ON = ("error", "warning", "never")
CHECK_ENGINES = ("local", "ray")
SNIPPET_MODES = ("masked", "none")

Where = Literal["remote", "client", "local"]


SCORE_ENGINES = ("embedded", "url", "vllm", "sglang")
# the domain lists the CLI offers as choices; the core modules take them from here (importing those modules would
# load yaml and orjson for every `gate --help`)
EXPORT_FORMATS = ("ms-swift", "nemo-automodel", "hf")
TRAIN_RUNNERS = ("local", "nemo-automodel", "ms-swift")


def _f(default: Any, where: Where, help: str, *, path: bool = False, flag: str | None = None,
       choices: tuple[str, ...] | None = None, ge: int | None = None, le: int | None = None) -> Any:
    """A field and where it can be honoured; `choices`, `ge` and `le` bound it in the service's body model too."""
    return field(default=default, metadata={"where": where, "help": help, "path": path, "flag": flag,
                                            "choices": choices, "ge": ge, "le": le})


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
    fail_on: str = _f("error", "remote", "Which check status fails the gate: " + ", ".join(FAIL_ON) + ".",
                      choices=FAIL_ON)
    max_examples: int = _f(10, "remote", "Findings shown per check in report.md.", ge=0, le=1000)
    snippets: str = _f("masked", "remote", "Context with each finding: masked or none.", choices=SNIPPET_MODES)
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
    limits: tuple[str, ...] | None = _f(None, "local", "NAME=N ceilings on the work one input may cause (the service "
                                                       "keeps its own).", flag="--limit")

    def __post_init__(self) -> None:
        for name in ("checks", "limits"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, tuple):
                object.__setattr__(self, name, tuple(value))

    def with_(self, **changes: Any) -> CheckRequest:
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class ScoreRequest:
    """`gate score CANDIDATE -s SCORECARD ...`: score the candidate (and a baseline) on a scorecard, then decide.

    Model paths are confined to the service's roots unless `engine` is url (then they are served model names)."""

    candidate: str = _f(dataclasses.MISSING, "remote", "Model directory (under a root), or a served model name for "
                                                       "engine=url.")
    scorecard: str = _f(dataclasses.MISSING, "remote", "Scorecard YAML (under a root).", path=True,
                        flag="--scorecard")
    baseline: str | None = _f(None, "remote", "Frozen baseline, asked the same way.")
    engine: str = _f("embedded", "remote", "How the models are served: " + ", ".join(SCORE_ENGINES) + ".",
                     choices=SCORE_ENGINES)
    adapter: str | None = _f(None, "remote", "LoRA adapter of the candidate.")
    base_url: str | None = _f(None, "remote", "Server for engine=url; replicas of one model comma-separated.")
    epoch: int = _f(0, "remote", "Cache epoch: bump to ask again.", ge=0)
    limit: int | None = _f(None, "remote", "First N items of each suite.", ge=1)
    tool_parser: str | None = _f(None, "remote", "vLLM/SGLang tool-call parser for tool scorecards.")
    reasoning_parser: str | None = _f(None, "remote", "vLLM/SGLang reasoning parser.")
    baseline_adapter: str | None = _f(None, "remote", "LoRA adapter of the baseline.")
    chat_template: str | None = _f(None, "remote", "Chat template file for both models (under a root).", path=True)
    model_hash: str | None = _f(None, "remote", "engine=url: pinned checkpoint hash of the candidate (cache key).")
    baseline_model_hash: str | None = _f(None, "remote", "engine=url: pinned hash of the baseline.")
    concurrency: int = _f(8, "remote", "Requests in flight per server.", ge=1, le=1024)
    strict: bool = _f(False, "remote", "Scorecard warnings are errors.")
    out: str = _f("gate-report/score", "client", "Where scores.json and scores.md go.", flag="--out")
    quiet: bool = _f(False, "client", "Only the verdict and report lines.")
    db: str | None = _f(None, "local", "DuckDB record and response cache (the service writes its own).")
    scorecard_base: str | None = _f(None, "local", "The gates come from the scorecard at this git ref.",
                                    flag="--base")
    allow_scorecard_change: bool = _f(False, "local", "Judge by this tree's scorecard where it loosens the base's.")

    def with_(self, **changes: Any) -> ScoreRequest:
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class SplitRequest:
    """`gate split DATASET --contract C --out O`: whole groups to train/val/test by a stable hash."""

    dataset: str = _f(dataclasses.MISSING, "local", "Dataset to split (all its rows are reassigned).")
    contract: str = _f(dataclasses.MISSING, "local", "Data contract YAML (its group_key).")
    out: str = _f(dataclasses.MISSING, "local", "Output directory (written atomically).")
    ratios: tuple[float, ...] = _f((0.8, 0.1, 0.1), "local", "Target shares, in the order of names.")
    names: tuple[str, ...] = _f(("train", "val", "test"), "local", "Split names.")
    salt: str = _f("gate-split-v1", "local", "Changes every assignment at once.")
    drop_ungrouped: bool = _f(False, "local", "Leave out rows without a group key instead of failing.")


@dataclass(frozen=True)
class ScrubRequest:
    """`gate scrub DATASET --contract C --out O`: a copy without personal data, secrets and duplicates."""

    dataset: str = _f(dataclasses.MISSING, "local", "Dataset to scrub (read only).")
    contract: str = _f(dataclasses.MISSING, "local", "Data contract YAML (its scrub section).")
    out: str = _f(dataclasses.MISSING, "local", "Output directory (written atomically).")


@dataclass(frozen=True)
class ApplyRequest:
    """`gate apply DATASET CORRECTIONS --out O`: reviewed corrections, each with its reason, onto a copy."""

    dataset: str = _f(dataclasses.MISSING, "remote", "Dataset to correct (read only; JSONL splits).", path=True)
    corrections: str = _f(dataclasses.MISSING, "remote", "corrections.jsonl.", path=True)
    out: str = _f(dataclasses.MISSING, "client", "Output directory (written atomically, all or nothing; through the "
                                                 "service, the copy it wrote in the job's directory is copied here).")
    contract: str | None = _f(None, "remote", "Data contract YAML (its rules, for `reason: rule:<id>`).", path=True)
    db: str | None = _f(None, "local", "DuckDB record to write.")
    record: bool = _f(True, "local", "Record the corrections.", flag="--no-db")


@dataclass(frozen=True)
class DecideRequest:
    """`gate decide --scorecard S`: PROMOTE or BLOCK from paired scores in the record."""

    scorecard: str = _f(dataclasses.MISSING, "local", "Scorecard YAML whose gates decide.")
    out: str = _f("gate-report/decision", "local", "Where decision.md and decision.json go.")
    db: str | None = _f(None, "local", "DuckDB record to read and write.")
    comparison: str | None = _f(None, "local", "comparison_id of one `gate score` run; default the newest.")
    baseline_run: str | None = _f(None, "local", "Baseline score run id.")
    candidate_run: str | None = _f(None, "local", "Candidate score run id.")
    aa: bool = _f(False, "local", "A/A mode: measure the noise floor.")
    baseline_only: str | None = _f(None, "local", "Check this one run against the absolute gates.")
    seed: int | None = _f(None, "local", "Bootstrap seed.")
    resamples: int | None = _f(None, "local", "Bootstrap resamples.")
    quiet: bool = _f(False, "local", "Only the verdict line.")
    scorecard_base: str | None = _f(None, "local", "The gates come from the scorecard at this git ref.",
                                    flag="--base")
    allow_scorecard_change: bool = _f(False, "local", "Judge by this tree's scorecard where it loosens the base's.")


@dataclass(frozen=True)
class ReviewRequest:
    """`gate review DATASET --contract C [--model M]`: the hard-case queue a reviewer reads first."""

    dataset: str = _f(dataclasses.MISSING, "remote", "Dataset whose training rows are reviewed (read only).",
                      path=True)
    contract: str = _f(dataclasses.MISSING, "remote", "Data contract YAML (its checks and their options).", path=True)
    model: str | None = _f(None, "remote", "Model to ask (the baseline or a candidate); none: check findings only.")
    engine: str = _f("embedded", "remote", "How the model is run: " + ", ".join(SCORE_ENGINES) + ".",
                     choices=SCORE_ENGINES)
    base_url: str | None = _f(None, "remote", "OpenAI-compatible server (--engine url).")
    scorecard: str | None = _f(None, "remote", "Scorecard whose system prompt, tools and decoding the model gets.",
                               flag="--scorecard", path=True)
    out: str = _f("gate-report/review", "client", "Where review.jsonl and review.html go.")
    top: int = _f(100, "remote", "Most model disagreements listed (the most confident first).", ge=0, le=100_000)
    limit: int | None = _f(None, "remote", "Ask the model about the first N training rows only.")
    checks: tuple[str, ...] | None = _f(None, "remote", "The checks whose findings join the queue; default all.")
    db: str | None = _f(None, "local", "DuckDB record to write.")
    record: bool = _f(True, "local", "Record the queue.", flag="--no-db")
    quiet: bool = _f(False, "client", "No table, only the summary lines.")

    def __post_init__(self) -> None:
        if self.checks is not None and not isinstance(self.checks, tuple):
            object.__setattr__(self, "checks", tuple(self.checks))


# every request and the command that builds it: the test that walks each field through the CLI reads this
REQUESTS: dict[str, type] = {"check": CheckRequest, "score": ScoreRequest, "split": SplitRequest,
                             "scrub": ScrubRequest, "apply": ApplyRequest, "decide": DecideRequest,
                             "review": ReviewRequest}


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

    spec: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        meta = f.metadata
        if meta["where"] != "remote":
            continue
        typ = Literal[meta["choices"]] if meta["choices"] else (  # type: ignore[valid-type]
            f.type if not isinstance(f.type, str) else _TYPES[f.type])
        default = ... if f.default is dataclasses.MISSING else f.default
        bounds = {k: meta[k] for k in ("ge", "le") if meta[k] is not None}
        spec[f.name] = (typ, Field(default, description=meta["help"], **bounds))
    return create_model(cls.__name__, __config__=ConfigDict(extra="forbid"), **spec)


# annotations are strings under `from __future__ import annotations`: the ones remote fields use
_TYPES: dict[str, Any] = {"str": str, "str | None": str | None, "int": int, "int | None": int | None, "bool": bool,
                          "tuple[str, ...] | None": list[str] | None}
