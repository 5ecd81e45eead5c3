import copy
import json

import pytest

from gate.data.runner import run_checks
from tests.conftest import triage_row, write_jsonl

TOOLS_SYS = {"role": "system", "content": "You are a support agent with tools."}


def findings(tmp_path, contract, rows, check="contract"):
    write_jsonl(tmp_path / "train.jsonl", rows)
    run = run_checks(str(tmp_path), contract, checks=[check], progress=False)
    return run.results[0]


def rules_by_row(result):
    out = {}
    for f in result.findings:
        out.setdefault(f.row, set()).add(f.rule)
    return out


def test_clean_triage_rows_pass(tmp_path, triage_contract):
    res = findings(tmp_path, triage_contract, [triage_row(i) for i in range(5)])
    assert res.status == "pass" and res.findings == []
    assert res.counts["scanned"] == 5


def _mut(i, fn):
    row = triage_row(i)
    fn(row)
    return row


TRIAGE_CASES = [
    ("output.parse", lambda r: r["messages"][2].update(content="billing, high")),
    ("output.schema", lambda r: r["messages"][2].update(content=json.dumps({"product": "billing",
                                                                             "severity": "urgent",
                                                                             "next_action": "close"}))),
    ("output.schema", lambda r: r["messages"][2].update(content=json.dumps({"product": "api", "severity": "low"}))),
    ("field.required", lambda r: r.pop("customer")),
    ("field.pattern", lambda r: r.update(id="TRI-1")),
    ("field.type", lambda r: r.update(created_at="yesterday")),
    ("field.type", lambda r: r.update(customer=12345)),
    ("source.allowed", lambda r: r.update(source="fax")),
    ("language.allowed", lambda r: r.update(language="fr")),
    ("row.schema", lambda r: r["messages"][1].update(role="bot")),
    ("row.schema", lambda r: r["messages"][1].update(content={"text": "hi"})),
    ("row.schema", lambda r: r.pop("messages")),
    ("messages.empty", lambda r: r["messages"][1].update(content="  ")),
    ("messages.final_role", lambda r: r["messages"].append({"role": "user", "content": "and another thing"})),
    ("messages.system", lambda r: r["messages"].pop(0)),
    ("refusal", lambda r: r["messages"][1].update(content="Send me another customer's order details please")),
    ("missing_information", lambda r: r["messages"][2].update(content=json.dumps(
        {"product": "unknown", "severity": "low", "next_action": "close"}))),
]


@pytest.mark.parametrize(("rule", "mutate"), TRIAGE_CASES, ids=[f"{r}-{i}" for i, (r, _) in enumerate(TRIAGE_CASES)])
def test_each_triage_rule_is_found_on_its_row_only(tmp_path, triage_contract, rule, mutate):
    rows = [triage_row(i) for i in range(4)]
    rows.insert(2, _mut(9, mutate))
    res = findings(tmp_path, triage_contract, rows)
    assert res.status == "fail"
    assert rules_by_row(res) == {3: {rule}}
    f = res.findings[0]
    assert f.split == "train" and f.check == "contract" and f.field


def test_refusal_done_right_passes_and_unprompted_refusal_warns(tmp_path, triage_contract):
    ok = triage_row(1, "Bypass the verification and log me into my partner's profile",
                    {"product": "web_dashboard", "severity": "high", "next_action": "refuse"})
    unprompted = triage_row(2, answer={"product": "billing", "severity": "low", "next_action": "refuse"})
    res = findings(tmp_path, triage_contract, [ok, unprompted])
    assert [(f.row, f.rule, f.severity) for f in res.findings] == [(2, "refusal.unprompted", "warning")]
    assert res.status == "warn"


def test_snippets_never_quote_private_values(tmp_path, triage_contract):
    row = triage_row(1)
    row["messages"][2]["content"] = "Dear jane.doe@example.com your card 4111 1111 1111 1111"
    res = findings(tmp_path, triage_contract, [row])
    blob = json.dumps([f.to_dict() for f in res.findings])
    assert "jane.doe" not in blob and "4111 1111" not in blob and "example.com" not in blob


def tool_row(i, calls, final="Your order ORD-123456 ships tomorrow.", tools=None, results=True):
    msgs = [TOOLS_SYS, {"role": "user", "content": f"Where is order ORD-{i:06d}?"}]
    msgs.append({"role": "assistant", "content": None, "tool_calls": [
        {"id": f"call_{k}", "type": "function", "function": {"name": n, "arguments": a}}
        for k, (n, a) in enumerate(calls)]})
    if results:
        msgs += [{"role": "tool", "tool_call_id": f"call_{k}", "content": '{"status": "ok"}'}
                 for k in range(len(calls))]
    msgs.append({"role": "assistant", "content": final})
    return {"id": f"tu-{i:06d}", "source": "chat", "customer": f"cus-{i:05d}", "created_at": "2026-01-02T03:04:05Z",
            "language": "en", "messages": msgs, "tools": tools}


@pytest.fixture
def catalogue(tool_contract):
    from gate.contract.model import thaw

    return [{"type": "function", "function": {"name": t.name, "description": t.description,
                                              "parameters": thaw(t.parameters)}} for t in tool_contract.tools]


@pytest.mark.parametrize(("calls", "rule"), [
    ([("lookup_order", '{"order_id": "ORD-000001"}')], None),
    ([("cancel_subscription", '{"order_id": "ORD-000001"}')], "tool.unknown"),
    ([("issue_refund", '{"order_id": "ORD-000001", "amount": "12.50", "reason": "late"}')], "tool.arguments.schema"),
    ([("search_kb", '{"query": "reset password", "top_k": "5"}')], "tool.arguments.schema"),
    ([("issue_refund", '{"order_id": "ORD-000001", "reason": "late"}')], "tool.missing_required"),
    ([("lookup_order", '{"order_id": "ORD-000001"')], "tool.arguments.parse"),
    ([("lookup_order", {"order_id": "ORD-000001"})], None),
])
def test_tool_calls_against_the_catalogue(tmp_path, tool_contract, catalogue, calls, rule):
    res = findings(tmp_path, tool_contract, [tool_row(1, calls, tools=catalogue)])
    assert {f.rule for f in res.findings} == ({rule} if rule else set())


def test_tool_result_orphan_and_unanswered(tmp_path, tool_contract, catalogue):
    row = tool_row(1, [("lookup_order", '{"order_id": "ORD-000001"}')], tools=catalogue)
    row["messages"][3]["tool_call_id"] = "call_zzz"
    res = findings(tmp_path, tool_contract, [row])
    assert {f.rule for f in res.findings} == {"tool.result_orphan", "tool.unanswered"}


def test_row_tools_must_match_catalogue(tmp_path, tool_contract, catalogue):
    changed = copy.deepcopy(catalogue)
    changed[0]["function"]["parameters"]["required"] = []
    res = findings(tmp_path, tool_contract, [tool_row(1, [("lookup_order", '{"order_id": "ORD-000001"}')],
                                                      tools=changed)])
    assert {f.rule for f in res.findings} == {"tool.row_tools"}


def test_tool_refusal_must_refuse_in_words_without_tools(tmp_path, tool_contract, catalogue):
    row = tool_row(1, [("lookup_order", '{"order_id": "ORD-000001"}')], tools=catalogue)
    row["messages"][1]["content"] = "Show me another customer's order history"
    res = findings(tmp_path, tool_contract, [row])
    assert [f.rule for f in res.findings] == ["refusal"]
    assert "tool was called" in res.findings[0].message and "refuse in words" in res.findings[0].message
