"""`gate apply`: write a corrected copy of a dataset from a reviewed corrections file, and record it. With GATE_URL
set, a job on the shared service instead (gate.service.remote): it records the corrections, the copy comes back."""

from __future__ import annotations

import os

from gate.errors import ExitCode
from gate.report.console import make_console
from gate.requests import ApplyRequest


def run_apply_command(req: ApplyRequest) -> int:
    if os.environ.get("GATE_URL"):  # a shared service is the writer: the copy is made and recorded there
        from gate.service.remote import refuse_unsent, remote_apply

        refused = refuse_unsent(req)
        return refused if refused is not None else remote_apply(req)
    from gate.contract import load_contract
    from gate.data.corrections import apply_corrections

    contract = load_contract(req.contract) if req.contract else None
    out = req.out
    outcome = apply_corrections(req.dataset, req.corrections, out, contract)
    console = make_console()
    m = outcome.manifest
    if outcome.noop:
        console.print(f"{out} already holds these {m.get('corrections', 0)} correction(s) of this input: nothing "
                      "written")
    else:
        reasons = ", ".join(f"{k} {v}" for k, v in sorted(m["by_reason"].items()))
        console.print(f"{m['corrections']} correction(s) applied to {m['rows_corrected']} row(s) ({reasons}) "
                      f"-> {out}/MANIFEST.json", markup=False, highlight=False)
    if req.record:
        from gate.store.corrections import record_apply

        record_apply(m, out, req.db)
    return int(ExitCode.PASS)
