"""Rendering a `gate check` run: report.json (for machines), report.md (for the pull request), junit.xml (for CI).

All three are rendered from the same CheckRun and written together, atomically.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from gate.data.base import CheckResult, Finding
from gate.data.runner import CheckRun
from gate.io.atomic import atomic_dir
from gate.names import CHECK_NAMES
from gate.severity import severity_rank

REPORT_SCHEMA = "gate.check.report/1"
STATUS_ICON = {"pass": "✅", "fail": "❌", "warn": "⚠️", "skipped": "➖"}


def _split_rank(run: CheckRun) -> dict[str, int]:
    return {s.split: i for i, s in enumerate(run.splits)}


def sorted_findings(run: CheckRun, res: CheckResult) -> list[Finding]:
    """Errors, then warnings, then info, each in file order; in a pull-request run the new findings first
    (gate.data.novelty), then the existing ones. Every capped view reads this order (report.json's cap, report.md's
    examples, junit's failure text, the annotations): in file order alone the first ten of a check with hundreds of
    warnings hid the error that failed it."""
    rank = _split_rank(run)
    return sorted(res.findings, key=lambda f: (f.novelty == "existing", severity_rank(f.severity),
                                               rank.get(f.split, -1),
                                               f.row if f.row is not None else -1, f.field or "", f.rule))


def to_json(run: CheckRun, max_findings: int | None = None) -> dict[str, Any]:
    """The report as JSON; at most `max_findings` findings per check (default: the `max_report_findings` limit,
    gate.io.limits), the first in report order, with each check's count of those left out. DuckDB keeps them all:
    a million-row file of bad rows must not become a quarter-gigabyte report."""
    from gate.io.limits import current

    cap = current().max_report_findings if max_findings is None else max_findings
    kept = {r.name: sorted_findings(run, r)[:cap] for r in run.results}
    omitted = {r.name: len(r.findings) - len(kept[r.name]) for r in run.results if len(r.findings) > cap}
    out = {
        "schema": REPORT_SCHEMA,
        "gate_version": run.gate_version,
        "run_id": run.run_id,
        "started_at": run.started_at.isoformat(),
        "seconds": round(run.seconds, 3),
        "verdict": run.verdict,
        "dataset": {"path": run.dataset, "fingerprint": run.fingerprint,
                    "splits": [{"split": s.split, "file": s.file, "format": s.format, "rows": s.rows,
                                "bytes": s.bytes, "sha256": s.sha256} for s in run.splits]},
        "contract": {"name": run.contract.name, "version": run.contract.version, "path": run.contract.path,
                     "sha256": run.contract.sha256},
        "checks": [{"name": r.name, "version": r.version, "status": r.status, "counts": r.counts,
                    "summary": r.summary, "seconds": round(r.seconds, 4), "details": r.details}
                   for r in run.results],
        "findings": [f.to_dict() for r in run.results for f in kept[r.name]],
        "timings": run.timings,
    }
    if omitted:
        out["findings_omitted"] = {"limit": cap, "by_check": omitted, "where": "all findings are in the DuckDB record"}
    return out


def incremental_line(run: CheckRun) -> str:
    """Which mode ran, for a `--base` run: a reader must know the verdict is on the new rows only."""
    o = run.options
    if not o.get("base_commit"):
        return ""
    return (f"Incremental against `{str(o['base_commit'])[:12]}` (`{o.get('base')}`): {o.get('changed_rows', 0):,} "
            f"new row(s) checked (added or edited); duplicates and leakage against the index of "
            f"{o.get('index_rows', 0):,} row(s)")


#: per check, what to do when it fails: {scrub} is the `gate scrub` command line for this run, {split} `gate split`'s;
#: the contract key to change and the section of docs/contracts.md (or docs/security.md) that explains it
NEXT_STEPS: dict[str, str] = {
    "contract": "fix the rows, or change the contract key the finding's rule names if they are legal "
                "(docs/contracts.md, Keys); to drop such rows: `scrub.operators: {{RULE: drop_row}}` in the "
                "contract, then {scrub}",
    "conflicting_answers": "which answer is right is a reviewer's call, not a drop: {review} queues the pairs, "
                           "then `gate apply` writes the reviewed corrections to a copy; prompts that are only "
                           "alike: `checks.conflicting_answers.prompt_threshold` (docs/contracts.md, "
                           "`conflicting_answers`)",
    "exact_duplicate": "{scrub} drops the later copies and keeps the first (docs/contracts.md, `exact_duplicate`)",
    "near_duplicate": "{scrub} drops the near copies by the keep rule; or change `checks.near_duplicate.threshold` / "
                      "`keep` (docs/contracts.md, `near_duplicate`)",
    "semantic_duplicate": "{scrub} drops the paraphrases; or change `checks.semantic_duplicate.threshold` "
                          "(docs/contracts.md, `semantic_duplicate`)",
    "leakage": "{scrub} drops the copies in the less protected split (`scrub.drop_leakage`); a file that is another "
               "split than its name says needs a `splits` rule (docs/contracts.md, `leakage` and Splits)",
    "contamination": "remove the training rows that contain the evaluation items named above, or "
                     "`scrub.operators: {{contamination: drop_row}}` then {scrub}; which splits are read: "
                     "`checks.contamination.train_splits` / `eval_splits` and `splits` (docs/contracts.md, "
                     "`contamination`)",
    "pii": "{scrub} masks or drops them by `scrub.operators`; a false positive: `checks.pii.entities` or "
           "`thresholds` (docs/contracts.md, `pii`)",
    "secret": "rotate the credential first (it is in the history), then {scrub} (docs/contracts.md, `secret`)",
    "group_split": "{split} reassigns whole groups by `group_key` (docs/contracts.md, `group_split`)",
    "length": "shorten or drop the rows, or raise `limits.max_row_chars` / `limits.max_message_chars` "
              "(docs/contracts.md, `length`)",
    "boilerplate": "rewrite the repeated answer lines, or change `checks.boilerplate` (docs/contracts.md, "
                   "`boilerplate`)",
    "template": "fix the rows or the chat template the finding names (docs/contracts.md, `template`)",
    "contract_change": "the pull request loosens the contract: have its owners approve the change (docs/security.md, "
                       "The verdict comes from the base)",
}


def next_steps(run: CheckRun) -> list[str]:
    """One line per failing check saying what to do next (NEXT_STEPS), with this run's own scrub and split commands:
    a report that says what was found but not what to do leaves a new user at the findings table."""
    dataset, contract = (shlex.quote(repo_relative(p).rstrip("/")) for p in (run.dataset, run.contract.path))
    commands = {"scrub": _code(f"gate scrub {dataset} -c {contract} -o {dataset}-scrubbed"),
                "split": _code(f"gate split {dataset} -c {contract} -o {dataset}-split"),
                "review": _code(f"gate review {dataset} -c {contract}")}
    return [f"`{r.name}`: " + NEXT_STEPS.get(r.name, "see docs/contracts.md, `{name}`").format(name=r.name, **commands)
            for r in run.results if r.status == "fail"]


def to_markdown(run: CheckRun, max_examples: int = 10) -> str:
    verdict = "✅ PASS" if run.verdict == "pass" else "❌ FAIL"
    failed = [r.name for r in run.results if r.status == "fail"]
    lines = [f"## gate check: {verdict}", ""]
    lines.append(f"{_code(repo_relative(run.dataset))} against contract **{_md(run.contract.name)}** "
                 f"v{_md(run.contract.version)} ({run.rows:,} rows in {len(run.splits)} split(s); "
                 f"fingerprint `{run.fingerprint[:12]}`, contract `{run.contract.sha256[:12]}`).")
    if failed:
        lines.append(f"Failed checks: {', '.join(f'`{n}`' for n in failed)}.")
    if incremental_line(run):
        lines.append(incremental_line(run) + ".")
    novelty = run.options.get("novelty")
    if novelty:  # a pull-request run: what it adds, and what was there at its base already
        policy = "fail too" if novelty.get("fail_on_existing") else "do not fail the change (`--fail-on-existing`)"
        lines.append(f"Against `{novelty['ref']}` (`{novelty['base_commit'][:12]}`): **{novelty['new']:,} new** "
                     f"finding(s), {novelty['existing']:,} existing; existing ones {policy}."
                     + (f" {_md(novelty['why'])[0].upper()}{_md(novelty['why'])[1:]}." if novelty.get("why") else "")
                     + (f" Note: {_md(novelty['note'])}." if novelty.get("note") else ""))
        # which path ran: a reader of a pull request's report must know every row was read, and why
        lines.append("Full check: every row here and at the base" + (
            f" (not incremental: {_md(novelty['full_because'])})." if novelty.get("full_because") else "."))
    lines += ["", "| check | status | scanned | flagged rows | findings | summary |", "|---|---|---:|---:|---:|---|"]
    for r in run.results:
        lines.append(f"| `{r.name}` | {STATUS_ICON.get(r.status, '')} {r.status} | {r.counts.get('scanned', 0):,} | "
                     f"{r.counts.get('flagged_rows', 0):,} | {r.counts.get('findings', 0):,} | {_md(r.summary)} |")
    not_run = [n for n in CHECK_NAMES if n not in {r.name for r in run.results}]
    if not_run:
        lines += ["", f"<sub>Not run: {', '.join(not_run)}.</sub>"]
    # a check that ran with less than it was asked for (details["warnings"], e.g. pii without its NER model) first
    notes = [(r.name, f"⚠️ {line}") for r in run.results for line in r.details.get("warnings", [])]
    notes += [(r.name, line) for r in run.results for line in r.details.get("report_lines", [])]
    if notes:
        lines += [""] + [f"- `{name}`: {_md(line)}" for name, line in notes]
    steps = next_steps(run)
    if steps:
        lines += ["", "**Next steps**", ""] + [f"- {_md_keep_code(step)}" for step in steps]
    lines += ["", "| split | rows | file | sha256 |", "|---|---:|---|---|"]
    for s in run.splits:
        lines.append(f"| {_md(s.split)} | {s.rows:,} | {_code(Path(s.file).name)} | `{s.sha256[:12]}` |")
    for r in run.results:
        if not r.findings:
            continue
        shown = sorted_findings(run, r)[:max_examples]
        lines += ["", f"### `{r.name}`: {len(r.findings)} finding(s)"
                  + (f", first {len(shown)}" if len(shown) < len(r.findings) else ""), "",
                  "| " + ("since base | " if novelty else "") + "split | row | id | field | rule | message | "
                  "snippet (redacted) |", "|" + ("---|" if novelty else "") + "---|---:|---|---|---|---|---|"]
        for f in shown:
            lines.append("| " + (f"**{f.novelty}** | " if novelty and f.novelty == "new" else
                                 f"{f.novelty} | " if novelty else "")
                         + f"{_md(f.split)} | {f.row if f.row is not None else '–'} | {_md(f.row_id or '')} | "
                         f"{_code(f.field or '')} | {_code(f.rule)} | {_md(f.message)} | {_md(f.snippet or '')} |")
    lines += ["", f"<sub>gate {run.gate_version} · run `{run.run_id}` · {run.seconds:.1f} s</sub>", ""]
    return "\n".join(lines)


def _md(text: str) -> str:
    """Text from the data or the contract as one markdown table cell: one line, no cell break, no HTML tag (a
    placeholder such as <PERSON> shows as written; an <img> from a file name is not rendered)."""
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("|", "\\|")
            .replace("\r", " ").replace("\n", " "))


def _md_keep_code(text: str) -> str:
    """A line of ours with code spans, as one markdown list line: no HTML tag, no line break."""
    return text.replace("<", "&lt;").replace(">", "&gt;").replace("\r", " ").replace("\n", " ")


def _code(text: str) -> str:
    """Text as an inline code span in a table cell: a backtick in it cannot close the span early."""
    return "`" + text.replace("`", "'").replace("|", "\\|").replace("\r", " ").replace("\n", " ") + "`"


def to_junit(run: CheckRun, max_listed: int = 50) -> str:
    fails = sum(1 for r in run.results if r.status == "fail")
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           f'<testsuites name="gate check" tests="{len(run.results)}" failures="{fails}" '
           f'time="{run.seconds:.3f}">',
           f'  <testsuite name={quoteattr("gate check " + run.contract.name)} tests="{len(run.results)}" '
           f'failures="{fails}" errors="0" skipped="0" time="{run.seconds:.3f}">']
    for r in run.results:
        out.append(f'    <testcase classname="gate.check" name={quoteattr(r.name)} time="{r.seconds:.3f}">')
        if r.status == "fail":
            body = "\n".join(f"{f.split}:{f.row} {f.field} {f.rule}: {f.message}"
                             for f in sorted_findings(run, r)[:max_listed])
            out.append(f"      <failure message={quoteattr(r.summary)} type=\"gate.{r.name}\">"
                       f"{escape(body)}</failure>")
        elif r.findings:
            out.append(f"      <system-out>{escape(r.summary)}</system-out>")
        out.append("    </testcase>")
    out += ["  </testsuite>", "</testsuites>", ""]
    return "\n".join(out)


def repo_relative(path: str, root: Path | None = None) -> str:
    """`path` relative to the repository root (`root`, else the one holding it; see `_repo_root`) when inside it,
    else as given: a PR comment and an annotation name `data/triage`, not the runner's absolute clone path."""
    if root is None:
        root = _repo_root(Path(path).resolve())
    if root is not None:
        try:
            return Path(path).resolve().relative_to(root).as_posix()
        except ValueError:
            pass  # outside the repository: as given
    return path


def _repo_root(anchor: Path) -> Path | None:
    """The root GitHub resolves annotation paths against: $GITHUB_WORKSPACE (the checkout), else the git work tree
    holding the dataset; None outside any (the path is then printed as given)."""
    if os.environ.get("GITHUB_WORKSPACE"):
        return Path(os.environ["GITHUB_WORKSPACE"]).resolve()
    import subprocess

    start = anchor if anchor.is_dir() else anchor.parent
    try:
        out = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=start, capture_output=True, text=True,
                             timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return Path(out.stdout.strip()).resolve() if out.returncode == 0 and out.stdout.strip() else None


def _property(value: str) -> str:
    """A workflow-command property value, escaped as the runner expects (`,` and `:` end a property)."""
    return (value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A").replace(":", "%3A")
            .replace(",", "%2C"))


def _annotation_level(res: CheckResult, f: Finding) -> str:
    """The workflow command for one finding: `error` only for an error of a check that failed, `warning` for a
    warning (or an error the check's threshold allows), `notice` for info. Every finding of a failed check was an
    `::error` on the pull request's diff, its warnings too: a story's character shown as a failure."""
    if f.severity == "info":
        return "notice"
    return "error" if f.severity == "error" and res.status == "fail" else "warning"


def github_annotations(run: CheckRun, max_per_check: int = 20) -> list[str]:
    """`::error file=...,line=...::` workflow commands, capped per check so a bad file does not flood the log.

    `file` is relative to the repository root: GitHub attaches an annotation to the pull request's diff only then
    (an absolute path of the runner's clone shows in the log alone)."""
    from gate.io.dataset import SPLIT_FORMATS

    lines = []
    split_file = {s.split: s.file for s in run.splits}
    root = _repo_root(Path(run.dataset).resolve()) if run.results else None
    # a line number GitHub can point at: files read as plain JSON Lines (.jsonl, .ndjson, .json) and YAML
    lined = (*(s for s, fmt in SPLIT_FORMATS.items() if fmt == "jsonl"), ".yaml", ".yml")

    def shown(file: str) -> str:
        return repo_relative(file, root)

    for r in run.results:
        for f in sorted_findings(run, r)[:max_per_check]:
            level = _annotation_level(r, f)
            # a contract_change finding names the contract file (repository-relative) as its "split"
            file = split_file.get(f.split) or (f.split if r.name == "contract_change" else run.dataset)
            loc = f"file={_property(shown(file))}" + (
                f",line={f.row}" if f.row is not None and file.endswith(lined)
                else "")
            msg = f"{f.field}: {f.rule}: {f.message}".replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
            lines.append(f"::{level} {loc},title=gate {r.name}::{msg}")
    return lines


def write_reports(run: CheckRun, report_dir: str | Path, max_examples: int = 10,
                  before_commit: Callable[[], None] | None = None) -> Path:
    """Writes report.json, report.md and junit.xml into `report_dir`, atomically replacing an older report.

    `before_commit` runs once the files are written and before they replace `report_dir` (e.g. recording the run):
    if it raises, no report of this run is left behind and an older one stays as it was."""
    report_dir = Path(report_dir)
    with atomic_dir(report_dir) as tmp:
        (tmp / "report.json").write_text(json.dumps(to_json(run), indent=2, default=str) + "\n", encoding="utf-8")
        (tmp / "report.md").write_text(to_markdown(run, max_examples), encoding="utf-8")
        (tmp / "junit.xml").write_text(to_junit(run), encoding="utf-8")
        for r in run.results:  # figures a check describes in details["plots"] (e.g. length_tokens.png)
            for plot in r.details.get("plots", []):
                from gate.template.plots import save_plot

                save_plot(plot, tmp / Path(plot["file"]).name)
        if before_commit is not None:
            before_commit()
    if os.environ.get("GITHUB_STEP_SUMMARY"):
        with open(os.environ["GITHUB_STEP_SUMMARY"], "a", encoding="utf-8") as fh:
            fh.write(to_markdown(run, max_examples))
    return report_dir
