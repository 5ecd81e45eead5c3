"""`gate index build`: (re)build a dataset's index for incremental checks, and say what it holds."""

from __future__ import annotations

import dataclasses

from gate.contract import load_contract
from gate.contract.model import TokenizerRef
from gate.errors import ExitCode


def run_index_build(*, dataset: str, contract_path: str, index: str | None, workers: int | None,
                    db: str | None, record: bool, tokenizer: str | None = None) -> int:
    import typer

    from gate.index.build import build_index

    contract = load_contract(contract_path)
    if tokenizer:
        contract = dataclasses.replace(contract, tokenizer=TokenizerRef(tokenizer))
    manifest = build_index(dataset, contract, index, workers=workers)
    if record:
        from gate.store.index import record_index_event

        record_index_event(manifest, "build", rows_added=manifest.get("rows"), timings=manifest.get("timings"),
                           path=db)
    t = manifest["timings"]
    typer.echo(
        f"index {manifest['index_dir']}: {manifest['rows']:,} rows, {manifest['clusters']:,} near-duplicate "
        f"group(s), LSH {manifest['bands']}x{manifest['rows_per_band']}; built in {t['total']:.1f} s")
    return int(ExitCode.PASS)
