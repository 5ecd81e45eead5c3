"""`pii` and `secret`: possible personal data and credentials in any message of a row.

PII comes from presidio-analyzer with an offline NLP engine (pattern recognisers always, the spaCy NER model
for names and places when it is installed); secrets from detect-secrets' plugins called one by one plus
patterns for current key formats. A finding says "possible" PII with entity type, score, field and
character span; the value itself never leaves the worker: the snippet is redacted. Tool-call arguments are
read by the pattern recognisers only: they are identifiers and JSON, where a NER model tags keys as names.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import replace
from typing import Any

from gate.contract import Contract
from gate.data.base import Batch, Check, CheckResult, Finding
from gate.errors import GateError

PII_OPTIONS = {"entities", "ner_entities", "use_ner", "thresholds", "context_words", "roles", "default_threshold"}
SECRET_OPTIONS = {"detect_secrets", "own_patterns", "plugins", "base64_limit", "hex_limit", "roles"}


def _unknown(contract: Contract, check: str, allowed: set[str]) -> dict[str, Any]:
    opts = contract.options(check)
    unknown = set(opts) - allowed
    if unknown:
        raise GateError(f"unknown option(s) {sorted(unknown)} in checks.{check} (known: {sorted(allowed)})",
                        file=contract.path)
    return opts


def pii_config(contract: Contract) -> Any:
    from gate.pii import PiiConfig

    opts = _unknown(contract, "pii", PII_OPTIONS)
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

    opts = _unknown(contract, "secret", SECRET_OPTIONS)
    kw = {k: (tuple(v) if isinstance(v, list | tuple) else v) for k, v in opts.items() if k != "roles"}
    try:
        return SecretConfig(**kw)
    except (TypeError, ValueError) as exc:
        raise GateError(f"checks.secret: {exc}", file=contract.path) from None


def scan_fields(row: dict[str, Any], roles: set[str] | None) -> list[tuple[str, str, bool]]:
    """(field path, text, is prose) of every message content and tool-call argument string to read."""
    out: list[tuple[str, str, bool]] = []
    msgs = row.get("messages")
    if not isinstance(msgs, list):
        return out
    for i, m in enumerate(msgs):
        if not isinstance(m, dict) or (roles is not None and m.get("role") not in roles):
            continue
        content = m.get("content")
        if isinstance(content, str) and content:
            out.append((f"messages[{i}].content", content, True))
        elif isinstance(content, list):
            for j, part in enumerate(content):
                if isinstance(part, dict) and isinstance(part.get("text"), str) and part["text"]:
                    out.append((f"messages[{i}].content[{j}].text", part["text"], True))
        if isinstance(m.get("reasoning_content"), str) and m["reasoning_content"]:
            out.append((f"messages[{i}].reasoning_content", m["reasoning_content"], True))
        for j, call in enumerate(m.get("tool_calls") or []):
            fn = call.get("function") if isinstance(call, dict) else None
            if isinstance(fn, dict) and isinstance(fn.get("arguments"), str) and fn["arguments"]:
                out.append((f"messages[{i}].tool_calls[{j}].function.arguments", fn["arguments"], False))
    return out


class _DetectorCheck(Check):
    """Shared plumbing: gather texts per batch, scan them in one batched call, turn hits into findings."""

    check_name = ""

    def __init__(self, contract: Contract) -> None:
        super().__init__(contract)
        roles = contract.options(self.name).get("roles")
        self._roles = set(roles) if roles else None
        self._parent_pid = os.getpid()
        self._entities: Counter[str] = Counter()

    def _scan(self, texts: list[str], prose: list[bool]) -> list[list[Any]]:
        raise NotImplementedError

    def _describe(self, hit: Any) -> tuple[str, str]:
        raise NotImplementedError

    def map(self, batch: Batch) -> Any:
        from gate.pii import snippet

        fields: list[tuple[int, str | None, str, str, bool]] = []
        for line, row in batch.rows:
            rid = row.get("id") if isinstance(row.get("id"), str) else None
            fields.extend((line, rid, path, text, prose) for path, text, prose in scan_fields(row, self._roles))
        hits = self._scan([f[3] for f in fields], [f[4] for f in fields]) if fields else []
        findings = []
        for (line, rid, path, text, _), found in zip(fields, hits, strict=True):
            for hit in found:
                rule, message = self._describe(hit)
                findings.append(Finding(self.name, batch.split, line, path, rule, "error",
                                        f"{message} at characters {hit.start}-{hit.end}", snippet(text, found), rid))
        return findings, Counter({"scanned": len(batch.rows), "texts_scanned": len(fields)})

    def reduce(self, partial: Any) -> None:
        findings, counts = partial
        self.findings.extend(findings)
        self.counts.update(counts)
        self._entities.update(f.rule for f in findings)

    def details(self) -> dict[str, Any]:
        return {"by_rule": dict(sorted(self._entities.items())), "label": "flagged / possible"}


class PiiCheck(_DetectorCheck):
    name = "pii"
    version = "1"

    def __init__(self, contract: Contract) -> None:
        super().__init__(contract)
        self._config = pii_config(contract)
        self._pattern_config = replace(self._config, use_ner=False)

    def _scan(self, texts: list[str], prose: list[bool]) -> list[list[Any]]:
        from gate.pii import scan_texts

        # in a runner worker the process is already one of N; in the parent (small inputs) let presidio fan out
        workers = None if os.getpid() == self._parent_pid else 1
        out: list[list[Any]] = [[] for _ in texts]
        for cfg, want in ((self._config, True), (self._pattern_config, False)):
            idx = [i for i, p in enumerate(prose) if p is want]
            if idx:
                for i, hits in zip(idx, scan_texts([texts[i] for i in idx], cfg, workers=workers), strict=True):
                    out[i] = hits
        return out

    def _describe(self, hit: Any) -> tuple[str, str]:
        return f"pii.{hit.entity_type}", f"possible {hit.entity_type} (score {hit.score:.2f}, {hit.recognizer})"

    def details(self) -> dict[str, Any]:
        from gate.pii import engine_info

        return {**super().details(), "engine": engine_info(self._config)}

    def result(self) -> CheckResult:
        res = super().result()
        res.summary = (f"{len(self.findings)} possible PII span(s) in {self.flagged_rows()} row(s) "
                       f"({', '.join(f'{k[4:]} {v}' for k, v in sorted(self._entities.items())) or 'none'})")
        return res


class SecretCheck(_DetectorCheck):
    name = "secret"
    version = "1"

    def __init__(self, contract: Contract) -> None:
        super().__init__(contract)
        self._config = secret_config(contract)

    def _scan(self, texts: list[str], prose: list[bool]) -> list[list[Any]]:
        from gate.pii import scan_secrets_texts

        return scan_secrets_texts(texts, self._config)

    def _describe(self, hit: Any) -> tuple[str, str]:
        return f"secret.{hit.kind}", f"possible secret: {hit.kind} ({hit.detector})"

    def result(self) -> CheckResult:
        res = super().result()
        res.summary = (f"{len(self.findings)} possible secret(s) in {self.flagged_rows()} row(s) "
                       f"({', '.join(f'{k[7:]} {v}' for k, v in sorted(self._entities.items())) or 'none'})")
        return res
