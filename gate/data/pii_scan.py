"""Reading a row the way the PII and secret detectors should, shared by the `pii`/`secret` checks and `gate scrub`.

Every message content (all roles), reasoning content and tool-call argument string is read. Prose goes to
presidio with the NER model when installed; tool-call arguments are identifiers and JSON, where a NER model
tags keys as names, so they get the pattern recognisers only, and so do the code spans of prose (fenced and
inline code, SQL, JSON, identifier lists: `gate.pii.code`).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from gate.contract import Contract
from gate.data.base import RunContext
from gate.errors import GateError
from gate.pii.code import blank, code_spans

PII_OPTIONS = {"entities", "ner_entities", "use_ner", "thresholds", "context_words", "roles", "default_threshold",
               "quasi_identifiers", "stand_ins"}
SECRET_OPTIONS = {"detect_secrets", "own_patterns", "plugins", "base64_limit", "hex_limit", "roles"}


def _options(contract: Contract, check: str, allowed: set[str]) -> dict[str, Any]:
    opts = contract.options(check)
    unknown = set(opts) - allowed
    if unknown:
        raise GateError(f"unknown option(s) {sorted(unknown)} in checks.{check} (known: {sorted(allowed)})",
                        file=contract.path)
    return opts


def pii_config(contract: Contract) -> Any:
    from gate.pii import PiiConfig

    opts = _options(contract, "pii", PII_OPTIONS)
    kw: dict[str, Any] = {}
    if "entities" in opts:
        kw["entities"] = tuple(opts["entities"])
    if "ner_entities" in opts:
        kw["ner_entities"] = tuple(opts["ner_entities"])
    if "use_ner" in opts:
        kw["use_ner"] = bool(opts["use_ner"])
    if "default_threshold" in opts:
        kw["default_threshold"] = float(opts["default_threshold"])
    if "thresholds" in opts:
        kw["thresholds"] = tuple(sorted((k, float(v)) for k, v in dict(opts["thresholds"]).items()))
    if "context_words" in opts:
        kw["context_words"] = tuple(sorted((k, tuple(v)) for k, v in dict(opts["context_words"]).items()))
    try:
        return PiiConfig(**kw)
    except (TypeError, ValueError) as exc:
        raise GateError(f"checks.pii: {exc}", file=contract.path) from None


def secret_config(contract: Contract) -> Any:
    from gate.pii import SecretConfig

    opts = _options(contract, "secret", SECRET_OPTIONS)
    kw = {k: (tuple(v) if isinstance(v, list | tuple) else v) for k, v in opts.items() if k != "roles"}
    try:
        return SecretConfig(**kw)
    except (TypeError, ValueError) as exc:
        raise GateError(f"checks.secret: {exc}", file=contract.path) from None


def scan_fields(row: dict[str, Any], roles: set[str] | None) -> list[tuple[str, str, bool, str | None]]:
    """(field path, text, is prose, role) of every message content and tool-call argument string to read."""
    out: list[tuple[str, str, bool, str | None]] = []
    msgs = row.get("messages")
    if not isinstance(msgs, list):
        return out
    for i, m in enumerate(msgs):
        if not isinstance(m, dict) or (roles is not None and m.get("role") not in roles):
            continue
        role = m.get("role") if isinstance(m.get("role"), str) else None
        content = m.get("content")
        if isinstance(content, str) and content:
            out.append((f"messages[{i}].content", content, True, role))
        elif isinstance(content, list):
            for j, part in enumerate(content):
                if isinstance(part, dict) and isinstance(part.get("text"), str) and part["text"]:
                    out.append((f"messages[{i}].content[{j}].text", part["text"], True, role))
        if isinstance(m.get("reasoning_content"), str) and m["reasoning_content"]:
            out.append((f"messages[{i}].reasoning_content", m["reasoning_content"], True, role))
        for j, call in enumerate(m.get("tool_calls") or []):
            fn = call.get("function") if isinstance(call, dict) else None
            if isinstance(fn, dict) and isinstance(fn.get("arguments"), str) and fn["arguments"]:
                out.append((f"messages[{i}].tool_calls[{j}].function.arguments", fn["arguments"], False, role))
    return out


def set_field(row: dict[str, Any], path: str, value: str) -> None:
    """Writes `value` at a path produced by `scan_fields` (the inverse of reading it)."""
    import re

    node: Any = row
    parts = re.findall(r"\w+|\[\d+\]", path)
    for part in parts[:-1]:
        node = node[int(part[1:-1])] if part.startswith("[") else node[part]
    last = parts[-1]
    if last.startswith("["):
        node[int(last[1:-1])] = value
    else:
        node[last] = value


@dataclass
class FieldHits:
    path: str
    text: str
    prose: bool
    role: str | None
    pii: list[Any] = field(default_factory=list)
    secrets: list[Any] = field(default_factory=list)
    #: The NER model's spans over the whole text, every label (None: not scanned whole with the model, so a
    #: snippet runs the recall scan over its window instead)
    spans: list[Any] | None = None


class RowScanner:
    """Scans the fields of many rows in two batched calls (PII, secrets) and hands back hits per field."""

    def __init__(self, contract: Contract, *, pii: bool = True, secrets: bool = True) -> None:
        # presidio imports transformers when it is installed; its "PyTorch was not found" notice is noise here
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
        self.pii_config = pii_config(contract) if pii else None
        self.pattern_config = replace(self.pii_config, use_ner=False) if self.pii_config is not None else None
        self.secret_config = secret_config(contract) if secrets else None
        pii_roles = contract.options("pii").get("roles")
        secret_roles = contract.options("secret").get("roles")
        self.pii_roles = set(pii_roles) if pii_roles else None
        self.secret_roles = set(secret_roles) if secret_roles else None
        self._parent_pid = os.getpid()

    def scan(self, rows: list[dict[str, Any]], context: RunContext) -> list[list[FieldHits]]:
        """Hits per field of each row; each distinct text reaches a detector once per run (`context`'s memo per
        detector configuration: every batch repeats the system prompt and the stock replies)."""
        try:
            return self._scan(rows, context)
        except ImportError as exc:  # presidio / detect-secrets missing: say which extra, not a traceback
            raise GateError(f"the pii and secret checks need their engines: {exc} (or leave them out with "
                            f"--checks)") from None

    def _scan(self, rows: list[dict[str, Any]], context: RunContext) -> list[list[FieldHits]]:
        from gate.pii import resolve_overlaps, scan_secrets_texts, scan_texts
        from gate.pii.presidio_engine import scan_texts_with_spans

        fields = [[FieldHits(p, t, prose, role) for p, t, prose, role in scan_fields(r, None)] for r in rows]
        flat = [fh for fs in fields for fh in fs]
        # inside a runner worker this process is already one of N; in the parent let presidio fan out
        workers = None if os.getpid() == self._parent_pid else 1
        if self.pii_config is not None:
            # prose goes to the configured scan (NER included) with its code spans blanked; tool-call arguments
            # and the code spans of prose go to the pattern recognisers only (gate.pii.code)
            ner_jobs: list[tuple[FieldHits, str]] = []
            pattern_jobs: list[tuple[FieldHits, str]] = []
            ner = self.pii_config.use_ner
            for fh in flat:
                if not _wanted(fh, self.pii_roles):
                    continue
                if not fh.prose:
                    pattern_jobs.append((fh, fh.text))
                    continue
                code = code_spans(fh.text) if ner else []
                ner_jobs.append((fh, blank(fh.text, code, keep=False) if code else fh.text))
                if code:
                    pattern_jobs.append((fh, blank(fh.text, code, keep=True)))
            found: dict[int, list[Any]] = {}
            # prose: its hits, and the model's spans for the snippets' context masking (no second model pass)
            scan_ner = functools.partial(scan_texts_with_spans, config=self.pii_config, workers=workers)
            for (fh, t), (hits, spans) in zip(ner_jobs, _memoised_spans(context, self.pii_config,
                                                                        [t for _, t in ner_jobs], scan_ner),
                                              strict=True):
                found.setdefault(id(fh), []).extend(hits)
                if t is fh.text:  # the whole text went to the model (no code span blanked)
                    fh.spans = spans
            scan_pii = functools.partial(scan_texts, config=self.pattern_config, workers=workers)
            for (fh, _), hits in zip(pattern_jobs, _memoised(context, self.pattern_config,
                                                             [t for _, t in pattern_jobs], scan_pii), strict=True):
                found.setdefault(id(fh), []).extend(hits)
            for fh in flat:
                if id(fh) in found:  # one finding per span: an IP is not also a phone number
                    fh.pii = resolve_overlaps(found[id(fh)])
        if self.secret_config is not None:
            sel = [fh for fh in flat if _wanted(fh, self.secret_roles)]
            scan_secrets = functools.partial(scan_secrets_texts, config=self.secret_config)
            texts = [fh.text for fh in sel]
            for fh, hits in zip(sel, _memoised(context, self.secret_config, texts, scan_secrets), strict=True):
                fh.secrets = hits
        return fields


def _memoised(context: RunContext, config: Any, texts: list[str],
              scan: Callable[[list[str]], list[list[Any]]]) -> list[list[Any]]:
    """`scan`'s hits per text through the run's memo for this detector configuration (hits depend on the text and
    the configuration only); stored as tuples, handed out as fresh lists, since callers extend and keep them."""
    memo = context.memo(("pii_scan.hits", config))
    return [list(h) for h in memo.get_many(texts, lambda todo: [tuple(h) for h in scan(todo)])]


def _memoised_spans(context: RunContext, config: Any, texts: list[str],
                    scan: Callable[[list[str]], tuple[list[list[Any]], list[list[Any]]]]
                    ) -> list[tuple[list[Any], list[Any]]]:
    """`_memoised` for a scan that also gives the model's spans per text: (hits, spans) per text."""
    memo = context.memo(("pii_scan.hits_spans", config))

    def fresh(todo: list[str]) -> list[tuple[tuple[Any, ...], tuple[Any, ...]]]:
        hits, spans = scan(todo)
        return [(tuple(h), tuple(s)) for h, s in zip(hits, spans, strict=True)]
    return [(list(h), list(s)) for h, s in memo.get_many(texts, fresh)]


def _wanted(fh: FieldHits, roles: set[str] | None) -> bool:
    return roles is None or fh.role in roles
