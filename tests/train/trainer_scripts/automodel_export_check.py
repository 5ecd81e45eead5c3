"""Runs inside .venv-nemo: a nemo-automodel export (gate export --tokenizer) against AutoModel 0.7's own ChatDataset
and the model's original chat template.

Usage: python automodel_export_check.py TOKENIZER_DIR SOURCE.jsonl EXPORT_DIR
  -> one JSON line: rows, kinds, failures (ChatDataset errors or rows without a supervised token, by kind), and
     the rows whose text differs: `exported` where the patched template on what ChatDataset hands it (its own
     `_normalize_messages`) differs from the original template on the source row with dict arguments (what serving
     renders), `original` where the patched template on the source row differs from the original template."""

import collections
import json
import sys
from pathlib import Path

from nemo_automodel.components.datasets.llm.chat_dataset import ChatDataset, _normalize_messages
from transformers import AutoTokenizer


def kind(msgs):
    return "+".join(n for n, hit in (
        ("tools", any(m.get("tool_calls") for m in msgs)),
        ("parallel", any(len(m.get("tool_calls") or []) > 1 for m in msgs)),
        ("tool_result", any(m["role"] == "tool" for m in msgs)),
        ("multi_turn", sum(m["role"] == "user" for m in msgs) > 1),
        ("reasoning", any(m.get("reasoning_content") for m in msgs))) if hit) or "plain"


def args(a):
    return json.loads(a) if isinstance(a, str) else a


def dict_args(msgs):
    out = []
    for m in msgs:
        m = dict(m)
        if m.get("tool_calls"):
            m["tool_calls"] = [{**tc, "function": {**tc["function"], "arguments": args(tc["function"]["arguments"])}}
                               for tc in m["tool_calls"]]
        out.append(m)
    return out


tok_dir, source, export = sys.argv[1], sys.argv[2], Path(sys.argv[3])
manifest = json.loads((export / "MANIFEST.json").read_text())
patched_path = str(export / manifest["chat_template"]["file"])
tok = AutoTokenizer.from_pretrained(tok_dir)
original = tok.chat_template
patched = Path(patched_path).read_text()
src = [json.loads(line) for line in open(source, encoding="utf-8")]
ds = ChatDataset(str(export / "train.jsonl"), tok, split="train", chat_template=patched_path)
kinds, failures, diff = collections.Counter(), collections.Counter(), {"exported": [], "original": []}
for i, row in enumerate(src):
    k = kind(row["messages"])
    kinds[k] += 1
    try:
        labels = ds[i]["labels"]
        assert any(t != -100 for t in labels), "no supervised token"
    except Exception as exc:
        failures[f"{k}: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}"] += 1
    serving = tok.apply_chat_template(dict_args(row["messages"]), tools=row.get("tools"), tokenize=False,
                                      chat_template=original)
    exp = ds.dataset[i]
    training = tok.apply_chat_template(_normalize_messages(exp["messages"]), tools=exp.get("tools"), tokenize=False,
                                       chat_template=patched)
    same_src = tok.apply_chat_template(dict_args(row["messages"]), tools=row.get("tools"), tokenize=False,
                                       chat_template=patched)
    if training != serving:
        diff["exported"].append(i)
    if same_src != serving:
        diff["original"].append(i)
print(json.dumps({"rows": len(ds), "kinds": dict(kinds), "failures": dict(failures), "diff": diff}))
