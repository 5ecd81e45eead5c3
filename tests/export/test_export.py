"""`gate export`: each runner's format round-trips to the input rows, and the manifest is the evidence."""

from __future__ import annotations

import dataclasses
import hashlib
import json

import pytest

from gate.contract.model import TokenizerRef
from gate.errors import GateError
from gate.export import export_dataset
from tests.conftest import FIXTURES, run_gate, write_jsonl

CLEAN = FIXTURES / "tool-use-clean"
GLM = TokenizerRef(str(FIXTURES.parent / "tokenizers" / "glm-tiny"))


def _rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def _source():
    return {s: _rows(CLEAN / f"{s}.jsonl") for s in ("train", "val", "test")}


def _sha(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _args(tc):
    a = tc["function"]["arguments"]
    return json.loads(a) if isinstance(a, str) else a


def _check_manifest(out, fmt, source, contract=None):
    m = json.loads((out / "MANIFEST.json").read_text())
    assert m["kind"] == "gate.export/1" and m["format"] == fmt
    assert {s["split"]: s["sha256"] for s in m["input"]["splits"]} == {s: _sha(CLEAN / f"{s}.jsonl") for s in source}
    assert {s["split"]: s["rows"] for s in m["input"]["splits"]} == {s: len(r) for s, r in source.items()}
    assert m["counts"] == {s: len(r) for s, r in source.items()} and m["skipped"] == []
    for f in m["files"]:
        assert _sha(out / f["file"]) == f["sha256"]
    if contract is not None:
        assert m["contract"]["sha256"] == contract.sha256
    return m


def test_ms_swift_rows_round_trip(tmp_path, tool_contract):
    out = tmp_path / "swift"
    export_dataset(str(CLEAN), "ms-swift", str(out), contract=tool_contract)
    source = _source()
    _check_manifest(out, "ms-swift", source, tool_contract)
    for split, rows in source.items():
        got = _rows(out / f"{split}.jsonl")
        assert len(got) == len(rows)
        for a, b in zip(rows, got, strict=True):
            assert b["id"] == a["id"] and b["tools"] == a["tools"] and "chat_template_kwargs" not in b
            assert [m["role"] for m in b["messages"]] == [m["role"] for m in a["messages"]]
            for x, y in zip(a["messages"], b["messages"], strict=True):
                assert y["content"] == (x["content"] or "")  # ms-swift asserts content is not None
                assert ("loss" in y) == (x["role"] == "assistant") and y.get("loss") in (None, True)
                assert [_args(t) for t in y.get("tool_calls", [])] == [_args(t) for t in x.get("tool_calls") or []]
                assert y.get("tool_call_id") == x.get("tool_call_id")


def test_ms_swift_inlines_reasoning_and_carries_the_template_switch(tmp_path, tool_contract):
    row = {"id": "r1", "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello", "reasoning_content": "greet back", "weight": 0},
        {"role": "user", "content": "bye"}, {"role": "assistant", "content": "bye!"}]}
    write_jsonl(tmp_path / "ds" / "train.jsonl", [row])
    c = dataclasses.replace(tool_contract, check_options={"template": {"keep_thinking": True}})
    res = export_dataset(str(tmp_path / "ds"), "ms-swift", str(tmp_path / "out"), contract=c, tokenizer=GLM)
    (got,) = _rows(tmp_path / "out" / "train.jsonl")
    # spelt as the GLM template renders it (ms-swift keeps inline reasoning literally; see tests/train/
    # test_label_parity.py): the old "<think>\ngreet back\n</think>\n\n" gave other tokens than the template
    assert got["messages"][1] == {"role": "assistant", "content": "<think>greet back</think>hello", "loss": False}
    assert got["messages"][3]["loss"] is True
    assert got["chat_template_kwargs"] == {"clear_thinking": False}
    assert any("spelt as the chat template renders it" in w for w in res.warnings)
    assert res.manifest["tokenizer"]["keep_thinking_switch"] == "clear_thinking"


