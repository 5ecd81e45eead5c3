"""`gate contract init`: a first contract inferred from a dataset, with a comment on every rule saying why.

A new user should not have to learn every key before their first `gate check`. Reading the data once gives what
it already is: each metadata column's type, whether it is always present and unique, the allowed values of a
small set, the roles and message counts of the chats, the shape of JSON answers, the tools called, the
character lengths, and the columns that could group rows into splits. Rules follow the majority: a trait of
fewer than OUTLIER_SHARE of the rows (2 empty answers in 24,844, a language seen twice) is an outlier, not a rule, so
the contract does not bless a fault; those rows stay findings of the first check (the caller runs it and says how
many), and the comment above each rule says what it was inferred from and how many rows it leaves out.
"""

from __future__ import annotations

import json
import math
import re
import textwrap
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from gate.io.jsonkind import SCALAR_KINDS, json_kind

#: a string column with at most this many distinct values (each seen at least twice on average) is an allowed set
MAX_ALLOWED = 20
#: a trait of fewer than this share of the rows is an outlier: no rule is inferred from it, its rows stay findings
OUTLIER_SHARE = 0.01
#: names that usually hold the entity whose rows must stay in one split
GROUP_NAMES = ("customer", "customer_id", "user", "user_id", "account", "account_id", "conversation_id",
               "session_id", "thread_id", "author", "database", "db_id", "schema", "tenant")


@dataclass
class _Column:
    values: Counter[Any] = field(default_factory=Counter)
    kinds: Counter[str] = field(default_factory=Counter)
    present: int = 0
    max_len: int = 0


def _kind(v: Any) -> str:
    """A column value's JSON type (gate.io.jsonkind, the scorer's rule too), refined for a contract: an ISO
    timestamp is "datetime" (the column gets a timestamp check, not a string one), and null, arrays and objects are
    "other", since only scalar columns get a type in the inferred contract."""
    kind = json_kind(v)
    if kind == "string" and len(v) >= 10 and v[:4].isdigit() and v[4:5] == "-":
        try:
            datetime.fromisoformat(v)
            return "datetime"
        except ValueError:
            pass
    return kind if kind in SCALAR_KINDS else "other"


def _rows(dataset: str) -> Iterator[dict[str, Any]]:
    from gate.io.dataset import SplitStats, discover, iter_chunks
    from gate.io.rows import parse_chunk

    for src in discover(dataset):
        stats = SplitStats(src.split, src.display, src.format)
        for chunk in iter_chunks(src, stats):
            for _line, row in parse_chunk(chunk):
                yield row


def _shape(value: str) -> str:
    """`tri-871175` -> `^tri-[0-9]{6}$`: an id's literal prefix with its digit runs counted."""
    literal = re.sub(r"([.^$*+?{}\[\]\\|()])", r"\\\1", value)  # `-` and `_` stay readable
    return "^" + re.sub(r"[0-9]+", lambda m: f"[0-9]{{{len(m.group())}}}", literal) + "$"


def _round_up(n: int) -> int:
    """A limit with headroom above the longest row seen: the next multiple of a round step."""
    if n <= 0:
        return 1
    step = 10 ** max(1, int(math.log10(n)))
    return int(math.ceil(n * 1.25 / step) * step)


def _json_schema(answers: list[Any]) -> dict[str, Any] | None:
    """The shape every JSON answer has: an object with the keys all of them carry, small value sets as enums."""
    if not answers or not all(isinstance(a, dict) for a in answers):
        return None
    keys = [k for k in answers[0] if all(k in a for a in answers)]
    props: dict[str, Any] = {}
    for k in sorted({k for a in answers for k in a}):
        vals = [a[k] for a in answers if k in a]
        kinds = {_kind(v) if _kind(v) != "datetime" else "string" for v in vals}
        if kinds == {"string"} and len(set(vals)) <= MAX_ALLOWED and len(vals) >= 2 * len(set(vals)):
            props[k] = {"enum": sorted(set(vals))}
        elif len(kinds) == 1 and kinds <= {"string", "integer", "number", "boolean"}:
            props[k] = {"type": next(iter(kinds))}
        elif kinds <= {"integer", "number"}:
            props[k] = {"type": "number"}
    return {"type": "object", "required": keys, "properties": props}


