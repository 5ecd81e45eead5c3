"""New or existing: which findings of a pull-request check (`gate check --changed-since REF`) were already there.

A dataset pull request must be judged on what it changes: a duplicate that sat on the target branch for months
should not fail an unrelated pull request, and it must not be hidden either. So every finding of a PR run says
`new` or `existing`, the report lists the new ones first, and existing ones fail only with `--fail-on-existing`.

Why the base is checked again, and not "findings on changed rows are new": a changed contract, evaluation set or
tokenizer makes findings on unchanged rows new (a tightened contract gave 240 findings on
untouched data), and an added row can make an untouched row a duplicate of it. So the base is checked as it was:
its data, its contract, its evaluation sets and tokenizer (when they live in the repository), read from git's
objects at the merge-base with REF into a scratch folder, with the same checks and the same gate.

A finding is *existing* when the base check has the same finding: same check, rule, field and split, on a row
with the same stored content (the digest of its line for JSON Lines, so rows that moved still match; the row's
`id`, else its number, for columnar files), or, for a dataset-level finding, the same message. Findings are
matched as a multiset: a third copy of a row that had two is one new finding.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from gate.contract import Contract, load_contract
from gate.contract.model import TokenizerRef
from gate.data.base import CheckResult, Finding
from gate.data.runner import CheckRun, run_checks
from gate.errors import GateError
from gate.io.dataset import discover

NEW, EXISTING = "new", "existing"


@dataclass
class BaseCheck:
    """The check of a dataset as it was at the base commit (`run` None: the dataset did not exist there, or the
    base could not be checked, `note` says why; every finding is then new)."""

    ref: str
    commit: str
    run: CheckRun | None
    row_keys: dict[tuple[str, int], Any] = field(default_factory=dict)
    note: str = ""
    why: str = ""  # why this dataset is checked in this pull request (its rows changed, or the contract)
    full_because: str = ""  # why every row was checked here and at the base, not only the changed ones


def contract_inputs(contract: Contract) -> list[Path]:
    """The files a contract's verdict depends on besides the data: itself, its evaluation sets (the scorecard suites
    contamination compares against) and a local tokenizer (the chat-template audit). A pull request that changes
    one of them changes the verdict on every dataset checked with the contract."""
    out = [Path(contract.path).resolve(), *(Path(p).resolve() for p in contract.evaluation_sets)]
    if contract.tokenizer is not None and Path(contract.tokenizer.path).exists():
        out.append(Path(contract.tokenizer.path).resolve())
    return out


def row_keys(dataset: str | Path) -> dict[tuple[str, int], Any]:
    """(split, row) -> the digest of the row's stored line, for every JSON Lines split (columnar splits: none; their
    findings are matched by row id or number)."""
    from gate.index.lines import INDEXABLE, current_lines

    out: dict[tuple[str, int], Any] = {}
    for src in discover(dataset):
        if src.format in INDEXABLE:
            table = current_lines(src)
            out.update(zip(((src.split, ln) for ln in table.lines.tolist()), table.digests, strict=True))
    return out


def _key(f: Finding, keys: dict[tuple[str, int], Any]) -> tuple[Any, ...]:
    where: Any
    if f.row is None:
        where = ("message", f.message)
    elif (f.split, f.row) in keys:
        where = ("line", keys[(f.split, f.row)])
    elif f.row_id is not None:
        where = ("id", f.row_id)
    else:
        where = ("row", f.row)
    return (f.check, f.rule, f.field, f.split, where)


def _base_contract(contract_path: Path, root: Path, commit: str, scratch: Path, current: Contract,
                   tokenizer: str | None) -> Contract:
    """The contract as it was at `commit`, with its relative evaluation sets and tokenizer from `commit` too.
    A contract outside the repository, or new in this change, is the current one."""
    from gate.vcs import export_at

    if not export_at(commit, root, [contract_path], scratch):
        return current
    rel = contract_path.resolve().relative_to(root.resolve())
    base_path = scratch / rel
    try:
        raw = yaml.safe_load(base_path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        raw = {}
    refs = [*(raw.get("evaluation_sets") or [])] if isinstance(raw, dict) else []
    tok = raw.get("tokenizer") if isinstance(raw, dict) else None
    if isinstance(tok, dict) and isinstance(tok.get("path"), str):
        refs.append(tok["path"])
    wanted = [contract_path.parent / r for r in refs if isinstance(r, str) and not Path(r).is_absolute()]
    export_at(commit, root, wanted, scratch)
    base = load_contract(base_path)
    inside = scratch.resolve()
    # an evaluation set that did not exist at the base: the base was not compared with it
    evals = tuple(p for p in base.evaluation_sets if Path(p).exists() or not Path(p).is_relative_to(inside))
    base = dataclasses.replace(base, evaluation_sets=evals)
    if tokenizer:
        base = dataclasses.replace(base, tokenizer=TokenizerRef(tokenizer))
    return base


def check_at_base(unit: Path, contract_path: str, *, ref: str, root: Path, commit: str, current: Contract,
                  checks: list[str] | None, workers: int | None, tokenizer: str | None = None) -> BaseCheck:
    """Checks `unit` (a dataset inside the repository at `root`) as it was at `commit`, with the base's contract."""
    import tempfile

    from gate.vcs import export_at

    # outside the work tree: a folder left there by a killed run would itself look like changed data next time
    with tempfile.TemporaryDirectory(prefix="gate-base-") as tmp:
        scratch = Path(tmp)
        try:
            if not export_at(commit, root, [unit], scratch):
                return BaseCheck(ref, commit, None, note=f"`{unit.name}` is new since `{ref}`")
            base_unit = scratch / unit.resolve().relative_to(root.resolve())
            contract = _base_contract(Path(contract_path), root, commit, scratch, current, tokenizer)
            run = run_checks(str(base_unit), contract, checks=checks, workers=workers, progress=False)
            return BaseCheck(ref, commit, run, row_keys(base_unit))
        except GateError as exc:  # the base's own defects must not stop the pull request's check
            return BaseCheck(ref, commit, None, note=f"the base `{ref}` could not be checked ({exc}); "
                                                     "every finding counts as new")