def test_reasoning_spelling_follows_the_template():
    from gate.export.formats import DEFAULT_THINK, think_form

    def qwen(msgs):
        a = msgs[-1]
        return f"<|im_start|>assistant\n<think>\n{a['reasoning_content']}\n</think>\n\n{a['content']}<|im_end|>"

    assert think_form(qwen) == ("<think>\n", "\n</think>\n\n")
    assert think_form(lambda msgs: "no reasoning rendered") == DEFAULT_THINK
    assert think_form(lambda msgs: 1 / 0) == DEFAULT_THINK


def test_nemo_automodel_rows_round_trip_and_warn_about_glm(tmp_path):
    out = tmp_path / "nemo"
    res = export_dataset(str(CLEAN), "nemo-automodel", str(out), tokenizer=GLM)
    source = _source()
    m = _check_manifest(out, "nemo-automodel", source)
    assert m["contract"] is None and m["tokenizer"]["path"] == GLM.path
    assert any("JSON strings" in w and "chat_template.jinja is the template reading them" in w for w in res.warnings)
    assert any("does not learn to stop" in w for w in res.warnings)
    for split, rows in source.items():
        for a, b in zip(rows, _rows(out / f"{split}.jsonl"), strict=True):
            assert b["tools"] == a["tools"]
            for x, y in zip(a["messages"], b["messages"], strict=True):
                assert y["role"] == x["role"] and y["content"] == (x["content"] or "")
                assert [_args(t) for t in y.get("tool_calls", [])] == [_args(t) for t in x.get("tool_calls") or []]
                if x["role"] == "tool":
                    assert y["tool_call_id"] == x["tool_call_id"]


def _kind_rows():
    """Every row kind a nemo-automodel export must get through ChatDataset: plain triage, tool calls with results,
    two user turns, a parallel call with two results, and reasoning on every assistant turn of a two-user row (the
    GLM template drops the first turn's reasoning, so AutoModel's prefix mask used to refuse the row)."""
    import copy

    tools = _rows(CLEAN / "train.jsonl")
    two_user = [r for r in tools if sum(m["role"] == "user" for m in r["messages"]) == 2][:8]
    reasoning = copy.deepcopy(two_user)
    for r in reasoning:
        for j, m in enumerate(r["messages"]):
            if m["role"] == "assistant":
                m["reasoning_content"] = f"Step {j}: decide what to ask or call."
    par = copy.deepcopy(next(r for r in tools if any(m["role"] == "tool" for m in r["messages"])))
    k = next(i for i, m in enumerate(par["messages"]) if m.get("tool_calls"))
    second = {**copy.deepcopy(par["messages"][k]["tool_calls"][0]), "id": "call_second"}
    par["messages"][k]["tool_calls"].append(second)
    res = next(i for i, m in enumerate(par["messages"]) if m["role"] == "tool")
    par["messages"].insert(res + 1, {**par["messages"][res], "tool_call_id": "call_second"})
    par["id"] = "parallel-1"
    triage = _rows(FIXTURES / "triage-clean" / "train.jsonl")[:6]
    return triage + tools[:20] + two_user + reasoning + [par]


def _with_dict_arguments(msgs):
    return [{**m, "tool_calls": [{**t, "function": {"name": t["function"]["name"], "arguments": _args(t)}}
                                 for t in m["tool_calls"]]} if m.get("tool_calls") else m for m in msgs]