@dataclass
class _Profile:
    """What one pass over the rows saw: the columns, the chats' roles, counts and final answers, the tools."""

    n: int = 0
    cols: dict[str, _Column] = field(default_factory=dict)
    roles: Counter[str] = field(default_factory=Counter)
    n_msgs: list[int] = field(default_factory=list)
    first_system: int = 0
    last_role_assistant: int = 0
    finals: list[str] = field(default_factory=list)
    empty_assistant: int = 0
    tools: dict[str, dict[str, Any]] = field(default_factory=dict)
    called: set[str] = field(default_factory=set)
    row_chars: int = 0
    msg_chars: int = 0

    def add(self, row: dict[str, Any]) -> None:
        self.n += 1
        for k, v in row.items():
            if k in ("messages", "tools"):
                continue
            col = self.cols.setdefault(k, _Column())
            if v is None:
                continue
            col.present += 1
            col.kinds[_kind(v)] += 1
            if isinstance(v, str | int | float | bool):
                col.values[v] += 1
                if isinstance(v, str):
                    col.max_len = max(col.max_len, len(v))
        msgs = row.get("messages") if isinstance(row.get("messages"), list) else []
        self.n_msgs.append(len(msgs))
        total = 0
        empty = False
        for m in msgs:
            if not isinstance(m, dict):
                continue
            self.roles[str(m.get("role"))] += 1
            content = m.get("content") if isinstance(m.get("content"), str) else ""
            if m.get("role") == "assistant" and not content.strip() and not m.get("tool_calls") \
                    and not isinstance(m.get("content"), list):
                empty = True  # the contract check's messages.empty rule, counted per row
            total += len(content)
            self.msg_chars = max(self.msg_chars, len(content))
            for call in m.get("tool_calls") or []:
                fn = call.get("function") if isinstance(call, dict) else None
                if isinstance(fn, dict) and isinstance(fn.get("name"), str):
                    self.called.add(fn["name"])
        self.row_chars = max(self.row_chars, total)
        self.empty_assistant += empty
        if msgs and isinstance(msgs[0], dict) and msgs[0].get("role") == "system":
            self.first_system += 1
        if msgs and isinstance(msgs[-1], dict) and msgs[-1].get("role") == "assistant":
            self.last_role_assistant += 1
            if isinstance(msgs[-1].get("content"), str):
                self.finals.append(msgs[-1]["content"])
        for t in row.get("tools") or []:
            fn = t.get("function") if isinstance(t, dict) else None
            if isinstance(fn, dict) and isinstance(fn.get("name"), str):
                self.tools.setdefault(fn["name"], fn)


def _outlier(count: int, n: int) -> bool:
    """True when `count` of `n` rows is too few to make a rule of (see OUTLIER_SHARE)."""
    return count < OUTLIER_SHARE * n


