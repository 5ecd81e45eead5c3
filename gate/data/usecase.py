"""The `gate check` use case: run a contract's checks over a dataset, write the reports, record the run.

Why in the core and not in gate/commands: the CLI and the service's job worker both run it, and the service must
never import a command (a command prints; nothing may print from a service thread). It returns the run and the exit
code; the command prints them (gate.report.terminal), the service stores a summary in its job.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from gate.data.runner import CheckRun
from gate.errors import ExitCode
from gate.requests import CheckRequest


def exit_code_for(run: CheckRun, fail_on: str = "error") -> int:
    if fail_on == "never":
        return ExitCode.PASS
    # a check that failed on the pull request's base already, with nothing new, is a warning that never fails the
    # change (gate.data.novelty); `--fail-on-existing` keeps it a failure
    statuses = {r.status for r in run.results if not r.details.get("existing_only")}
    if "fail" in statuses or (fail_on == "warning" and "warn" in statuses):
        return ExitCode.GATE_FAILED
    return ExitCode.PASS


def check_dataset(req: CheckRequest, *, progress: bool | None = None, base_check: Any = None,
                  trust_ref: str | None = None) -> tuple[CheckRun, int]:
    """The core of `gate check` without any terminal output: the CLI and the service's jobs both run this.

    `base_check` (a gate.data.novelty.BaseCheck, in a pull-request run): every finding is marked new or existing
    against it before the verdict, the reports and the record. `snippets="none"`: no finding carries any context
    into the reports or the record (the masked default is built by the checks, see gate.pii.redact).

    `trust_ref` (a pull-request run; `--base` implies it): the rules come from the contract at that ref, and every
    loosening of it is a failing `contract_change` finding unless `allow_contract_change` (gate.contract.trust)."""
    from contextlib import nullcontext

    from gate.contract import load_contract
    from gate.contract.model import TokenizerRef
    from gate.contract.trust import trusted_contract

    _preconditions(req.report_dir, req.db if req.record else None, req.record)  # before any work or output
    ref = trust_ref if trust_ref is not None else req.base
    trust = (trusted_contract(req.contract, req.dataset, ref, allow_change=req.allow_contract_change,
                              tokenizer=req.tokenizer) if ref is not None else nullcontext(None))
    checks = list(req.checks) if req.checks is not None else None
    with trust as trusted:  # the base's evaluation sets stay readable while the checks run
        if trusted is not None:
            contract, change = trusted.contract, trusted.result
        else:
            contract, change = load_contract(req.contract), None
            if req.tokenizer:  # the command line names the model's tokenizer: it replaces the contract's
                contract = dataclasses.replace(contract, tokenizer=TokenizerRef(req.tokenizer))
        run = _run(req.dataset, contract, checks=checks, workers=req.workers, progress=progress, engine=req.engine,
                   address=req.address, base=req.base, index=req.index, snippets=req.snippets != "none")
    if change is not None:
        run.results.insert(0, change)
    return _finish(run, report_dir=req.report_dir, db=req.db, record=req.record, fail_on=req.fail_on,
                   max_examples=req.max_examples, base_check=base_check, fail_on_existing=req.fail_on_existing,
                   snippets=req.snippets)


def _run(dataset: str, contract: Any, *, checks: list[str] | None, workers: int | None, progress: bool | None,
         engine: str, address: str | None, base: str | None, index: str | None, snippets: bool = True) -> CheckRun:
    """`snippets=False`: the checks build none (`_finish` still drops what an incremental run's checks built)."""
    from gate.data.runner import run_checks

    if base is not None:  # incremental: the rows changed since the git ref, against the dataset's index
        from gate.index.incremental import run_incremental

        return run_incremental(dataset, contract, base, index_dir=index, checks=checks, workers=workers)
    return run_checks(dataset, contract, checks=checks, workers=workers, progress=progress, engine=engine,
                      address=address, snippets=snippets)


def _finish(run: CheckRun, *, report_dir: str, db: str | None, record: bool, fail_on: str, max_examples: int,
            base_check: Any, fail_on_existing: bool, snippets: str) -> tuple[CheckRun, int]:
    """Novelty, verdict, reports and record of a finished run."""
    from gate.report.check_report import write_reports

    if snippets == "none":
        _drop_snippets(run)
    if base_check is not None:
        from gate.data.novelty import mark

        mark(run, base_check, fail_on_existing=fail_on_existing)
    code = exit_code_for(run, fail_on)
    from gate.report.sanitize import sanitize_run

    sanitize_run(run)  # every output below (reports, record, terminal, service, pages) reads the masked run

    def commit() -> None:  # inside the reports' atomic write: a failed record leaves no report behind
        if record:
            from gate.store.db import db_path, record_check_run

            record_check_run(run, int(code), db)
            run.options["db"] = db_path(db)

    write_reports(run, report_dir, max_examples, before_commit=commit)
    return run, int(code)


def _preconditions(report_dir: str, db: str | None, record: bool) -> None:
    """Refuses, before the checks run, outputs that cannot be written: a report directory that is a file (the
    atomic write would replace it), a record whose directory is missing or read-only, or whose path is a
    directory. Nothing is created here (bad input must leave no database behind); what only opening can tell (a
    lock, a damaged file) fails inside the reports' atomic write, which then leaves no report."""
    import os
    from pathlib import Path

    from gate.errors import GateError
    from gate.store.db import db_path

    if Path(report_dir).exists() and not Path(report_dir).is_dir():
        raise GateError("the report directory is a file; give a directory (-o)", file=report_dir)
    if not record:
        return
    target = Path(db_path(db))
    parent = target.parent if str(target.parent) else Path(".")
    if target.is_dir():
        raise GateError("cannot open the gate database (it is a directory)", file=str(target))
    if not parent.is_dir():
        raise GateError("cannot open the gate database (its directory does not exist)", file=str(target))
    if not os.access(parent, os.W_OK | os.X_OK) or (target.exists() and not os.access(target, os.R_OK | os.W_OK)):
        raise GateError("cannot open the gate database (not writable)", file=str(target))


def _drop_snippets(run: CheckRun) -> None:
    """`--snippets none`: every finding's snippet and every snippet a check put in its details (boilerplate's
    repeated segments) removed, before anything is written."""
    def strip(obj: Any) -> Any:
        if isinstance(obj, dict):
            return {k: strip(v) for k, v in obj.items() if k != "snippet"}
        if isinstance(obj, list):
            return [strip(v) for v in obj]
        return obj

    for res in run.results:
        res.findings[:] = [dataclasses.replace(f, snippet=None) for f in res.findings]
        res.details = strip(res.details)
