"""Corrections with their reason: `corrections.jsonl`, its validation and `gate apply`.

A correction is one reviewed change of one value of one row, with why it is better, so that evaluators read the
same rule the reviewers applied. One JSON object per line:

    {"id": "tri-036774", "field": "answer.next_action", "old": "reply_with_kb", "new": "escalate_engineering",
     "reason": "rule:outage-escalates", "reviewer": "ana", "time": "2026-12-05T04:00:00Z"}

- `id`: the row's `id` (unique in the dataset); `field`: a path into the row (`language`, `messages[2].content`,
  `messages[-1].content`) or `answer.<key>`, a key of the final assistant answer when it is a JSON object;
- `old`: the value the reviewer saw (it must match the data: a correction of a row that changed since is refused);
  `new`: the value it becomes;
- `reason`: required; free text, or `rule:<id>` naming a rule of the contract's `rules:` section;
- `reviewer`, `time` (ISO 8601): who decided, and when.

Every problem is one `file:line: field: message` error (GateError); nothing is written then. `apply_corrections`
writes the corrected copy atomically (all or nothing) with MANIFEST.json (input, corrections and output hashes, each
correction applied), never touches the input, and is a no-op when OUT already holds this very result.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from gate.errors import GateError

KEYS = ("id", "field", "old", "new", "reason", "reviewer", "time")
_PATH = re.compile(r"[A-Za-z_][\w-]*|\[-?\d+\]")
MANIFEST = "MANIFEST.json"
VERSION = 1


@dataclass(frozen=True)
class Correction:
    """One validated line of a corrections file; `split`/`row` say where its row is in the dataset."""

    line: int
    id: str
    field: str
    old: Any
    new: Any
    reason: str
    rule: str | None
    reviewer: str
    time: str
    split: str = ""
    row: int = 0


@dataclass
class ApplyOutcome:
    """What `gate apply` did: `noop` when OUT already held this result; the manifest it wrote (or found)."""

    out: str
    noop: bool
    manifest: dict[str, Any] = field(default_factory=dict)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def parse_path(path: str) -> list[str | int]:
    """`messages[-1].content` -> ["messages", -1, "content"]; a malformed path raises ValueError."""
    parts: list[str | int] = []
    for seg in path.split("."):
        if not seg:
            raise ValueError("empty path segment")
        i = 0
        while i < len(seg):
            m = _PATH.match(seg, i)
            if m is None or (m.group(0).startswith("[") and i == 0 and not parts):
                raise ValueError(f"cannot read {seg[i:]!r}")
            tok = m.group(0)
            parts.append(int(tok[1:-1]) if tok.startswith("[") else tok)
            i = m.end()
    return parts


def _final_answer(row: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """The last assistant message and its index; the answer must be a JSON object for `answer.<key>` paths."""
    msgs = row.get("messages")
    if isinstance(msgs, list):
        for i in range(len(msgs) - 1, -1, -1):
            m = msgs[i]
            if isinstance(m, dict) and m.get("role") == "assistant":
                return m, i
    raise KeyError("the row has no assistant message")


def read_value(row: dict[str, Any], path: str) -> Any:
    """The value at `path` (KeyError when there is none)."""
    if path.startswith("answer."):
        msg, _ = _final_answer(row)
        obj = json.loads(msg.get("content") or "")
        if not isinstance(obj, dict):
            raise KeyError("the final answer is not a JSON object")
        key = path[len("answer."):]
        if key not in obj:
            raise KeyError(f"the final answer has no key {key!r}")
        return obj[key]
    cur: Any = row
    for p in parse_path(path):
        if isinstance(p, int):
            if not isinstance(cur, list) or not -len(cur) <= p < len(cur):
                raise KeyError(f"no index {p}")
        elif not isinstance(cur, dict) or p not in cur:
            raise KeyError(f"no key {p!r}")
        cur = cur[p]
    return cur


def write_value(row: dict[str, Any], path: str, value: Any) -> None:
    """Sets `path` (which `read_value` found) to `value`; an `answer.<key>` keeps the answer's key order and is
    written back as compact JSON."""
    if path.startswith("answer."):
        msg, _ = _final_answer(row)
        obj = json.loads(msg["content"])
        obj[path[len("answer."):]] = value
        msg["content"] = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
        return
    parts = parse_path(path)
    cur: Any = row
    for p in parts[:-1]:
        cur = cur[p]
    cur[parts[-1]] = value


def contract_rules(contract: Any) -> dict[str, str]:
    """The contract's `rules:` (rule id -> what it says), empty without a contract or section."""
    if contract is None:
        return {}
    rules = contract.raw.get("rules") or {}
    return {str(k): str(v) for k, v in rules.items()}


