"""`gate scorecard lint FILE`: load and validate a scorecard without a model, and say what each scorer and gate
will do.

A scorecard is read by an engine run that may take hours to start (a vLLM fleet, a 750B model); a scorecard
change must be checkable in CI before any of that: the same loader `gate score` uses (suites read and pinned, scorer
options checked against each scorer's schema, gates against the scorers' metric keys), each problem one file:line
error, and then one line per scorer and per gate.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

from gate.score.scorecard import Scorecard, load_scorecard


def _options(spec: Any) -> str:
    """The options the scorer will run with: the scorecard's, then its defaults (from its constructor)."""
    from gate.score.scorers import scorer_class

    params = inspect.signature(scorer_class(spec.type).__init__).parameters
    parts = []
    for name, p in params.items():
        if name == "self" or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if name in spec.options:
            value = spec.options[name]
            shown = f"<{len(value)} item(s)>" if isinstance(value, list | dict) else repr(value)
            parts.append(f"{name}={shown}")
        elif p.default is not inspect.Parameter.empty:
            parts.append(f"{name}={p.default!r} (default)")
    return ", ".join(parts) or "no options"


def _gate(g: dict[str, Any]) -> str:
    where = f"suite {g['suite']}" if g.get("suite") else "every suite"
    if g.get("category"):
        where += f", category {g['category']}"
    rule = g["rule"]
    if rule == "absolute":
        what = f"{g['metric']} {'<=' if g.get('direction') == 'lower_is_better' else '>='} {g.get('threshold')}"
        what += f" (unmeasured: {g.get('on_unmeasured', 'block')})"
    elif rule == "non_inferiority":
        what = f"candidate {g['metric']} no worse than the baseline by more than {g.get('margin', 0)}"
    elif rule == "superiority":
        what = f"candidate {g['metric']} better than the baseline at alpha {g.get('alpha', 0.05)}"
    else:
        what = f"{rule} on {g['metric']}"
    return (f"  gate {g['name']:<24} {g.get('severity', 'block'):<6} {what}, scorer {g['scorer']}, {where}"
            + (f", test {g['test']}" if g.get("test") else ""))


def lint(path: str | Path) -> tuple[Scorecard, list[str]]:
    """(the loaded scorecard, the report's lines); a bad scorecard raises its one-line ScorecardError. The scorers
    are built (their options are what a run uses), no engine is started and no model is read."""
    card = load_scorecard(path)
    card.build_scorers()
    items = sum(len(s.items) for s in card.suites)
    lines = [f"OK {path}: scorecard {card.name} {card.version} (sha256 {card.sha256[:12]}), "
             f"{len(card.suites)} suite(s), {items} item(s)"]
    for spec in card.scorers:
        from gate.score.scorers import KEYS

        on = ", ".join(spec.suites) if spec.suites is not None else "every suite"
        lines.append(f"  scorer {spec.name:<22} {spec.type}: emits {', '.join(KEYS[spec.type])} on {on}; "
                     f"{_options(spec)}")
    lines += [_gate(g) for g in card.gates] or ["  no gates: `gate score` records scores and decides nothing"]
    lines += [f"  warning: {w}" for w in card.warnings]
    return card, lines
