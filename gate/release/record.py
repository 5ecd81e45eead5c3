"""Building a release record: everything that produced a decided candidate, pinned by hash in one row.

Most of it is already in the record (the candidate's score run carries the engine identity: model and adapter
hashes, engine version and flags, the chat template actually rendered), so a release adds only what the score run
cannot know: the base model's revision, the tokenizer, the prompt and tool schema the scorecard sent, and the data
behind training (the `gate check` runs and their verdicts, read from the runs table, never typed in).
"""

from __future__ import annotations

import getpass
import hashlib
import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gate.errors import GateError

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.json", "merges.txt",
                   "tokenizer.model", "added_tokens.json", "chat_template.jinja", "chat_template.json")


def who(by: str | None) -> str:
    """--by, else the login; recorded with every release and every move of "current"."""
    if by:
        return by
    try:
        return os.environ.get("USER") or getpass.getuser()
    except Exception:
        return "unknown"


def tokenizer_hashes(directory: str | None) -> tuple[str | None, str | None]:
    """(tokenizer sha256, chat template sha256) of a model or tokenizer directory; (None, None) when unreadable."""
    if not directory or not Path(directory).is_dir():
        return None, None
    d = Path(directory)
    h = hashlib.sha256()
    found = False
    for name in TOKENIZER_FILES:
        f = d / name
        if f.is_file():
            found = True
            h.update(name.encode() + b"\0" + hashlib.sha256(f.read_bytes()).digest())
    template = None
    if (d / "chat_template.jinja").is_file():
        template = (d / "chat_template.jinja").read_text(encoding="utf-8")
    elif (d / "tokenizer_config.json").is_file():
        try:
            template = json.loads((d / "tokenizer_config.json").read_text(encoding="utf-8")).get("chat_template")
        except (ValueError, OSError):
            template = None
    tmpl_sha = hashlib.sha256(template.encode()).hexdigest() if isinstance(template, str) and template else None
    return (h.hexdigest() if found else None), tmpl_sha


def prompt_hashes(scorecard_path: str | None, decision: dict[str, Any]) -> tuple[str | None, str | None]:
    """(system prompt sha256, tool schema sha256) that the scorecard sent; the system prompt is the scorecard's,
    or the distinct system messages of its items when they carry their own."""
    if not scorecard_path:
        return None, None
    from gate.engines.engine import canonical_json
    from gate.score.scorecard import load_scorecard

    sc = load_scorecard(scorecard_path)
    if sc.name != decision["scorecard"]:
        raise GateError(f"decision {decision['decision_id']} used scorecard '{decision['scorecard']}', "
                        f"not '{sc.name}'", file=scorecard_path)
    if sc.system is not None:
        systems = [sc.system]
    else:
        systems = sorted({str(m.get("content", "")) for s in sc.suites for it in s.items for m in it.messages
                          if m.get("role") == "system"})
    sys_sha = hashlib.sha256(canonical_json(systems).encode()).hexdigest() if systems else None
    tool_sha = hashlib.sha256(canonical_json(list(sc.tools)).encode()).hexdigest() if sc.tools else None
    return sys_sha, tool_sha


def _score_run(con: Any, run_id: str | None) -> dict[str, Any]:
    """The decision's score run as recorded; a record without it (or with no score runs at all, e.g. a copied
    decisions table) is a one-line error, not a catalog error from DuckDB."""
    if not run_id:
        return {}
    from gate.store.scores import score_run_row

    row = score_run_row(con, run_id)
    if row is None:
        raise GateError(f"score run '{run_id}' of the decision is not in the record (run `gate score` into this "
                        "record first)")
    for k in ("engine_identity", "suite_hashes", "options", "decoding"):
        if isinstance(row.get(k), str):
            row[k] = json.loads(row[k])
    return row


def resolved(location: str | None) -> str | None:
    """An existing local path as an absolute, symlink-free path; anything else (a hub id, a URL) as given.

    Why: a release is read later from another directory or machine, where `../models/tiny-llama` names nothing
    (or something else); the absolute path plus the content hash next to it say which weights were meant.
    """
    if not location:
        return location
    p = Path(location).expanduser()
    if "://" in location or not p.exists():
        return location
    return str(p.resolve())


def _local_hash(location: str | None) -> str | None:
    """Content hash of a local model/adapter directory (gate.engines.engine.hash_path); None for a hub id or URL."""
    if not location or "://" in location or not Path(location).exists():
        return None
    from gate.engines.engine import hash_path

    return hash_path(location) or None


