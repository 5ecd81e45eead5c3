"""`gate apply`: write a corrected copy of a dataset from a reviewed corrections file, and record it."""

from __future__ import annotations

from gate.errors import ExitCode
from gate.report.console import make_console
from gate.requests import ApplyRequest


def run_apply_command(req: ApplyRequest) -> int:
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
