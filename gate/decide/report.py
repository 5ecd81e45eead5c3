"""The decision as evidence a reviewer reads: decision.md for the pull request, decision.json for machines, a rich
table in the terminal. Each file appears whole or not at all; only ids and numbers are shown, never model output.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gate.decide.decision import Decision
from gate.decide.power import describe

GATE_HEADER = ("gate", "rule", "observed", "interval", "p", "p (Holm)", "verdict")
COMPARISONS_IN_MD = 60


def _num(x: Any, fmt: str = ".3f") -> str:
    """A number as the table shows it; a value that rounds to zero prints as zero, never as `-0.000` (a reader
    takes the sign for a measured drop)."""
    if x is None:
        return "–"
    text = format(float(x), fmt)
    if text.lstrip("+-").strip("0.") == "" and text.startswith("-"):
        text = format(0.0, fmt)
    return text


def _p(x: Any) -> str:
    if x is None:
        return "–"
    return "<0.0001" if float(x) < 1e-4 else f"{float(x):.4f}"


def _rule(g: dict[str, Any]) -> str:
    metric = f"{g['scorer']}.{g['metric']}"
    scope = "".join(f" [{k}={g[k]}]" for k in ("suite", "category") if g.get(k))
    higher = g["direction"] == "higher_is_better"
    how = f"{'higher' if higher else 'lower'} is better, {g['test'] or '–'}"
    if g["rule"] == "superiority":
        return f"{metric}{scope} {'above' if higher else 'below'} the baseline ({how})"
    if g["rule"] == "non_inferiority":
        # said in the metric's own direction: "at most 0.02 above the baseline" for a rate where lower is better
        margin = float(g["margin"] or 0)
        if margin == 0:
            return f"{metric}{scope} not {'below' if higher else 'above'} the baseline ({how})"
        return f"{metric}{scope} at most {margin:g} {'below' if higher else 'above'} the baseline ({how})"
    if g["rule"] == "absolute":
        op = ">=" if g["direction"] == "higher_is_better" else "<="
        return f"{metric}{scope} {g['test'] or ''} {op} {float(g['threshold']):g}"
    return f"{metric}{scope}: every must-pass item passes"


def gate_cells(g: dict[str, Any]) -> tuple[str, ...]:
    interval = "–" if g["ci_low"] is None else f"[{_num(g['ci_low'])}, {_num(g['ci_high'])}]"
    observed = _num(g["observed"], ".4g") if g["rule"] == "absolute" else _num(g["observed"], "+.3f")
    if g["rule"] == "no_critical_failures":
        observed = "–" if g["verdict"] == "skip" else f"{int(g['observed'] or 0)} failed"
    verdict = g["verdict"].upper() + (" (warn only)" if g["severity"] == "warn" and g["verdict"] == "fail" else "")
    return (g["gate"], _rule(g), observed, interval, _p(g["p_value"]), _p(g["p_holm"]), verdict)


def decision_md(d: Decision) -> str:
    lines = [f"# gate decision: **{d.verdict}**", "", d.summary, "",
             f"- scorecard: `{d.scorecard['name']}` {d.scorecard['version']} (sha256 `{d.scorecard['sha256'][:16]}`)",
             f"- mode: {d.mode} · pairs: {d.n_pairs} · bootstrap: {d.resamples} resamples, seed {d.seed}",
             f"- baseline run: `{d.baseline_run or '–'}` · candidate run: `{d.candidate_run or '–'}`",
             f"- decision id: `{d.decision_id}`", "",
             "Intervals are one-sided at 1 - alpha on the tested side (shown as a two-sided band); p-values are "
             "one-sided, Holm-adjusted across the tested gates of this decision.", "",
             "| " + " | ".join(GATE_HEADER) + " |", "|" + "---|" * len(GATE_HEADER)]
    for g in d.gates:
        lines.append("| " + " | ".join(c.replace("|", "/") for c in gate_cells(g)) + " |")
    details = [f"- **{g['gate']}**: {g['detail']}" for g in d.gates if g["detail"]]
    if details:
        lines += ["", "## Gate details", "", *details]
    powers = [(g["gate"], text) for g in d.gates if (text := describe(g))]
    if powers:
        lines += ["", "## Power (what each paired gate could detect at its n)", "",
                  "Minimum detectable change at 80% power and the power at the observed change, in the improving "
                  "direction, at the gate's alpha before Holm (several tested gates lower it).", "",
                  *[f"- **{name}**: {text}" for name, text in powers]]
    if d.warnings:
        lines += ["", "## Warnings", "", *[f"- {w}" for w in d.warnings]]
    if d.noise_floor:
        lines += ["", "## Noise floor (A/A)", "", "| gate | floor |", "|---|---|"]
        lines += [f"| {k} | {v:.4f} |" for k, v in d.noise_floor.items()]
    if d.comparisons:
        lines += ["", "## Paired comparisons", "",
                  "| suite | category | scorer.key | n | baseline | candidate | delta | 95% CI | p (2-sided) | test |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for c in d.comparisons[:COMPARISONS_IN_MD]:
            lines.append(f"| {c['suite']} | {c['category']} | {c['scorer']}.{c['key']} | {c['n_pairs']} | "
                         f"{_num(c['baseline'])} | {_num(c['candidate'])} | {_num(c['delta'], '+.3f')} | "
                         f"[{_num(c['ci_low'])}, {_num(c['ci_high'])}] | {_p(c['p_value'])} | {c['test']} |")
        if len(d.comparisons) > COMPARISONS_IN_MD:
            lines.append(f"\n{len(d.comparisons) - COMPARISONS_IN_MD} more in decision.json")
    return "\n".join(lines) + "\n"


def write_decision(d: Decision, out_dir: str | Path) -> tuple[Path, Path]:
    """decision.json and decision.md, each written atomically beside whatever else the directory holds."""
    from gate.io.atomic import atomic_write_text

    out = Path(out_dir)
    j, m = out / "decision.json", out / "decision.md"
    atomic_write_text(j, json.dumps(d.to_json(), indent=2, default=str) + "\n")
    atomic_write_text(m, decision_md(d))
    return j, m


def print_decision(d: Decision, console: Any) -> None:
    from rich.table import Table

    table = Table(title=f"gate decide · {d.scorecard['name']} {d.scorecard['version']} · {d.mode}",
                  title_justify="left")
    for col in GATE_HEADER:
        table.add_column(col, overflow="fold")
    styles = {"PASS": "green", "FAIL": "red", "SKIP": "yellow"}
    for g in d.gates:
        cells = gate_cells(g)
        table.add_row(*cells[:-1], f"[{styles.get(g['verdict'].upper(), '')}]{cells[-1]}[/]")
    console.print(table)
    for g in d.gates:
        if text := describe(g):
            console.print(f"power: {g['gate']}: {text}", markup=False, soft_wrap=True)
    for w in d.warnings:
        console.print(f"warning: {w}", markup=False, soft_wrap=True)
    style = "bold green" if d.exit_code == 0 and d.verdict != "TARGET_NOT_MET" else "bold red"
    console.print(f"[{style}]{d.verdict}[/] {d.summary.split(': ', 1)[-1]}", soft_wrap=True)
