"""The `template` and `length` checks end to end: the fixtures, the command line, workers, reports, contracts."""

from __future__ import annotations

import dataclasses
import json

import pytest

from gate.contract import load_contract
from gate.data.runner import run_checks
from gate.errors import ContractError, GateError
from tests.conftest import CONTRACTS, FIXTURES, gate_inprocess, write_jsonl
from tests.template.conftest import CONVERSATION, TOKENIZERS, WEATHER_TOOL, ref, tokenizer_copy

ONLY = ["template", "length"]

# the CLI tests call the entry point in-process, in run_gate's environment (CI=true, no GITHUB_ACTIONS)
pytestmark = pytest.mark.usefixtures("run_gate_env")


def _with(contract, name_or_ref):
    tok = ref(name_or_ref) if isinstance(name_or_ref, str) else name_or_ref
    return dataclasses.replace(contract, tokenizer=tok)


def _faults(kind, checks=ONLY):
    faults = json.loads((FIXTURES / f"{kind}-faulty" / "FAULTS.json").read_text())
    return {(f["check"], f["split"], f["row"]) for f in faults if f["check"] in checks}


def test_without_a_tokenizer_the_template_check_is_skipped(tool_contract):
    run = run_checks(str(FIXTURES / "tool-use-faulty"), tool_contract, checks=ONLY, progress=False)
    template, length = run.results
    assert template.status == "skipped" and not template.findings
    assert "tokens" not in length.details
    assert "limits.max_tokens not checked: no tokenizer configured" in length.details["report_lines"]
    # without tokens, only the character faults of `length` are found
    faults = json.loads((FIXTURES / "tool-use-faulty" / "FAULTS.json").read_text())
    chars = {(f["split"], f["row"]) for f in faults if f["check"] == "length" and not f["note"].startswith("length.t")}
    assert {(f.split, f.row) for f in length.findings} == chars


