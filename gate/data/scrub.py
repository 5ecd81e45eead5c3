"""`gate scrub`: a new dataset without personal data, secrets and duplicates, and a manifest of what changed.

Which rows go is decided by `gate check` itself, on the original text: the checks whose findings carry a drop
action (`gate.data.scrub_rules`: duplicates, leaks, empty messages, rules the contract's operators drop) run on
the input, and exactly the rows they flag are left out. Deciding on rewritten text instead dropped rows no check
had flagged ("The capital of <LOCATION>" twice) and kept rows it had. Then one pass rewrites the PII and secret
hits of the remaining rows, each row's texts together so one value gets one replacement in every turn
(`gate.pii.anonymize.anonymize_texts`); a hit whose operator is `drop_row` drops its row. A row with nothing to
rewrite is copied byte for byte (its JSONL line as it was; a Parquet row as the same record). MANIFEST.json lists,
per finding rule, the rows dropped and changed (split, line and id; an id that looks like a contact is masked),
and the rewritten rows that became identical to another output row (two addresses, one `<EMAIL_ADDRESS>`): they
stay, since no check flagged them, and the `hash` operator keeps distinct values apart.
The output directory appears atomically; the input is only read.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from gate import __version__
from gate.contract import Contract
from gate.data.base import Batch, RunContext
from gate.data.pii_scan import RowScanner, set_field
from gate.data.scrub_rules import DETECTOR_CHECKS, ScrubRules
from gate.data.text import normalize, row_text
from gate.errors import GateError
from gate.io.dataset import Chunk, SplitStats, discover, iter_chunks
from gate.io.digest import text_digest
from gate.io.rows import parse_chunk
from gate.io.writer import SplitWriter


@dataclass
class ScrubOutcome:
    rows_in: int = 0
    rows_out: int = 0
    entities: Counter[str] = field(default_factory=Counter)
    dropped: Counter[str] = field(default_factory=Counter)  # finding rule -> rows dropped (each row once)
    rows_changed: Counter[str] = field(default_factory=Counter)  # finding rule -> rows rewritten
    manifest: dict[str, Any] = field(default_factory=dict)
    #: rewritten rows whose text became identical to an earlier output row of their split (distinct values, one
    #: placeholder): kept, since no check flagged them, but `exact_duplicate` will on the output; `hash` avoids it
    identical_after_rewrite: int = 0


def scrub_config(contract: Contract) -> Any:
    from gate.pii import ScrubConfig

    rules = ScrubRules.of(contract)
    salt_env = dict(contract.raw.get("scrub") or {}).get("salt_env", "GATE_SCRUB_SALT")
    try:
        return ScrubConfig(operators=rules.operators, default_operator=rules.default_operator,
                           salt=os.environ.get(salt_env, ""))
    except ValueError as exc:
        raise GateError(f"scrub: {exc} (the salt comes from ${salt_env})", file=contract.path) from None


def drop_checks(rules: ScrubRules, contract: Contract) -> list[str]:
    """The checks whose findings can drop a row under these rules, in run order: those that declare a drop action
    (`Check.drop_action`, a plugin's too) the contract leaves on, and those the operators set to `drop_row` by name
    or rule; a check the contract skips (`skip_reason`) is left out. Here, not on ScrubRules: it needs the check
    registry, which imports gate.data.base, which reads ScrubRules (no import cycle)."""
    from gate.data.registry import CHECKS

    wanted: set[str] = set()
    ops = dict(rules.operators)
    for name in CHECKS.usable():
        if CHECKS.literal(name, "drop_action") is None:
            continue
        declared = CHECKS.literal(name, "drop_rules") or ()
        if any(rules.finding_action(name, rule) == "drop_row" for rule in declared) or (
                not declared and rules.finding_action(name, name) == "drop_row"):
            wanted.add(name)
    for name, op in ops.items():
        if op != "drop_row":
            continue
        head = name.split(".")[0]
        if head in DETECTOR_CHECKS:
            continue
        if name in CHECKS:
            wanted.add(name)
        elif head in CHECKS:
            wanted.add(head)
        elif "." in name:  # the contract check's rules are dotted: field.pattern, messages.roles
            wanted.add("contract")
    return [name for name in CHECKS if name in wanted and CHECKS[name].skip_reason(contract) is None]


def check_drops(dataset: str, contract: Contract, rules: ScrubRules, names: list[str]
                ) -> dict[tuple[str, int], tuple[str, Any]]:
    """(split, line) -> (finding rule, row id) of every row the checks `names` flag with a drop action, in the
    checks' run order (a row flagged twice goes under its first rule). The checks run on the original input, as
    `gate check` runs them."""
    from gate.data.runner import run_checks

    if not names:
        return {}
    run = run_checks(dataset, contract, checks=names)
    drops: dict[tuple[str, int], tuple[str, Any]] = {}
    for result in run.results:
        for f in result.findings:
            if f.row is not None and rules.finding_action(f.check, f.rule) == "drop_row":
                drops.setdefault((f.split, f.row), (f.rule, f.row_id))
    return drops


def _row_contract(contract: Contract, rules: ScrubRules, names: list[str]) -> Any:
    """The contract check, to run its per-row rules (`messages.empty`) in scrub's own pass, when no drop rule
    needs its column rules: those import great-expectations (seconds per process) and read the dataset again.
    Its `map` is the check's own code, so the rows it flags are the rows `gate check` flags. None otherwise (the
    whole check then runs in `check_drops`)."""
    if "contract" not in names or rules.needs_column_rules():
        return None
    from gate.data.checks.contract import ContractCheck

    names.remove("contract")
    return ContractCheck(contract)


class _Ledger:
    """Per finding rule, the rows dropped and changed, as MANIFEST.json lists them."""

    def __init__(self) -> None:
        self.rules: dict[str, dict[str, list[dict[str, Any]]]] = {}

        self.identical: list[dict[str, Any]] = []

    def add(self, rule: str, what: str, split: str, line: int, rid: Any) -> None:
        self.rules.setdefault(rule, {"dropped": [], "changed": []})[what].append(_entry(split, line, rid))

    def add_identical(self, split: str, line: int, rid: Any) -> None:
        self.identical.append(_entry(split, line, rid))


def _entry(split: str, line: int, rid: Any) -> dict[str, Any]:
    """Where a row is, for the manifest: split, line and id (an id that is an e-mail or a phone number is personal
    data too: masked with the reports' helper)."""
    from gate.pii import mask_loose

    entry: dict[str, Any] = {"split": split, "row": line}
    if isinstance(rid, str | int) and not isinstance(rid, bool):
        entry["id"] = mask_loose(str(rid))
    return entry


def scrub_dataset(dataset: str, contract: Contract, out: str) -> ScrubOutcome:
    from gate.pii import anonymize_texts

    cfg = scrub_config(contract)
    rules = ScrubRules.of(contract)
    sources = discover(dataset)
    names = drop_checks(rules, contract)
    row_contract = _row_contract(contract, rules, names)
    drops = check_drops(dataset, contract, rules, names)
    scanner = RowScanner(contract)
    context = RunContext()  # this scrub's memos: each distinct text is scanned once
    outcome = ScrubOutcome()
    ledger = _Ledger()
    inputs: list[SplitStats] = []
    seen: dict[tuple[str, bytes], bool] = {}  # (split, digest of the output's normal form) -> was it rewritten

    def note(split: str, line: int, row: dict[str, Any], rewritten: bool = False) -> None:
        """Notes a row's output text, and the row when an earlier output row of the split has the same text and
        one of the two was rewritten (copies in the input are the duplicate checks' business)."""
        key = (split, text_digest(normalize(row_text(row, contract.text_roles, contract.include_tool_calls))))
        if key not in seen:
            seen[key] = rewritten
        elif rewritten or seen[key]:
            ledger.add_identical(split, line, row.get("id"))
            outcome.identical_after_rewrite += 1

    writer = SplitWriter(out, [s.split for s in sources])
    with writer:
        for src in sources:
            stats = SplitStats(src.split, src.display, src.format)
            inputs.append(stats)
            for chunk in iter_chunks(src, stats):
                rows = parse_chunk(chunk)
                stats.rows += len(rows)
                outcome.rows_in += len(rows)
                lines = _raw_lines(chunk)
                if row_contract is not None:  # the contract check runs first in `gate check` too
                    for f in row_contract.map(Batch(src.split, src.display, rows))[0]:
                        if rules.finding_action(f.check, f.rule) == "drop_row":
                            drops[(f.split, f.row)] = (f.rule, f.row_id)
                todo = []
                for line, row in rows:
                    found = drops.get((src.split, line))
                    if found is None:
                        todo.append((line, row))
                        continue
                    outcome.dropped[found[0]] += 1
                    ledger.add(found[0], "dropped", src.split, line, found[1])
                for (line, row), fields in zip(todo, scanner.scan([r for _, r in todo], context), strict=True):
                    with_hits = [fh for fh in fields if fh.pii or fh.secrets]
                    if not with_hits:  # no finding: the row as it was
                        note(src.split, line, row)
                        _write_as_is(writer, src.split, row, lines.get(line))
                        outcome.rows_out += 1
                        continue
                    results = anonymize_texts([fh.text for fh in fields], [fh.pii + fh.secrets for fh in fields],
                                              cfg)
                    rid = row.get("id")
                    drop_rules = sorted({r for res in results for r in res.drop_rules})
                    if drop_rules:
                        outcome.dropped[drop_rules[0]] += 1
                        ledger.add(drop_rules[0], "dropped", src.split, line, rid)
                        continue
                    changed = sorted({r for res in results for r in res.rules})
                    if not changed:  # every hit is kept
                        note(src.split, line, row)
                        _write_as_is(writer, src.split, row, lines.get(line))
                        outcome.rows_out += 1
                        continue
                    for fh, res in zip(fields, results, strict=True):
                        if res.text != fh.text:
                            set_field(row, fh.path, res.text)
                        outcome.entities.update(res.counts)
                    for rule in changed:
                        outcome.rows_changed[rule] += 1
                        ledger.add(rule, "changed", src.split, line, rid)
                    note(src.split, line, row, rewritten=True)
                    writer.write(src.split, row)
                    outcome.rows_out += 1
        outcome.manifest = writer.manifest = {
            "kind": "gate.scrub/2",
            "gate_version": __version__,
            "input": {"path": dataset, "splits": [{"split": st.split, "file": st.file, "rows": st.rows,
                                                   "sha256": st.sha256} for st in inputs]},
            "contract": {"name": contract.name, "version": contract.version, "sha256": contract.sha256},
            "scrub_config": str(cfg),
            "pii_config": str(scanner.pii_config),
            "rows": {"in": outcome.rows_in, "out": outcome.rows_out},
            "entities_rewritten": dict(sorted(outcome.entities.items())),
            "rows_changed": dict(sorted(outcome.rows_changed.items())),
            "rows_dropped": dict(sorted(outcome.dropped.items())),
            # rows no check flagged whose text equals an earlier output row's once rewritten (two addresses, one
            # <EMAIL_ADDRESS>): kept, as the check decides on the original text; `hash` keeps such values apart
            "identical_after_rewrite": ledger.identical,
            # per finding rule: {"dropped": [{"split", "row", "id"}], "changed": [...]}; a dropped row once
            "by_rule": dict(sorted(ledger.rules.items())),
        }
    return outcome


def _raw_lines(chunk: Chunk) -> dict[int, bytes]:
    """line -> the bytes of that JSONL line, split as `parse_chunk` splits them (none for columnar chunks)."""
    if chunk.blob is None:
        return {}
    out: dict[int, bytes] = {}
    for i, line in enumerate(chunk.blob.split(b"\n")):
        if line.strip():
            out[chunk.first_row + i] = line
    return out


def _write_as_is(writer: SplitWriter, split: str, row: dict[str, Any], raw: bytes | None) -> None:
    """A row scrub leaves alone: its input line byte for byte when it has one, else the same record."""
    if raw is not None:
        writer.write_raw(split, raw)
    else:
        writer.write(split, row)
