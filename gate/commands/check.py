"""`gate check`: run the data checks, write the reports, record the run, return the exit code."""

from __future__ import annotations

import dataclasses
import os

from gate.contract import load_contract
from gate.contract.model import TokenizerRef
from gate.data.runner import CheckRun, run_checks
from gate.errors import ExitCode


def exit_code_for(run: CheckRun, fail_on: str = "error") -> int:
    if fail_on == "never":
        return ExitCode.PASS
    statuses = {r.status for r in run.results}
    if "fail" in statuses or (fail_on == "warning" and "warn" in statuses):
        return ExitCode.GATE_FAILED
    return ExitCode.PASS


def run_check_command(*, dataset: str, contract_path: str, report_dir: str, checks: list[str] | None,
                      db: str | None, record: bool, workers: int | None, fail_on: str, max_examples: int,
                      quiet: bool, tokenizer: str | None = None) -> int:
    from gate.report.check_report import github_annotations, write_reports

    contract = load_contract(contract_path)
    if tokenizer:  # the command line names the model's tokenizer: it replaces the contract's
        contract = dataclasses.replace(contract, tokenizer=TokenizerRef(tokenizer))
    run = run_checks(dataset, contract, checks=checks, workers=workers)
    code = exit_code_for(run, fail_on)
    write_reports(run, report_dir, max_examples)
    if record:
        from gate.store.db import db_path, record_check_run

        record_check_run(run, int(code), db)
        run.options["db"] = db_path(db)
    if os.environ.get("GITHUB_ACTIONS") == "true":
        for line in github_annotations(run):
            print(line)
    from gate.report.terminal import print_check_run

    print_check_run(run, report_dir, quiet=quiet)
    return int(code)