def mark(run: CheckRun, base: BaseCheck, *, fail_on_existing: bool = False) -> dict[str, int]:
    """Labels every finding of `run` new or existing; unless `fail_on_existing`, a failed check whose base failed
    too and that has no new error is reported as `warn` (its findings stay in the report, marked existing)."""
    keys = row_keys(run.dataset)
    base_results = {r.name: r for r in base.run.results} if base.run is not None else {}
    new = existing = 0
    for res in run.results:
        have = Counter(_key(f, base.row_keys) for f in base_results[res.name].findings) \
            if res.name in base_results else Counter()
        labelled = []
        for f in res.findings:
            k = _key(f, keys)
            label = EXISTING if have[k] > 0 else NEW
            have[k] -= label == EXISTING
            labelled.append(dataclasses.replace(f, novelty=label))
        res.findings = labelled
        n_new = sum(f.novelty == NEW for f in labelled)
        new += n_new
        existing += len(labelled) - n_new
        res.counts["new_findings"] = n_new
        res.counts["existing_findings"] = len(labelled) - n_new
        _apply_policy(res, base_results.get(res.name), base.ref, fail_on_existing)
    summary = {"new": new, "existing": existing}
    run.options["novelty"] = {"ref": base.ref, "base_commit": base.commit, "fail_on_existing": fail_on_existing,
                              **summary, **({"note": base.note} if base.note else {}),
                              **({"why": base.why} if base.why else {}),
                              **({"full_because": base.full_because} if base.full_because else {})}
    return summary


def _apply_policy(res: CheckResult, base: CheckResult | None, ref: str, fail_on_existing: bool) -> None:
    if fail_on_existing or res.status != "fail" or base is None or base.status != "fail":
        return
    if any(f.novelty == NEW and f.severity == "error" for f in res.findings):
        return
    res.status = "warn"
    res.details["existing_only"] = True
    res.summary = (f"{res.summary}; " if res.summary else "") + \
        f"failed on `{ref}` already, nothing new (--fail-on-existing fails on it)"
