"""`gate check` on the terminal: the use case (gate.data.usecase: run the checks, write the reports, record the
run) and its result printed; returns the exit code."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from gate.commands.changed import changed_scope, check_units, pass_nothing_changed
from gate.contract import load_contract
from gate.data.usecase import check_dataset


def run_check_command(*, dataset: str, contract_path: str, report_dir: str, checks: list[str] | None,
                      db: str | None, record: bool, workers: int | None, fail_on: str, max_examples: int,
                      quiet: bool, tokenizer: str | None = None, changed_since: str | None = None,
                      engine: str = "local", address: str | None = None, base: str | None = None,
                      index: str | None = None, base_check: Any = None, fail_on_existing: bool = False,
                      snippets: str = "masked", trust_ref: str | None = None,
                      allow_contract_change: bool = False) -> int:
    from gate.report.check_report import github_annotations

    if changed_since is not None:
        return run_changed_check(dataset=dataset, ref=changed_since, contract_path=contract_path,
                                 report_dir=report_dir, checks=checks, db=db, record=record, workers=workers,
                                 fail_on=fail_on, max_examples=max_examples, quiet=quiet, tokenizer=tokenizer,
                                 fail_on_existing=fail_on_existing, snippets=snippets,
                                 allow_contract_change=allow_contract_change)
    if os.environ.get("GATE_URL"):  # a shared service is the writer: submit the check there and wait for it
        import sys

        from gate.errors import ExitCode
        from gate.service.client import remote_check, unsent_options

        if trust_ref is not None and not allow_contract_change:  # a pull-request run: never send a loosening
            _refuse_remote_loosening(contract_path, dataset, trust_ref, tokenizer)
        options = {"checks": checks, "fail_on": fail_on, "max_examples": max_examples, "db": db, "record": record,
                   "workers": workers, "tokenizer": tokenizer, "engine": engine, "address": address, "base": base,
                   "index": index, "fail_on_existing": fail_on_existing, "snippets": snippets}
        refused = unsent_options(options)
        if refused:  # dropping them would answer another question than the one asked
            print(f"gate: error: the service (GATE_URL) cannot honour {', '.join(refused)}: run without GATE_URL, "
                  f"or without the option(s)", file=sys.stderr)
            return int(ExitCode.USAGE)
        return remote_check(dataset=dataset, contract_path=contract_path, report_dir=report_dir, quiet=quiet,
                            options=options)
    run, code = check_dataset(dataset=dataset, contract_path=contract_path, report_dir=report_dir, checks=checks,
                              db=db, record=record, workers=workers, fail_on=fail_on, max_examples=max_examples,
                              tokenizer=tokenizer, engine=engine, address=address, base=base, index=index,
                              base_check=base_check, fail_on_existing=fail_on_existing, snippets=snippets,
                              trust_ref=trust_ref, allow_contract_change=allow_contract_change)
    if os.environ.get("GITHUB_ACTIONS") == "true":
        for line in github_annotations(run):
            print(line)
    from gate.report.terminal import print_check_run

    print_check_run(run, report_dir, quiet=quiet)
    return code


def run_changed_check(*, dataset: str, ref: str, contract_path: str, report_dir: str, checks: list[str] | None,
                      db: str | None, record: bool, workers: int | None, fail_on: str, max_examples: int,
                      quiet: bool, tokenizer: str | None, fail_on_existing: bool = False,
                      snippets: str = "masked", allow_contract_change: bool = False) -> int:
    """Checks the datasets the change touches (gate.commands.changed), each against its own check at the
    merge-base with `ref` (every finding new or existing, gate.data.novelty)."""
    from gate.data.novelty import check_at_base

    scope = changed_scope(dataset, ref, contract_path, tokenizer)
    if not scope.units:
        return pass_nothing_changed(report_dir, dataset, ref)
    current = load_contract(contract_path)

    def one(unit: Path, out: str) -> int:
        base = check_at_base(unit, contract_path, ref=ref, root=scope.root, commit=scope.commit, current=current,
                             checks=checks, workers=workers, tokenizer=tokenizer)
        base.why = scope.why
        return run_check_command(dataset=str(unit), contract_path=contract_path, report_dir=out, checks=checks,
                                 db=db, record=record, workers=workers, fail_on=fail_on, max_examples=max_examples,
                                 quiet=quiet, tokenizer=tokenizer, base_check=base, fail_on_existing=fail_on_existing,
                                 snippets=snippets, trust_ref=ref, allow_contract_change=allow_contract_change)

    return check_units(scope, report_dir, ref, one)


def _refuse_remote_loosening(contract_path: str, dataset: str, ref: str, tokenizer: str | None) -> None:
    """The service checks with the contract it is sent: a pull request's contract that loosens the base's is
    refused here, before it is sent (gate.contract.trust; the local run would judge by the base's instead)."""
    from gate.contract.trust import trusted_contract
    from gate.errors import GateError

    with trusted_contract(contract_path, dataset, ref, tokenizer=tokenizer) as trusted:
        if trusted.result is not None and trusted.result.status == "fail":
            first = trusted.result.findings[0]
            raise GateError(f"{first.message}; the contract loosens `{ref}` and GATE_URL would judge by it: "
                            "unset GATE_URL, or --allow-contract-change for a reviewed change",
                            file=first.split, line=first.row, field=first.field)