def infer(dataset: str, name: str | None = None) -> tuple[dict[str, Any], dict[str, str], list[str]]:
    """(contract, comment per top-level key, notes) for the rows of `dataset`."""
    p = _Profile()
    for row in _rows(dataset):
        p.add(row)
    if p.n == 0:
        from gate.errors import InputError

        raise InputError("the dataset has no rows to infer a contract from", file=dataset)

    contract: dict[str, Any] = {"name": name or Path(dataset).stem.replace(".", "-") or "dataset",
                                "version": "0.1"}
    why: dict[str, str] = {"name": f"inferred by `gate contract init` from {p.n} row(s); edit freely"}
    notes: list[str] = []
    fields, allowed_cols = _field_specs(p, notes)
    if fields:
        contract["fields"] = fields
        why["fields"] = ("metadata columns: type as seen; required when no row lacks it; unique when no two rows "
                         "share it; allowed when a string or integer column has few values")
        contract["allow_extra_fields"] = True
    src = p.cols.get("source")
    if "source" in fields and src and len(src.values) <= MAX_ALLOWED and fields["source"]["type"] == "string":
        contract["sources"] = sorted(src.values)
        why["sources"] = (f"every source seen in {src.present} of {p.n} rows; a new one is a finding (gate split "
                          "groups by source too)")
    lang = p.cols.get("language")
    if "language" in fields and lang and fields["language"]["type"] == "string":
        common = sorted(v for v, k in lang.values.items() if not _outlier(k, lang.present))
        rare = {v: k for v, k in lang.values.items() if _outlier(k, lang.present)}
        contract["languages"] = common or sorted(lang.values)
        why["languages"] = (f"the languages the `language` column names in {lang.present} of {p.n} rows"
                            + (f"; {len(rare)} rare value(s) in {sum(rare.values())} row(s) (each under "
                               f"{OUTLIER_SHARE:.0%}) left out: those rows are findings, add them if they are "
                               "legal" if common and rare else ""))
    elif "language" not in p.cols:
        notes.append("no `language` column: no `languages` (the contract's languages constrain that column)")
    if p.n_msgs and max(p.n_msgs) > 0:
        contract["messages"], why["messages"] = _messages(p, notes)
    parsed: list[Any] = []
    for f in p.finals:
        try:
            parsed.append(json.loads(f))
        except ValueError:
            parsed = []
            break
    schema = _json_schema(parsed) if p.finals and len(p.finals) == p.n else None
    if schema:
        contract["output"] = {"format": "json", "applies_to": "final_assistant", "schema": schema}
        why["output"] = "every final answer is a JSON object: its common keys, small value sets as enums"
    if p.tools or p.called:
        contract["tools"] = _tools(p)
        why["tools"] = ("every tool the rows declare or call; calls are checked against these parameters"
                        + ("" if p.tools else " (the rows declare none: parameters are open, tighten them)"))
    cands = _group_candidates(p, fields, allowed_cols)
    if cands:
        contract["group_key"] = cands[0]
        why["group_key"] = ("rows sharing this value stay in one split (group_split, gate split)"
                            + (f"; other candidates: {', '.join(cands[1:4])}" if len(cands) > 1 else ""))
    else:
        notes.append("no column repeats across rows like a customer or conversation id: no group_key")
    contract["text"] = {"roles": [r for r in ("user", "assistant") if p.roles[r]] or ["user", "assistant"]}
    why["text"] = "the text the duplicate, leakage and contamination checks compare"
    contract["limits"] = {"max_row_chars": _round_up(p.row_chars), "max_message_chars": _round_up(p.msg_chars)}
    why["limits"] = f"longest row {p.row_chars} and message {p.msg_chars} characters seen, with headroom"
    contract["thresholds"] = {"max_duplicate_rate": 0.0, "max_findings": {"contract": 0}}
    why["thresholds"] = "no contract finding tolerated; raise per check under max_findings"
    return contract, why, notes


def _field_specs(p: _Profile, notes: list[str]) -> tuple[dict[str, Any], set[str]]:
    """(`fields` of the contract, the columns given an allowed set): each metadata column's rules as the data
    already obeys them; a column of lists or mixed types is left undeclared, with a note saying so."""
    n = p.n
    fields: dict[str, Any] = {}
    allowed_cols: set[str] = set()
    for k, col in p.cols.items():
        kinds = set(col.kinds)
        if not kinds or "other" in kinds:
            notes.append(f"column '{k}' holds lists or objects: not declared (allow_extra_fields keeps it legal)")
            continue
        kind = next(iter(kinds)) if len(kinds) == 1 else ("number" if kinds <= {"integer", "number"} else "string")
        if kinds == {"string", "datetime"}:
            kind = "string"
        if len(kinds) > 1 and kind == "string" and not kinds <= {"string", "datetime"}:
            notes.append(f"column '{k}' mixes {', '.join(sorted(kinds))}: not declared")
            continue
        spec: dict[str, Any] = {"type": kind}
        if col.present == n:
            spec["required"] = True
        distinct = len(col.values)
        if col.present == n and distinct == n and n >= 2 and kind != "datetime":  # a timestamp is unique by chance
            spec["unique"] = True
        elif kind in ("string", "integer") and distinct <= MAX_ALLOWED and col.present >= 2 * distinct \
                and k not in ("source", "language"):
            spec["allowed"] = sorted(col.values)
            allowed_cols.add(k)
        if kind == "string" and "allowed" not in spec and distinct > MAX_ALLOWED:
            shapes = {_shape(v) for v in col.values}
            if len(shapes) == 1 and "[0-9]" in next(iter(shapes)):  # every value an id of one form
                spec["pattern"] = shapes.pop()
        fields[k] = spec
    return fields, allowed_cols