def test_nemo_automodel_export_renders_as_the_original_template_does(tmp_path):
    """The GLM template iterates `arguments.items()`, and AutoModel hands it JSON strings: the export keeps the
    object under function.gate_arguments (AutoModel copies the function's other keys as they are) and writes a
    template that reads it. On the exported rows, as given (string arguments), that template renders byte for byte
    what the original renders from the source rows with object arguments (what serving renders), and on rows
    without the key it is the original template."""
    from transformers import AutoTokenizer

    rows = _kind_rows()
    write_jsonl(tmp_path / "src" / "train.jsonl", rows)
    res = export_dataset(str(tmp_path / "src"), "nemo-automodel", str(tmp_path / "out"), tokenizer=GLM)
    m = res.manifest["chat_template"]
    patched = (tmp_path / "out" / m["file"]).read_text()
    assert hashlib.sha256(patched.encode()).hexdigest() == m["sha256"]
    tok = AutoTokenizer.from_pretrained(GLM.path)
    original = tok.chat_template
    assert patched != original and "gate_arguments" in patched
    exported = _rows(tmp_path / "out" / "train.jsonl")
    for a, b in zip(rows, exported, strict=True):
        for x, y in zip(a["messages"], b["messages"], strict=True):
            for tx, ty in zip(x.get("tool_calls") or [], y.get("tool_calls") or [], strict=True):
                assert isinstance(ty["function"]["arguments"], str) and ty["function"]["gate_arguments"] == _args(tx)
        serving = tok.apply_chat_template(_with_dict_arguments(a["messages"]), tools=a.get("tools"), tokenize=False,
                                          chat_template=original)
        assert tok.apply_chat_template(b["messages"], tools=b.get("tools"), tokenize=False,
                                       chat_template=patched) == serving, a["id"]
        assert tok.apply_chat_template(_with_dict_arguments(a["messages"]), tools=a.get("tools"), tokenize=False,
                                       chat_template=patched) == serving, a["id"]
    # reasoning is left out only where the template does not render it: before the last user turn
    for a, b in zip(rows, exported, strict=True):
        if any(x.get("reasoning_content") for x in a["messages"]):
            last_user = max(i for i, x in enumerate(a["messages"]) if x["role"] == "user")
            kept = [i for i, y in enumerate(b["messages"]) if y.get("reasoning_content")]
            assert kept and all(i > last_user for i in kept), (a["id"], kept)


def test_nemo_reasoning_is_kept_where_the_template_renders_it_or_cannot_render_the_row():
    """Only reasoning whose removal leaves the whole render unchanged is left out: a template that shows every
    turn's reasoning keeps it all, and a row the template refuses is written as it is (the template check reports
    it) instead of stopping the export with a traceback."""
    from gate.export.formats import to_nemo_automodel

    row = {"messages": [{"role": "user", "content": "a"},
                        {"role": "assistant", "content": "b", "reasoning_content": "r1"},
                        {"role": "user", "content": "c"},
                        {"role": "assistant", "content": "d", "reasoning_content": "r2"}]}

    def shows_all(msgs, tools):
        return "".join(f"{m['role']}:{m.get('reasoning_content', '')}:{m['content']}|" for m in msgs)

    def refuses(msgs, tools):
        raise ValueError("template refuses the row")

    for render in (shows_all, refuses):
        out = to_nemo_automodel(row, render=render)
        assert [m.get("reasoning_content") for m in out["messages"]] == [None, "r1", None, "r2"]


def test_nemo_automodel_export_without_a_tokenizer_writes_no_template(tmp_path):
    """Without a tokenizer gate cannot know the template: the rows stay plain OpenAI rows and nothing is patched."""
    res = export_dataset(str(CLEAN), "nemo-automodel", str(tmp_path / "out"))
    assert "chat_template" not in res.manifest and not (tmp_path / "out" / "chat_template.jinja").exists()
    row = next(r for r in _rows(tmp_path / "out" / "train.jsonl") if "tool_calls" in json.dumps(r))
    assert "gate_arguments" not in json.dumps(row)


NEMO_PY = FIXTURES.parents[1] / ".venv-nemo" / "bin" / "python"


