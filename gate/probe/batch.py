"""Representative rows: real conversations rendered with the model's own chat template, not random token ids.

Random ids never exercise the template, the special tokens or the embedding rows a real row hits; a few rendered
rows (tool calls included) do, at the cost of a few milliseconds. Loss covers every token: the probe tests the
training path, not the masking policy (the template audit owns that).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gate.demo.paths import ROOT  # the checkout, or the files the wheel ships (gate.demo.paths)
from gate.errors import InputError
from gate.io.rows import iter_jsonl_file

DEFAULT_DATA = ROOT / "fixtures" / "datasets" / "tool-use-clean" / "train.jsonl"
FALLBACK_TOKENIZER = ROOT / "fixtures" / "tokenizers" / "glm-tiny"


def read_rows(path: str | Path, n: int) -> list[dict[str, Any]]:
    """The first `n` rows with messages (a directory means its train.jsonl)."""
    p = Path(path)
    if p.is_dir():
        p = p / "train.jsonl"
    if not p.is_file():
        raise InputError("dataset file not found", file=str(p))
    rows: list[dict[str, Any]] = []
    for i, row in iter_jsonl_file(p, what="dataset file"):
        if not isinstance(row.get("messages"), list) or not row["messages"]:
            raise InputError("expected an object with a non-empty list", file=str(p), line=i, field="messages")
        rows.append(_normalise(row))
        if len(rows) >= n:
            break
    if not rows:
        raise InputError("no rows", file=str(p))
    return rows


def _normalise(row: dict[str, Any]) -> dict[str, Any]:
    """What trainers do before rendering: JSON-string arguments -> dict (GLM templates iterate them), null -> ''."""
    msgs = []
    for m in row["messages"]:
        m = dict(m)
        if m.get("content") is None:
            m["content"] = ""
        calls = []
        for tc in m.get("tool_calls") or []:
            tc = json.loads(json.dumps(tc))
            fn = tc.get("function", {})
            if isinstance(fn.get("arguments"), str):
                try:
                    fn["arguments"] = json.loads(fn["arguments"])
                except json.JSONDecodeError:
                    pass
            calls.append(tc)
        if calls:
            m["tool_calls"] = calls
        msgs.append(m)
    return {"messages": msgs, "tools": row.get("tools")}


def load_tokenizer(model_dir: str | Path, vocab_size: int) -> tuple[Any, str]:
    """The model's tokenizer, else the glm-tiny fixture when its ids fit the embedding; with where it came from."""
    from transformers import AutoTokenizer

    for cand in (Path(model_dir), FALLBACK_TOKENIZER):
        if not (cand / "tokenizer.json").exists() and not (cand / "tokenizer_config.json").exists():
            continue
        tok = AutoTokenizer.from_pretrained(str(cand), local_files_only=True)
        if cand != Path(model_dir) and len(tok) > vocab_size:
            continue
        if tok.chat_template:
            return tok, str(cand)
    raise InputError("no tokenizer with a chat template (tokenizer.json + chat_template.jinja)", file=str(model_dir))


def encode(tok: Any, rows: list[dict[str, Any]], max_tokens: int) -> dict[str, Any]:
    """input_ids / attention_mask / labels, right-padded to the longest row (at most `max_tokens`).

    Long rows keep their end: the shared system prompt and tool list open every row, while the assistant turns and
    tool calls (what training is for) close it.
    """
    import torch

    seqs = []
    for r in rows:
        text = tok.apply_chat_template(r["messages"], tools=r.get("tools"), tokenize=False)
        seqs.append(tok(text, add_special_tokens=False)["input_ids"][-max_tokens:])
    width = max(len(s) for s in seqs)
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    ids = torch.full((len(seqs), width), pad, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, :len(s)] = torch.tensor(s)
        mask[i, :len(s)] = 1
    labels = ids.masked_fill(mask == 0, -100)
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}
