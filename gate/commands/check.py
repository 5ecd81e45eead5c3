"""`gate check` on the terminal: the use case (gate.data.usecase: run the checks, write the reports, record the
run) and its result printed; returns the exit code."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from gate.commands.changed import changed_scope, check_units, full_check_reason, pass_nothing_changed
from gate.contract import load_contract
from gate.data.usecase import check_dataset
from gate.requests import CheckRequest


def run_check_command(req: CheckRequest, *, base_check: Any = None, trust_ref: str | None = None) -> int:
    from gate.io import limits
    from gate.report.check_report import github_annotations

    limits.set_for_command(limits.parse_overrides(list(req.limits or ())))  # this command's context only (cli.main)
    if req.changed_since is not None:
        return run_changed_check(req)
    if os.environ.get("GATE_URL"):  # a shared service is the writer: submit the check there and wait for it
        from gate.service.remote import refuse_unsent, remote_check

        if trust_ref is not None and not req.allow_contract_change:  # a pull-request run: never send a loosening
            _refuse_remote_loosening(req.contract, req.dataset, trust_ref, req.tokenizer)
        refused = refuse_unsent(req)
        return refused if refused is not None else remote_check(req)
    run, code = check_dataset(req, base_check=base_check, trust_ref=trust_ref)
    if os.environ.get("GITHUB_ACTIONS") == "true":
        for line in github_annotations(run):
            print(line)
    from gate.report.terminal import print_check_run

    print_check_run(run, req.report_dir, quiet=req.quiet)
    return code


def run_changed_check(req: CheckRequest) -> int:
    """Checks the datasets the change touches (gate.commands.changed). With `req.base` (the action's default),
    each incrementally: only its added or edited rows, duplicates and leakage against its index, the rules from
    the contract at `req.base` (one pass over the change instead of two over the dataset). Otherwise, or where the
    incremental path cannot answer the question (full_check_reason, said in the report), each whole and against
    its own check at the merge-base with `req.changed_since` (every finding new or existing, gate.data.novelty)."""
    from gate.data.novelty import check_at_base

    ref = req.changed_since
    assert ref is not None
    scope = changed_scope(req.dataset, ref, req.contract, req.tokenizer)
    if not scope.units:
        return pass_nothing_changed(req.report_dir, req.dataset, ref)
    current = load_contract(req.contract)
    checks = list(req.checks) if req.checks is not None else None

    def one(unit: Path, out: str) -> int:
        full_because = full_check_reason(unit, scope, fail_on_existing=req.fail_on_existing)
        if req.base is not None and not full_because:
            return run_check_command(req.with_(dataset=str(unit), report_dir=out, changed_since=None))
        base = check_at_base(unit, req.contract, ref=ref, root=scope.root, commit=scope.commit, current=current,
                             checks=checks, workers=req.workers, tokenizer=req.tokenizer)
        base.why = scope.why
        if req.base is not None:  # asked for the incremental path and did not get it: say why
            base.full_because = full_because
        return run_check_command(req.with_(dataset=str(unit), report_dir=out, changed_since=None, base=None),
                                 base_check=base, trust_ref=ref)

    from gate.errors import GateError

    try:
        return check_units(scope, req.report_dir, ref, one)
    except GateError as exc:  # the units are absolute paths; the pull request's comment quotes this line
        if exc.file and Path(exc.file).is_absolute() and Path(exc.file).is_relative_to(Path.cwd()):
            exc.file = str(Path(exc.file).relative_to(Path.cwd()))
        raise


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