@pytest.mark.skipif(not NEMO_PY.exists(), reason="nemo-automodel venv (.venv-nemo) not installed: make test builds it")
def test_every_row_kind_encodes_in_automodel_chat_dataset(tmp_path):
    """AutoModel 0.7's own ChatDataset (its loader, `_normalize_messages`, the exported template, the prefix mask)
    encodes every exported row of every kind with a supervised token, and what it renders is what the original
    template renders from the source rows (the check runs AutoModel's own normaliser: tests/train/trainer_scripts/
    automodel_export_check.py). Before, every tool row raised `'str object' has no attribute 'items'` and every
    multi-turn reasoning row "Cannot build an answer-only loss mask from conversation prefixes"."""
    import subprocess

    rows = _kind_rows()
    src = write_jsonl(tmp_path / "src" / "train.jsonl", rows)
    export_dataset(str(tmp_path / "src"), "nemo-automodel", str(tmp_path / "out"), tokenizer=GLM)
    script = FIXTURES.parents[1] / "tests" / "train" / "trainer_scripts" / "automodel_export_check.py"
    proc = subprocess.run([str(NEMO_PY), str(script), GLM.path, str(src), str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "HF_HUB_OFFLINE": "1",
                               "HF_HOME": str(tmp_path / "hf")})
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout.splitlines()[-1])
    assert got["rows"] == len(rows) and got["failures"] == {}, got
    assert got["diff"] == {"exported": [], "original": []}, got
    assert {"plain", "tools+tool_result", "tools+tool_result+multi_turn", "tools+tool_result+multi_turn+reasoning",
            "tools+parallel+tool_result"} <= set(got["kinds"]), got


def test_hf_save_to_disk_round_trips(tmp_path):
    from datasets import load_from_disk

    out = tmp_path / "hf"
    export_dataset(str(CLEAN), "hf", str(out))
    source = _source()
    m = _check_manifest(out, "hf", source)
    assert any(f["file"] == "dataset_dict.json" for f in m["files"])
    dd = load_from_disk(str(out))
    assert set(dd) == set(source)
    for split, rows in source.items():
        got = dd[split].to_list()
        for a, b in zip(rows, got, strict=True):
            assert {k: b[k] for k in a if k not in ("messages", "tools")} == {
                k: v for k, v in a.items() if k not in ("messages", "tools")}
            assert json.loads(b["tools"]) == a["tools"]
            for x, y in zip(a["messages"], b["messages"], strict=True):
                assert y["role"] == x["role"] and y["content"] == (x["content"] or "")
                assert y["tool_call_id"] == x.get("tool_call_id")
                assert [_args(t) for t in y["tool_calls"] or []] == [_args(t) for t in x.get("tool_calls") or []]


def test_a_row_the_format_cannot_hold_stops_the_export_and_keeps_the_old_output(tmp_path):
    write_jsonl(tmp_path / "ds" / "train.jsonl", [
        {"id": "ok", "messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]},
        {"id": "bad", "messages": [{"role": "user", "content": "a"}, {"role": "tool", "content": "x"}]}])
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("old")
    with pytest.raises(GateError) as err:
        export_dataset(str(tmp_path / "ds"), "nemo-automodel", str(out))
    assert err.value.line == 2 and "tool_call_id" in str(err.value)
    assert [p.name for p in out.iterdir()] == ["keep.txt"]  # nothing half-written, the old output intact
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out")]
    res = export_dataset(str(tmp_path / "ds"), "nemo-automodel", str(out), skip_invalid=True)
    assert res.counts == {"train": 1}
    assert res.skipped == [{"split": "train", "row": 2, "id": "bad",
                            "reason": "messages[1] is a tool result without a tool_call_id"}]
    assert json.loads((out / "MANIFEST.json").read_text())["skipped"] == res.skipped


def test_cli_export(tmp_path):
    res = run_gate("export", str(CLEAN), "--format", "ms-swift", "--out", str(tmp_path / "o"))
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "o" / "train.jsonl").exists() and (tmp_path / "o" / "MANIFEST.json").exists()
    res = run_gate("export", str(CLEAN), "--format", "axolotl", "--out", str(tmp_path / "o2"))
    assert res.returncode == 2 and not (tmp_path / "o2").exists()
    res = run_gate("export", str(FIXTURES / "tool-use-faulty"), "--format", "hf", "--out", str(tmp_path / "o3"))
    assert res.returncode == 1 and res.stderr.startswith("gate: error: ") and "train.jsonl:" in res.stderr
