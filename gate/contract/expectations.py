"""Column-level and distribution rules of a contract, compiled to great-expectations and run in ephemeral mode.

A field's `pattern` is matched by RE2 (gate.contract.patterns), not by great-expectations' own regex expectation
(pandas `str.contains`, Python's backtracking `re`): each value's match (search, as before) becomes a column
that an in-set expectation reads, so great-expectations still counts, indexes and reports the failures.

great-expectations is imported here and only here, when the first dataset is validated, so `gate --help`
stays fast. The context is ephemeral: no files, no network, no analytics.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from gate.contract.model import Contract


@dataclass(frozen=True)
class ColumnRule:
    """One expectation and the contract rule name its failures are reported under."""

    rule: str
    column: str
    kind: str  # not_null | in_set | unique | regex | lengths
    kwargs: tuple[tuple[str, Any], ...] = ()


def compile_rules(contract: Contract) -> list[ColumnRule]:
    rules: list[ColumnRule] = []
    for f in contract.fields:
        if f.required:
            mostly = 1.0 - (f.max_null_rate or 0.0)
            rules.append(ColumnRule("field.required", f.name, "not_null", (("mostly", mostly),)))
        elif f.max_null_rate is not None:
            rules.append(ColumnRule("field.null_rate", f.name, "not_null", (("mostly", 1.0 - f.max_null_rate),)))
        if f.allowed is not None:
            rules.append(ColumnRule("field.allowed", f.name, "in_set", (("value_set", list(f.allowed)),)))
        if f.unique:
            rules.append(ColumnRule("field.unique", f.name, "unique"))
        if f.pattern:
            rules.append(ColumnRule("field.pattern", f.name, "regex", (("regex", f.pattern),)))
        if f.min_length is not None or f.max_length is not None:
            rules.append(ColumnRule("field.length", f.name, "lengths",
                                    (("min_value", f.min_length), ("max_value", f.max_length))))
    declared = {f.name for f in contract.fields}
    if contract.sources is not None and "source" in declared:
        rules.append(ColumnRule("source.allowed", "source", "in_set", (("value_set", list(contract.sources)),)))
    if contract.languages is not None and "language" in declared:
        rules.append(ColumnRule("language.allowed", "language", "in_set",
                                (("value_set", list(contract.languages)),)))
    return rules


def columns_needed(rules: list[ColumnRule]) -> list[str]:
    return sorted({r.column for r in rules})


@dataclass
class RuleOutcome:
    rule: ColumnRule
    success: bool
    unexpected_index: list[int]
    unexpected_count: int
    element_count: int
    error: str | None = None


def _expectation(gx: Any, r: ColumnRule) -> Any:
    kw = dict(r.kwargs)
    if r.kind == "not_null":
        return gx.expectations.ExpectColumnValuesToNotBeNull(column=r.column, mostly=kw.get("mostly", 1.0))
    if r.kind == "in_set":
        return gx.expectations.ExpectColumnValuesToBeInSet(column=r.column, value_set=kw["value_set"])
    if r.kind == "unique":
        return gx.expectations.ExpectColumnValuesToBeUnique(column=r.column)
    if r.kind == "regex":
        return gx.expectations.ExpectColumnValuesToBeInSet(column=_matched_column(r.column), value_set=[True])
    if r.kind == "lengths":
        return gx.expectations.ExpectColumnValueLengthsToBeBetween(
            column=r.column, min_value=kw.get("min_value"), max_value=kw.get("max_value"))
    raise ValueError(r.kind)


def _matched_column(column: str) -> str:
    return f"__re2_match__{column}"


def _add_matches(rules: list[ColumnRule], frame: Any) -> Any:
    """The frame with, per regex rule, whether RE2 finds the pattern in each value (as text; None stays None,
    and great-expectations skips it as it skipped the null before)."""
    from gate.contract.patterns import compile_pattern

    regex_rules = [r for r in rules if r.kind == "regex"]
    if not regex_rules:
        return frame
    frame = frame.copy(deep=False)
    for r in regex_rules:
        rx = compile_pattern(dict(r.kwargs)["regex"])
        frame[_matched_column(r.column)] = [
            None if v is None or v != v else rx.search(v if isinstance(v, str) else str(v)) is not None
            for v in frame[r.column].tolist()]
    return frame


_CONTEXT: list[Any] = []  # one ephemeral context and pandas datasource per process, created on first use


def _datasource() -> Any:
    if not _CONTEXT:
        os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
        import great_expectations as gx
        import tqdm

        # GX builds a (disabled) tqdm bar per validation, and tqdm starts a monitor thread for the first one; a
        # live thread stops the PII check's workers from forking later in the run (gate/io/forking.py)
        tqdm.tqdm.monitor_interval = 0
        from great_expectations.data_context.types.base import (
            DataContextConfig,
            InMemoryStoreBackendDefaults,
            ProgressBarsConfig,
        )

        ctx = gx.get_context(mode="ephemeral", project_config=DataContextConfig(
            store_backend_defaults=InMemoryStoreBackendDefaults(),
            progress_bars=ProgressBarsConfig(globally=False)))
        _CONTEXT.append(ctx.data_sources.add_pandas("gate"))
    return _CONTEXT[0]


def run_rules(rules: list[ColumnRule], frame: Any) -> list[RuleOutcome]:
    """Validates a pandas frame (one row per dataset row) against the compiled rules with great-expectations."""
    if not rules or len(frame) == 0:
        return []
    import uuid

    import great_expectations as gx

    frame = _add_matches(rules, frame)
    source = _datasource()
    asset_name = f"rows-{uuid.uuid4().hex[:12]}"
    asset = source.add_dataframe_asset(name=asset_name)
    batch = asset.add_batch_definition_whole_dataframe("all").get_batch(batch_parameters={"dataframe": frame})
    suite = gx.ExpectationSuite(name="contract", expectations=[_expectation(gx, r) for r in rules])
    result = batch.validate(suite, result_format={"result_format": "COMPLETE", "partial_unexpected_count": 0,
                                                  "include_unexpected_rows": False})
    # great-expectations does not keep the suite's order in its results: match them by type and column.
    by_key = {(res.expectation_config.type, res.expectation_config.kwargs.get("column")): res
              for res in result.results}
    outcomes = []
    for r, exp in zip(rules, suite.expectations, strict=True):
        res = by_key[(exp.expectation_type, _matched_column(r.column) if r.kind == "regex" else r.column)]
        info = res.result or {}
        exc = res.exception_info or {}
        error = exc.get("exception_message") if exc.get("raised_exception") else None
        outcomes.append(RuleOutcome(
            rule=r, success=bool(res.success), unexpected_index=[int(i) for i in info.get("unexpected_index_list")
                                                                  or []],
            unexpected_count=int(info.get("unexpected_count") or 0), element_count=int(info.get("element_count")
                                                                                      or 0),
            error=error))
    source.delete_asset(asset_name)
    return outcomes