def _jsonl_splits(dataset: str) -> list[tuple[str, Path]]:
    from gate.io.dataset import discover

    sources = discover(dataset)
    bad = [s for s in sources if s.format != "jsonl"]
    if bad:
        raise GateError(f"gate apply writes plain JSONL datasets only (this split is {bad[0].format})",
                        file=str(bad[0].path))
    return [(s.split, s.path) for s in sources]


def _index(splits: list[tuple[str, Path]]) -> tuple[dict[str, tuple[str, int]], dict[tuple[str, int], dict[str, Any]]]:
    """row id -> (split, line), and every parsed row by (split, line). A duplicated id cannot be corrected safely."""
    where: dict[str, tuple[str, int]] = {}
    rows: dict[tuple[str, int], dict[str, Any]] = {}
    dup: set[str] = set()
    for split, path in splits:
        with open(path, encoding="utf-8") as fh:
            for line, text in enumerate(fh, 1):
                if not text.strip():
                    continue
                try:
                    row = json.loads(text)
                except ValueError:
                    raise GateError("not valid JSON", file=str(path), line=line) from None
                rid = row.get("id") if isinstance(row, dict) else None
                if isinstance(rid, str | int) and not isinstance(rid, bool):
                    if str(rid) in where:
                        dup.add(str(rid))
                    where[str(rid)] = (split, line)
                    rows[(split, line)] = row
    for rid in dup:
        where.pop(rid, None)
    return where, rows


def load_corrections(path: str, dataset: str, contract: Any = None) -> list[Correction]:
    """Validates a corrections file against the dataset (and the contract's `rules:`); the first problem is a
    GateError naming `file:line` and the field."""
    p = Path(path)
    if not p.is_file():
        raise GateError("no such corrections file", file=path)
    where, rows = _index(_jsonl_splits(dataset))
    rules = contract_rules(contract)
    seen: dict[tuple[str, str], int] = {}
    out: list[Correction] = []
    with open(p, encoding="utf-8") as fh:
        for line, text in enumerate(fh, 1):
            if not text.strip():
                continue

            def fail(msg: str, fld: str | None = None, line: int = line) -> GateError:
                return GateError(msg, file=path, line=line, field=fld)
            try:
                obj = json.loads(text)
            except ValueError as exc:
                raise fail(f"not valid JSON ({exc.msg})") from None
            if not isinstance(obj, dict):
                raise fail("a correction is a JSON object")
            unknown = sorted(set(obj) - set(KEYS))
            if unknown:
                raise fail(f"unknown key(s) {', '.join(unknown)} (known: {', '.join(KEYS)})", unknown[0])
            for key in KEYS:
                if key not in obj:
                    raise fail("missing" + (": say why the new value is better (free text or rule:<id>)"
                                            if key == "reason" else ""), key)
            for key in ("id", "field", "reason", "reviewer", "time"):
                if not isinstance(obj[key], str) or not obj[key].strip():
                    raise fail("must be a non-empty string", key)
            try:
                datetime.fromisoformat(obj["time"].replace("Z", "+00:00"))
            except ValueError:
                raise fail(f"{obj['time']!r} is not an ISO 8601 time", "time") from None
            rule = None
            m = re.fullmatch(r"rule:(\S+)", obj["reason"].strip())
            if m:
                rule = m.group(1)
                if rule not in rules:
                    known = ", ".join(sorted(rules)) or "none: the contract has no `rules:` section"
                    raise fail(f"unknown rule {rule!r} (the contract's rules: {known})", "reason")
            rid = obj["id"]
            if rid not in where:
                raise fail(f"no row with id {rid!r} in {dataset} (or the id is not unique there)", "id")
            split, row_line = where[rid]
            try:
                if not obj["field"].startswith("answer."):
                    parse_path(obj["field"])
                current = read_value(rows[(split, row_line)], obj["field"])
            except (KeyError, ValueError, json.JSONDecodeError) as exc:
                raise fail(f"{obj['field']!r} of row {rid}: {exc}", "field") from None
            if current != obj["old"] or type(current) is not type(obj["old"]):
                from gate.pii.redact import value_snippet

                raise fail(f"old value {value_snippet(obj['old'], 40)} does not match the data "
                           f"({split} row {row_line} has {value_snippet(current, 40)})", "old")
            key = (rid, obj["field"])
            if key in seen:
                raise fail(f"row {rid} field {obj['field']} is already corrected on line {seen[key]}", "field")
            seen[key] = line
            out.append(Correction(line, rid, obj["field"], obj["old"], obj["new"], obj["reason"], rule,
                                  obj["reviewer"], obj["time"], split, row_line))
    return out


