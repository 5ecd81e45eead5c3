"""The peer: a plain great-expectations validation of the same expectations gate's contract check runs.

This is how a team would do it with great-expectations alone: load the JSONL into pandas, derive one column
per thing to validate, and run a suite with the built-in expectations (JSON Schema per row for structure,
answers and duplicates by uniqueness of the text). Prints a JSON line with counts.
"""

from __future__ import annotations

import json
import sys
import time

import pandas as pd


def main(path: str, contract_path: str) -> None:
    t0 = time.perf_counter()
    import great_expectations as gx
    from great_expectations.data_context.types.base import (
        DataContextConfig,
        InMemoryStoreBackendDefaults,
        ProgressBarsConfig,
    )

    from gate.contract import load_contract
    from gate.contract.model import thaw
    from gate.contract.rows import row_schema

    contract = load_contract(contract_path)
    df = pd.read_json(path, lines=True, dtype=False)
    df["structure"] = [json.dumps({"messages": m}) for m in df["messages"]]
    df["answer"] = [m[-1].get("content") if isinstance(m, list) and m else None for m in df["messages"]]
    df["text"] = [" ".join(x.get("content") or "" for x in m if x.get("role") in ("user", "assistant"))
                  for m in df["messages"]]
    t_load = time.perf_counter() - t0
    ctx = gx.get_context(mode="ephemeral", project_config=DataContextConfig(
        store_backend_defaults=InMemoryStoreBackendDefaults(), progress_bars=ProgressBarsConfig(globally=False)))
    batch = (ctx.data_sources.add_pandas("peer").add_dataframe_asset(name="rows")
             .add_batch_definition_whole_dataframe("all").get_batch(batch_parameters={"dataframe": df}))
    E = gx.expectations
    exps = []
    for f in contract.fields:
        if f.required:
            exps.append(E.ExpectColumnValuesToNotBeNull(column=f.name))
        if f.pattern:
            exps.append(E.ExpectColumnValuesToMatchRegex(column=f.name, regex=f.pattern))
        if f.unique:
            exps.append(E.ExpectColumnValuesToBeUnique(column=f.name))
    if contract.sources:
        exps.append(E.ExpectColumnValuesToBeInSet(column="source", value_set=list(contract.sources)))
    if contract.languages:
        exps.append(E.ExpectColumnValuesToBeInSet(column="language", value_set=list(contract.languages)))
    exps.append(E.ExpectColumnValuesToMatchJsonSchema(column="structure", json_schema=row_schema(contract)))
    if contract.output_schema is not None:
        exps.append(E.ExpectColumnValuesToMatchJsonSchema(column="answer", json_schema=thaw(contract.output_schema)))
    exps.append(E.ExpectColumnValuesToBeUnique(column="text"))
    res = batch.validate(gx.ExpectationSuite(name="peer", expectations=exps), result_format="SUMMARY")
    print(json.dumps({"rows": len(df), "load_seconds": round(t_load, 2), "success": bool(res.success),
                      "failed": [r.expectation_config.type for r in res.results if not r.success],
                      "seconds": round(time.perf_counter() - t0, 2)}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
