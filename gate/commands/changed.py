"""`gate check --changed-since REF`: check only the datasets a change touches; a change without data passes.

A change to the contract, or to a file it reads (an evaluation set named in `evaluation_sets`, a local tokenizer),
is a change to every dataset it checks: they are all checked, their rows changed or not. Every finding says
whether it is new or was already there at REF (gate.data.novelty); existing ones fail only with
`--fail-on-existing`.

Why whole datasets and not just the changed files: leakage and duplicate checks compare splits with each other, so
a changed `train.jsonl` is checked together with the `val`/`test` files beside it. A change that touches no dataset
file passes at once with a report that says so, so the pull-request comment is never empty or misleading.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from xml.sax.saxutils import escape

from gate.errors import ExitCode
from gate.io.atomic import atomic_dir
from gate.io.dataset import DATA_SUFFIXES, is_dataset_file
from gate.vcs import changed_files, files_under, merge_base, refuse_unseen, repo_root


def dataset_units(dataset: Path, changed: list[Path]) -> list[Path]:
    """The datasets (a file, a split directory, or a Hugging Face DatasetDict) that hold the changed data files.

    Which files are data is the reader's own list (gate.io.dataset.is_dataset_file): a suffix the reader accepts
    but this function did not know (`.ndjson`, a single `.json` file) let a faulty change pass unchecked."""
    dataset = dataset.resolve()
    units: set[Path] = set()
    single = dataset.is_file() or dataset.name.endswith(DATA_SUFFIXES)
    for f in changed:
        if single:
            if f == dataset and is_dataset_file(f, single_file=True):
                units.add(dataset)
            continue
        if not is_dataset_file(f):
            continue
        if not f.is_relative_to(dataset):
            continue
        unit = f.parent
        for anc in [f.parent, *f.parent.parents]:  # a split of a DatasetDict belongs to the dict
            if (anc / "dataset_dict.json").is_file():
                unit = anc
                break
            if anc == dataset:
                break
        if unit.exists():
            units.add(unit)
    return sorted(units)


def _slug(unit: Path, dataset: Path) -> str:
    rel = unit.relative_to(dataset) if unit != dataset and unit.is_relative_to(dataset) else Path(unit.name)
    return re.sub(r"[^A-Za-z0-9_.\-]+", "-", str(rel)).strip("-") or "dataset"


def _write_nothing_changed(report_dir: str, dataset: str, ref: str) -> str:
    md = (f"## gate check: ✅ PASS\n\nNo dataset files under `{dataset}` changed since `{ref}`; "
          "nothing to check.\n")
    with atomic_dir(report_dir) as tmp:
        (tmp / "report.md").write_text(md, encoding="utf-8")
        (tmp / "report.json").write_text(json.dumps({"schema": "gate.check.changed/1", "verdict": "pass",
                                                     "ref": ref, "dataset": dataset, "checked": []}, indent=2)
                                         + "\n", encoding="utf-8")
        (tmp / "junit.xml").write_text('<?xml version="1.0" encoding="utf-8"?>\n'
                                       f'<testsuites name="gate check" tests="0" failures="0">'
                                       f'<testsuite name="{escape(dataset)}" tests="0" failures="0"/></testsuites>\n',
                                       encoding="utf-8")
    if os.environ.get("GITHUB_STEP_SUMMARY"):
        with open(os.environ["GITHUB_STEP_SUMMARY"], "a", encoding="utf-8") as fh:
            fh.write(md)
    return md


def _combine(report_dir: Path, parts: list[tuple[str, int]], ref: str, why: str = "") -> None:
    """One report.md / report.json / junit.xml over several checked datasets, beside their own sub-reports."""
    import xml.etree.ElementTree as ET

    failed = any(code == ExitCode.GATE_FAILED for _, code in parts)
    md = [f"## gate check: {'❌ FAIL' if failed else '✅ PASS'} ({len(parts)} datasets changed since `{ref}`)\n"]
    if why.startswith("checked because"):
        from gate.pii.redact import mask_ident

        # it names files of the change: one line, e-mails and keys masked
        md.append(f"\nEvery dataset was {mask_ident(why, numbers=False)}.\n")
    suites = ET.Element("testsuites", name="gate check")
    units = []
    for slug, code in parts:
        sub = report_dir / slug
        md.append(f"\n### `{slug}`\n\n" + (sub / "report.md").read_text(encoding="utf-8").replace("\n## ", "\n#### "))
        tree = ET.parse(sub / "junit.xml").getroot()
        for suite in ([tree] if tree.tag == "testsuite" else list(tree)):
            suites.append(suite)
        units.append({"dataset": slug, "exit_code": code, "report": f"{slug}/report.json"})
    (report_dir / "report.md").write_text("".join(md), encoding="utf-8")
    (report_dir / "junit.xml").write_text(ET.tostring(suites, encoding="unicode"), encoding="utf-8")
    (report_dir / "report.json").write_text(json.dumps({"schema": "gate.check.changed/1", "ref": ref,
                                                        "verdict": "fail" if failed else "pass", "checked": units},
                                                       indent=2) + "\n", encoding="utf-8")


def _contract_changed(contract_path: str, tokenizer: str | None, changed: list[Path]) -> list[Path]:
    """The contract's inputs (itself, its evaluation sets, a local tokenizer) that this change touches."""
    from gate.contract import load_contract
    from gate.contract.model import TokenizerRef
    from gate.data.novelty import contract_inputs

    contract = load_contract(contract_path)
    if tokenizer:
        contract = dataclasses.replace(contract, tokenizer=TokenizerRef(tokenizer))
    return [p for p in contract_inputs(contract) if any(f == p or p in f.parents for f in changed)]


