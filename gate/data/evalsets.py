"""Evaluation items that training data must not contain: scorecard suites named by the contract.

An item's text is what a model would be asked (user turns, or a prompt/input/question field) plus the
expected answer when it is text, since memorising either inflates a score.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gate.errors import InputError
from gate.io.rows import iter_jsonl

PROMPT_FIELDS = ("prompt", "input", "question", "query", "text")


@dataclass(frozen=True)
class EvalItem:
    source: str  # suite file name or "split:test"
    item_id: str
    text: str
    # what a model is asked (user turns, prompt fields), "\x1e"-joined: a short item is matched by containment of
    # its prompt only, never of a short answer such as "42" or a structured label that many rows share
    prompt: str = ""


def item_prompt(obj: dict[str, Any]) -> str:
    """The question parts of an item (user turns, then prompt fields), "\x1e"-joined."""
    parts: list[str] = []
    msgs = obj.get("messages")
    if isinstance(msgs, list):
        parts += [m["content"] for m in msgs if isinstance(m, dict) and m.get("role") == "user"
                  and isinstance(m.get("content"), str)]
    parts += [obj[k] for k in PROMPT_FIELDS if isinstance(obj.get(k), str)]
    return "\x1e".join(parts)


def item_text(obj: dict[str, Any]) -> str:
    prompt = item_prompt(obj)
    parts: list[str] = [prompt] if prompt else []
    for k in ("expected", "answer", "target"):
        if isinstance(obj.get(k), str):
            parts.append(obj[k])
    return "\x1e".join(parts)  # message boundaries: contamination n-grams never span them


def not_a_suite(p: Path, raw: bytes) -> str | None:
    """Why `p` is not a JSONL suite when it is YAML (a scorecard listed where its suites belong), else None.

    Why: a scorecard in `evaluation_sets` read as JSONL gave "malformed JSON: Expecting value at column 1", which
    says nothing of the mistake; the suites the scorecard names are what the check wants."""
    head = raw.removeprefix(b"\xef\xbb\xbf").lstrip()
    if head.startswith(b"{") or (p.suffix.lower() not in (".yaml", ".yml") and not head.startswith(b"---")):
        return None
    import yaml

    try:
        doc = yaml.safe_load(raw)
    except yaml.YAMLError:
        doc = None
    found = "YAML"
    if isinstance(doc, dict) and isinstance(doc.get("suites"), list):
        paths = [str(s["path"]) for s in doc["suites"] if isinstance(s, dict) and isinstance(s.get("path"), str)]
        found = "a scorecard" + (f" (its suites: {', '.join(paths[:3])}{' ...' if len(paths) > 3 else ''})"
                                 if paths else "")
    return (f"evaluation sets are JSONL suites (one JSON object per line), found {found}: list the suite "
            "files in evaluation_sets")


def load_eval_items(paths: tuple[str, ...], anchor: str | None = None) -> list[EvalItem]:
    """Every item of the named JSONL files; a bad line is one InputError naming file and line (gate.io.rows).
    `anchor`: the contract that names them; each file is confined to its repository (gate.io.confine) when read."""
    items: list[EvalItem] = []
    for path in paths:
        p = Path(path)
        if anchor is not None:
            from gate.io.confine import confine

            confine(p, anchor=anchor, what="evaluation set")
        try:
            raw = p.read_bytes()
        except OSError as exc:
            raise InputError(f"evaluation set cannot be read ({exc.strerror})", file=str(p)) from None
        wrong = not_a_suite(p, raw)
        if wrong is not None:
            raise InputError(wrong, file=str(p), line=1)
        for n, obj in iter_jsonl(raw, str(p)):
            items.append(EvalItem(p.name, str(obj.get("id", f"line-{n}")), item_text(obj), item_prompt(obj)))
    return items