def check_runs(con: Any, run_ids: list[str]) -> list[dict[str, Any]]:
    """The `gate check` runs named, with their verdicts as recorded (an unknown id is an error, not a pass)."""
    from gate.store.db import check_run_summary

    out = []
    for rid in run_ids:
        r = check_run_summary(con, rid)
        if r is None:
            raise GateError(f"no `gate check` run '{rid}' in the record", field="--data-check")
        out.append(r)
    return out


def build_release(*, decision_id: str, db: str | None, release_id: str | None = None, base_model: str | None = None,
                  base_revision: str | None = None, tokenizer: str | None = None, scorecard: str | None = None,
                  data_checks: list[str] | None = None, fingerprints: list[str] | None = None,
                  training_run: str | None = None, by: str | None = None, notes: str | None = None) -> dict[str, Any]:
    """The release row for one decision (not yet written)."""
    from gate.store.db import connect
    from gate.store.releases import get_decision, overall_comparisons

    decision = get_decision(decision_id, db)
    if decision["mode"] != "compare":
        raise GateError(f"decision {decision_id} is a {decision['mode']} decision: a release needs a "
                        "baseline-vs-candidate decision")
    with connect(db, read_only=True) as con:
        cand = _score_run(con, decision["candidate_run"])
        base = _score_run(con, decision["baseline_run"])
        checks = check_runs(con, list(dict.fromkeys(data_checks or [])))
        scores: dict[str, Any] = {}
        for suite, scorer, key, b, c, d in overall_comparisons(con, decision_id):
            scores.setdefault(suite, {}).setdefault(scorer, {})[key] = {"baseline": b, "candidate": c, "delta": d}
    ident = cand.get("engine_identity") or {}
    base_ident = base.get("engine_identity") or {}
    tok_sha, tmpl_sha = tokenizer_hashes(tokenizer or cand.get("model"))
    sys_sha, tool_sha = prompt_hashes(scorecard, decision)
    fps = list(dict.fromkeys([*(fingerprints or []), *(c["fingerprint"] for c in checks if c["fingerprint"])]))
    now = datetime.now(UTC)
    base_loc = resolved(base_model or base.get("model"))
    adapter_loc = resolved(cand.get("adapter"))
    # a --base-model named here is hashed here; else the score run's identity already holds the served weights' hash
    base_rev = base_revision or (_local_hash(base_loc) if base_model else None) or base_ident.get("model_hash") \
        or _local_hash(base_loc)
    adapter_sha = ident.get("adapter_hash") or ident.get("model_hash") or _local_hash(adapter_loc)
    return {
        "release_id": release_id or f"{decision['scorecard']}-{now:%Y%m%d-%H%M%S}-{decision_id[:6]}",
        "created_at": now, "created_by": who(by), "decision_id": decision_id, "verdict": decision["verdict"],
        "base_model": base_loc, "base_revision": base_rev or None,
        "adapter": adapter_loc, "adapter_sha256": adapter_sha or None,
        "tokenizer_sha256": tok_sha, "chat_template_sha256": ident.get("chat_template_hash") or tmpl_sha,
        "engine": ident.get("engine") or cand.get("engine"), "engine_version": ident.get("engine_version"),
        "engine_flags": list(ident.get("flags") or []), "system_prompt_sha256": sys_sha,
        "tool_schema_sha256": tool_sha, "scorecard": decision["scorecard"],
        "scorecard_version": decision["scorecard_version"], "scorecard_sha256": decision["scorecard_sha256"],
        "suite_hashes": cand.get("suite_hashes") or {}, "scores": scores, "dataset_fingerprints": fps,
        "data_checks": checks, "training_run": training_run, "notes": notes,
    }


def create_release(*, decision_id: str, db: str | None, release_id: str | None = None, **pins: Any) -> dict[str, Any]:
    """`gate release create`'s use case: the release row for one decision (`build_release`, with its `pins`),
    refused when that id is taken, then recorded; returns the row (the command prints it)."""
    from gate.store.releases import list_releases, record_release

    row = build_release(decision_id=decision_id, db=db, release_id=release_id, **pins)
    if any(r["release_id"] == row["release_id"] for r in list_releases(db)):
        raise GateError(f"release '{row['release_id']}' already exists", field="--id")
    record_release(row, db)
    return row