def _messages(p: _Profile, notes: list[str]) -> tuple[dict[str, Any], str]:
    """(the `messages` rules the majority of rows meet, the comment saying from how many rows each came). A
    minority under OUTLIER_SHARE (rows without the system prompt most have, rows ending on another role, empty
    assistant answers) makes no rule: those rows are the first check's findings. Roles gate does not know get a
    note (the check flags them)."""
    from gate.contract.file_schema import ROLES

    n = p.n
    known = [r for r in ROLES["items"]["enum"] if p.roles[r]]
    messages: dict[str, Any] = {"roles": known}
    without_system = n - p.first_system
    messages["system_prompt"] = ("required" if _outlier(without_system, n) else
                                 "forbidden" if _outlier(p.first_system, n) else "optional")
    messages["min_messages"] = max(1, min(p.n_msgs))
    messages["max_messages"] = max(p.n_msgs)
    other_final = n - p.last_role_assistant
    messages["final_role"] = "assistant" if _outlier(other_final, n) else "any"
    if p.empty_assistant and not _outlier(p.empty_assistant, n):
        messages["allow_empty_assistant"] = True
    said = [f"from {n} rows: system prompt first in {p.first_system} ({messages['system_prompt']}), final role "
            f"assistant in {p.last_role_assistant} ({messages['final_role']})"]
    if p.empty_assistant:
        said.append(f"an empty assistant answer in {p.empty_assistant} row(s) "
                    + ("(allow_empty_assistant: true)" if messages.get("allow_empty_assistant") else
                       f"(under {OUTLIER_SHARE:.0%}: not allowed, those rows are findings; set "
                       "allow_empty_assistant: true if empty answers are legal)"))
    left = [f"{k} row(s) {what}" for k, what, rule in
            ((without_system, "without the system prompt", messages["system_prompt"] == "required"),
             (p.first_system, "with a system prompt", messages["system_prompt"] == "forbidden"),
             (other_final, "ending on another role", messages["final_role"] == "assistant")) if k and rule]
    if left:
        said.append(f"outliers left as findings: {', '.join(left)}")
    unknown = sorted(set(p.roles) - set(known))
    if unknown:
        notes.append(f"roles {unknown} are not chat roles gate knows: the contract check will flag them")
    return messages, "; ".join(said)


def _tools(p: _Profile) -> dict[str, Any]:
    """The tool catalogue: every tool a row declares or calls (a called but undeclared one gets open parameters)."""
    catalogue = []
    for tname in sorted(set(p.tools) | p.called):
        fn = p.tools.get(tname) or {}
        entry: dict[str, Any] = {"name": tname, "parameters": fn.get("parameters") or {"type": "object"}}
        if isinstance(fn.get("description"), str):
            entry["description"] = fn["description"]
        catalogue.append(entry)
    return {"catalogue": catalogue, "on_missing_required": "allow" if p.called - set(p.tools) else "ask_user"}


def _group_candidates(p: _Profile, fields: dict[str, Any], allowed_cols: set[str]) -> list[str]:
    """Columns that could keep related rows in one split, best first: repeated (not unique, not a small allowed
    set) string or integer values, the usual entity names (GROUP_NAMES) before others, then the most distinct."""
    cands = [k for k, col in p.cols.items()
             if k in fields and fields[k]["type"] in ("string", "integer") and not fields[k].get("unique")
             and k not in allowed_cols and k not in ("source", "language") and 1 < len(col.values) < col.present]
    cands.sort(key=lambda k: (k not in GROUP_NAMES, -len(p.cols[k].values)))
    return cands


def render(contract: dict[str, Any], why: dict[str, str], notes: list[str], schema_ref: str | None = None) -> str:
    """The contract as YAML, each top-level key under a comment saying where it came from."""
    out = []
    if schema_ref:
        out.append(f"# yaml-language-server: $schema={schema_ref}")
    out.append("# Data contract inferred by `gate contract init`. Check it with `gate contract lint` and")
    out.append("# `gate check`; every key is documented in docs/contracts.md.")
    out += [f"# note: {n}" for n in notes]
    for key, value in contract.items():
        if key in why and key != "name":
            out.append("")
            out += [f"# {line}" for line in textwrap.wrap(why[key], 110)]
        dumped = yaml.safe_dump({key: value}, sort_keys=False, allow_unicode=True, width=100,
                                default_flow_style=None if isinstance(value, dict | list) else False)
        out.append(dumped.rstrip("\n"))
        if key == "name":
            out.append(f"# {why['name']}")
    return "\n".join(out) + "\n"