def dataset_fingerprint(split_shas: list[tuple[str, str]]) -> str:
    """The fingerprint `gate check` gives a dataset (gate.data.runner: its splits' sha256 in order), so a corrected
    copy's check runs, and the releases that cite them, find the corrections that made it."""
    return hashlib.sha256("".join(f"{split}:{sha};" for split, sha in split_shas).encode()).hexdigest()


def _manifest_key(inputs: dict[str, str], corrections_sha: str) -> str:
    return hashlib.sha256(json.dumps([inputs, corrections_sha], sort_keys=True).encode()).hexdigest()


def refuse_output_over_input(inputs: list[Path], out: str) -> None:
    """OUT is replaced whole: it must not be or contain an input (a split file, or the dataset itself)."""
    target = Path(out).resolve()
    if any(p.resolve().is_relative_to(target) or p.resolve().parent == target for p in inputs):
        raise GateError("the output must not be or contain the input (gate apply never changes its input)",
                        file=out)


def apply_corrections(dataset: str, corrections_path: str, out: str, contract: Any = None) -> ApplyOutcome:
    """Writes `out`: the dataset with every correction applied, atomically, with MANIFEST.json. The input is only
    read. When `out` already holds the result of these inputs and corrections, nothing is written (`noop`)."""
    from gate.io.atomic import atomic_dir

    splits = _jsonl_splits(dataset)
    refuse_output_over_input([p for _, p in splits], out)
    corrections = load_corrections(corrections_path, dataset, contract)
    inputs = {f"{split}:{path.name}": sha256_file(path) for split, path in splits}
    corr_sha = sha256_file(Path(corrections_path))
    key = _manifest_key(inputs, corr_sha)
    existing = Path(out) / MANIFEST
    if existing.is_file():
        try:
            old = json.loads(existing.read_text())
        except ValueError:
            old = {}
        if old.get("key") == key and all(
                (Path(out) / name).is_file() and sha256_file(Path(out) / name) == sha
                for name, sha in (old.get("outputs") or {}).items()):
            return ApplyOutcome(out, True, old)
    by_row: dict[tuple[str, int], list[Correction]] = {}
    for c in corrections:
        by_row.setdefault((c.split, c.row), []).append(c)
    outputs: dict[str, str] = {}
    with atomic_dir(out) as tmp:
        for split, path in splits:
            with open(path, encoding="utf-8") as src, open(tmp / path.name, "w", encoding="utf-8") as dst:
                for line, text in enumerate(src, 1):
                    fixes = by_row.get((split, line))
                    if not fixes:
                        dst.write(text)  # byte for byte: an uncorrected row is the input's row
                        continue
                    row = json.loads(text)
                    for c in fixes:
                        write_value(row, c.field, c.new)
                    dst.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n")
            outputs[path.name] = sha256_file(tmp / path.name)
        by_reason: dict[str, int] = {}
        for c in corrections:
            label = f"rule:{c.rule}" if c.rule else "free text"
            by_reason[label] = by_reason.get(label, 0) + 1
        manifest = {
            "version": VERSION, "key": key, "dataset": str(dataset), "corrections_file": str(corrections_path),
            "corrections_sha256": corr_sha, "inputs": inputs, "outputs": outputs,
            "input_fingerprint": dataset_fingerprint([(split, inputs[f"{split}:{p.name}"]) for split, p in splits]),
            "output_fingerprint": dataset_fingerprint([(split, outputs[p.name]) for split, p in splits]),
            "rows_corrected": len(by_row), "corrections": len(corrections), "by_reason": by_reason,
            "applied": [{k: v for k, v in asdict(c).items() if k != "line"} for c in corrections],
        }
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2, ensure_ascii=False, default=str) + "\n")
    return ApplyOutcome(out, False, manifest)