def test_cli_with_glm_tokenizer_reports_exactly_the_planted_faults(tmp_path):
    rep = tmp_path / "rep"
    res = gate_inprocess("check", str(FIXTURES / "tool-use-faulty"), "-c", str(CONTRACTS / "tool-use.yaml"),
                         "--tokenizer", str(TOKENIZERS / "glm-tiny"), "--checks", ",".join(ONLY), "--no-db", "-o",
                         str(rep), split=True)
    assert res.returncode == 100, res.stderr
    report = json.loads((rep / "report.json").read_text())
    assert {(f["check"], f["split"], f["row"]) for f in report["findings"]} == _faults("tool-use")
    rules = {f["rule"] for f in report["findings"] if f["check"] == "template"}
    assert rules == {"template.render_error", "template.reasoning_dropped", "template.stop", "template.tool_roundtrip",
                     "template.control_tokens"}
    assert any(f["rule"] == "length.tokens" for f in report["findings"])
    md = (rep / "report.md").read_text()
    assert "`glm-tiny`" in md and "recommended sequence length" in md and "length_tokens.png" in md
    assert (rep / "length_tokens.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    template = next(c for c in report["checks"] if c["name"] == "template")
    assert template["details"]["tokenizer"]["tool_format"] == "glm47"
    assert template["details"]["mask"] == "prefix" and template["details"]["stop_policy"] == "next_role"


@pytest.mark.parametrize("tokenizer", ["glm-tiny", "chatml-tiny"])
@pytest.mark.parametrize("kind", ["triage", "tool-use"])
def test_clean_datasets_pass_with_both_tokenizers(kind, tokenizer):
    c = _with(load_contract(CONTRACTS / f"{kind}.yaml"), tokenizer)
    run = run_checks(str(FIXTURES / f"{kind}-clean"), c, checks=ONLY, progress=False)
    assert [(f.check, f.split, f.row, f.rule, f.message) for r in run.results for f in r.findings] == []
    template, length = run.results
    assert template.status == "pass" and template.counts["rendered"] == 540
    assert length.details["sequence_length"]["seq_length"] > 100
    assert 0 < template.details["loss_share"] < 0.5


@pytest.mark.forks
def test_workers_find_the_same_as_one_process(tool_contract):
    c = _with(tool_contract, "glm-tiny")
    one = run_checks(str(FIXTURES / "tool-use-faulty"), c, checks=ONLY, progress=False, workers=1)
    two = run_checks(str(FIXTURES / "tool-use-faulty"), c, checks=ONLY, progress=False, workers=2,
                     min_parallel_bytes=0, chunk_bytes=64 << 10)
    assert two.options["workers"] == 2
    for a, b in zip(one.results, two.results, strict=True):
        assert [f.to_dict() for f in a.findings] == [f.to_dict() for f in b.findings]
        assert a.counts == b.counts
    assert one.results[1].details["tokens"] == two.results[1].details["tokens"]


def test_length_statistics_and_recommended_sequence_length(tmp_path, tool_contract):
    rows = []
    for i in range(100):
        msgs = json.loads(json.dumps(CONVERSATION))
        msgs[4]["content"] = "It is 20C. " + "Sunny and mild. " * (i // 10)  # ten length groups
        rows.append({"id": f"r{i:03d}", "messages": msgs, "tools": [WEATHER_TOOL]})
    write_jsonl(tmp_path / "ds" / "train.jsonl", rows)
    c = dataclasses.replace(_with(tool_contract, "glm-tiny"), limits={"max_tokens": 10_000},
                            check_options={"length": {"cover": 0.9, "multiple_of": 8}})
    run = run_checks(str(tmp_path / "ds"), c, checks=["length"], progress=False)
    (length,) = run.results
    d = length.details
    toks = d["tokens"]["train"]
    assert toks["rows"] == 100 and toks["tokens_max"] > toks["tokens_p50"] > 0
    seq = d["sequence_length"]
    assert seq["seq_length"] % 8 == 0 and seq["truncated_rows"] == 10  # the longest tenth
    assert {t["id"] for t in seq["truncated"]} == {f"r{i:03d}" for i in range(90, 100)}
    assert d["plots"][0]["file"] == "length_tokens.png" and sum(d["plots"][0]["series"]["train"]) == 100
    assert length.findings == []
    c2 = dataclasses.replace(c, limits={"max_tokens": toks["tokens_p50"]})
    (length2,) = run_checks(str(tmp_path / "ds"), c2, checks=["length"], progress=False).results
    assert {f.rule for f in length2.findings} == {"length.tokens"} and 40 <= len(length2.findings) <= 60


def test_a_stop_token_that_is_also_padding_is_a_finding(tmp_path, tool_contract):
    def pad_is_eos(cfg):
        return {**cfg, "pad_token": "<|im_end|>"}
    tok = tokenizer_copy(tmp_path, "chatml-tiny", config=pad_is_eos)
    write_jsonl(tmp_path / "ds" / "train.jsonl", [{"messages": CONVERSATION, "tools": [WEATHER_TOOL]}])
    run = run_checks(str(tmp_path / "ds"), _with(tool_contract, tok), checks=["template"], progress=False)
    (f,) = run.results[0].findings
    assert f.row is None and f.rule == "template.stop" and "also the padding token" in f.message


def test_an_unusable_tokenizer_is_one_line_and_exit_1(tmp_path):
    res = gate_inprocess("check", str(FIXTURES / "tool-use-clean"), "-c", str(CONTRACTS / "tool-use.yaml"),
                         "--tokenizer", str(tmp_path / "nope"), "--no-db", "-o", str(tmp_path / "rep"), split=True)
    assert res.returncode == 1
    assert res.stderr.startswith("gate: error: ") and "tokenizer" in res.stderr and len(res.stderr.splitlines()) == 1
    assert not (tmp_path / "rep").exists()


def test_contract_tokenizer_section_and_template_options(tmp_path):
    text = (CONTRACTS / "tool-use.yaml").read_text()
    (tmp_path / "tok").symlink_to(TOKENIZERS / "glm-tiny")
    p = tmp_path / "c.yaml"
    p.write_text(text + "\ntokenizer:\n  path: tok\n"
                 + "checks:\n  template:\n    keep_thinking: true\n    stop_policy: as_rendered\n")
    c = load_contract(p)
    assert c.tokenizer.path == str((tmp_path / "tok").resolve()) and c.tokenizer.revision is None
    assert c.options("template") == {"keep_thinking": True, "stop_policy": "as_rendered"}
    from gate.template.batch import auditor_for

    a = auditor_for(c)
    assert a.kwargs == {"clear_thinking": False} and a.stop_policy == "as_rendered"
    p.write_text(text + "checks:\n  template:\n    keep_thinkin: true\n")
    with pytest.raises(ContractError) as err:
        load_contract(p)
    assert "keep_thinkin" in str(err.value) and "keep_thinking" in str(err.value) and err.value.line is not None
    p.write_text(text + "tokenizer:\n  path: tok\n  branch: main\n")
    with pytest.raises(ContractError, match="unknown key 'branch'"):
        load_contract(p)


def test_stop_tokens_option_must_name_tokens(tool_contract):
    c = dataclasses.replace(_with(tool_contract, "glm-tiny"), check_options={"template": {"stop_tokens": ["<eos>"]}})
    with pytest.raises(GateError, match="'<eos>' is not a token"):
        run_checks(str(FIXTURES / "tool-use-clean"), c, checks=["template"], progress=False)
