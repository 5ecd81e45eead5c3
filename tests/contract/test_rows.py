"""The fast structural pre-check must never accept a row that the row JSON Schema rejects."""

from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from gate.contract.rows import fast_row_check, row_schema

scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=5))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(st.text(max_size=4), inner, max_size=3)),
                      max_leaves=6)
function = st.fixed_dictionaries({}, optional={"name": st.one_of(st.text(max_size=6), values),
                                               "arguments": st.one_of(st.text(max_size=6),
                                                                      st.dictionaries(st.text(max_size=3), scalars),
                                                                      values)})
call = st.one_of(values, st.fixed_dictionaries({}, optional={"id": st.one_of(st.text(max_size=4), values),
                                                             "type": st.sampled_from(["function", "other", 1]),
                                                             "function": st.one_of(function, values)}))
message = st.one_of(values, st.fixed_dictionaries({}, optional={
    "role": st.sampled_from(["system", "user", "assistant", "tool", "bot", 3]),
    "content": st.one_of(st.text(max_size=6), st.none(), values,
                         st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=3)}))),
    "name": st.one_of(st.text(max_size=3), values), "tool_call_id": st.one_of(st.text(max_size=3), values),
    "reasoning_content": st.one_of(st.text(max_size=3), st.none(), values),
    "tool_calls": st.one_of(st.lists(call, max_size=2), values)}))
tool = st.one_of(values, st.fixed_dictionaries({}, optional={
    "type": st.sampled_from(["function", "x"]),
    "function": st.one_of(values, st.fixed_dictionaries({}, optional={
        "name": st.one_of(st.text(max_size=3), values), "description": st.one_of(st.text(max_size=3), values),
        "parameters": values}))}))
rows = st.fixed_dictionaries({}, optional={"messages": st.one_of(st.lists(message, max_size=4), values),
                                           "tools": st.one_of(st.lists(tool, max_size=2), values),
                                           "id": values, "extra": values})


@settings(max_examples=3000, deadline=None)
@given(rows)
def test_fast_check_never_accepts_an_invalid_row(triage_contract_module, row):
    contract = triage_contract_module
    fast = fast_row_check(contract)
    if fast(row):
        assert Draft202012Validator(row_schema(contract)).is_valid(row), row


@settings(max_examples=500, deadline=None)
@given(st.lists(st.fixed_dictionaries({"role": st.sampled_from(["system", "user", "assistant"]),
                                       "content": st.text(max_size=20)}), min_size=1, max_size=5))
def test_fast_check_accepts_plain_valid_rows(triage_contract_module, msgs):
    assert fast_row_check(triage_contract_module)({"messages": msgs})