@dataclasses.dataclass(frozen=True)
class ChangedScope:
    """What a change touches: the datasets to check (`units`), why they are checked, and the git facts (repository
    root, merge-base commit) each one's check at the base needs. Running the checks is gate.commands.check's job."""

    units: list[Path]
    target: Path
    root: Path
    commit: str
    why: str


def changed_scope(dataset: str, ref: str, contract_path: str, tokenizer: str | None) -> ChangedScope:
    """The datasets the change since `ref` touches; a change to the contract or what it reads touches them all."""
    ds = Path(dataset)
    root = repo_root(ds)
    target = ds.resolve() if ds.exists() else ds.absolute()
    commit = merge_base(ref, root)
    refuse_unseen(root, target, ref)  # a link out of the dataset, a submodule: changes no diff below shows
    changed = changed_files(ref, root)
    units = dataset_units(target, changed)
    why = f"changed since `{ref}`"
    touched = _contract_changed(contract_path, tokenizer, changed)
    if touched:  # the verdict on every dataset the contract checks may have changed, its rows or not
        units = dataset_units(target, files_under(root, target) if target.is_dir() else [target])
        names = ", ".join(f"`{p.relative_to(root) if p.is_relative_to(root) else p.name}`" for p in touched)
        why = f"checked because {names} changed since `{ref}`"
    return ChangedScope(units, target, root, commit, why)


def full_check_reason(unit: Path, scope: ChangedScope, *, fail_on_existing: bool) -> str:
    """Why `unit` must be checked whole, here and at the base, rather than incrementally (only its changed rows,
    duplicates and leakage against its index); "" when the incremental path can answer the same question.

    The incremental path sees only the rows the change added or edited, so it cannot say what a changed contract
    (or evaluation set, or tokenizer) now finds in the old rows, nor list the existing findings
    `--fail-on-existing` fails on; and its index holds JSON Lines splits only."""
    from gate.index.lines import INDEXABLE
    from gate.io.dataset import discover

    if scope.why.startswith("checked because"):
        return scope.why.replace("checked because", "the contract's inputs changed:", 1)
    if fail_on_existing:
        return "--fail-on-existing needs the findings of every row"
    formats = sorted({src.format for src in discover(unit)} - set(INDEXABLE))
    if formats:
        return f"the index holds JSON Lines splits only, and this dataset has {', '.join(formats)}"
    return ""


def pass_nothing_changed(report_dir: str, dataset: str, ref: str) -> int:
    """A change without data: a passing report that says so (the pull-request comment is never empty)."""
    _write_nothing_changed(report_dir, dataset, ref)
    print(f"PASS no dataset files under {dataset} changed since {ref}; nothing to check → {report_dir}/report.md")
    return int(ExitCode.PASS)


def check_units(scope: ChangedScope, report_dir: str, ref: str, check_one: Callable[[Path, str], int]) -> int:
    """Runs `check_one(unit, report_dir)` on every touched dataset: one dataset reports to `report_dir` itself,
    several each to a sub-directory with one combined report over them (written atomically). The worst exit code."""
    if len(scope.units) == 1:
        return check_one(scope.units[0], report_dir)
    parts: list[tuple[str, int]] = []
    with atomic_dir(report_dir) as tmp:
        for unit in scope.units:
            slug = _slug(unit, scope.target)
            parts.append((slug, check_one(unit, str(tmp / slug))))
        _combine(tmp, parts, ref, scope.why)
    return max(code for _, code in parts)
