"""`gate scorecard power`: how many paired items a gate needs, planned before the suite is written.

The maths is gate.decide.power's (the statistics the gates use); this module only reads the options and the
scorecard and prints one line per gate.
"""

from __future__ import annotations

import json
from typing import Any

from gate.errors import ExitCode, GateError


def _in_scope(card: Any, g: dict[str, Any]) -> int:
    """Items of the scorecard the gate's scorer scores, in the gate's suite and category."""
    n = 0
    for suite in card.suites:
        if g.get("suite") and suite.name != g["suite"]:
            continue
        if not any(s.name == g["scorer"] for s in card.scorers_for(suite.name)):
            continue
        n += sum(1 for it in suite.items if not g.get("category") or it.category == g["category"])
    return n


def _line(name: str, p: Any, baseline: float, correlation: float | None, n_note: str) -> str:
    how = "exact McNemar" if p.test == "mcnemar" else f"{p.test}, normal"
    ident = "identical candidate" if p.effect == 0 else f"true change {p.effect:+g}"
    what = f"no drop beyond {p.margin:g}, {ident}" if p.rule == "non_inferiority" else f"effect {p.effect:+g}"
    basis = f"discordance {p.discordance:.3f}" + (f" (correlation {correlation:g})" if correlation is not None else "")
    need = (f"{p.items} items for {p.power:.0%} power" if p.items is not None else
            f"no n reaches {p.power:.0%} power (the true change must beat -margin)")
    at = f"; at n {p.n}: {p.power_at_n:.1%}" if p.n else ""
    return (f"{name}{p.rule} ({how}, alpha {p.alpha:g}): baseline {baseline:g}, {what}, {basis}: {need}{at}"
            f"{n_note}")


def run_scorecard_power(*, scorecard: str | None, baseline: float, effect: float | None, margin: float | None,
                        power: float, alpha: float | None, correlation: float | None, discordance: float | None,
                        n: int | None, as_json: bool) -> int:
    """One planning line per paired gate (of the scorecard, or the one described by the options)."""
    from gate.decide.power import PowerInputError, plan

    if correlation is not None and discordance is not None:
        raise GateError("give --correlation or --discordance, not both", field="--discordance")
    corr = 0.0 if correlation is None and discordance is None else correlation
    lines: list[str] = []
    plans: list[dict[str, Any]] = []
    try:
        if scorecard is None:
            rule = "non_inferiority" if margin is not None else "superiority"
            if effect is None and rule == "superiority":
                raise GateError("required without --margin (the change the superiority gate must detect)",
                                field="--effect")
            p = plan(rule=rule, baseline=baseline, effect=effect or 0.0, alpha=0.05 if alpha is None else alpha,
                     power=power, margin=margin or 0.0, correlation=corr, disc=discordance, n=n)
            lines.append(_line("", p, baseline, corr, ""))
            plans.append(p.to_json())
        else:
            from gate.score.scorecard import load_scorecard

            card = load_scorecard(scorecard)
            paired = [g for g in card.gates if g["rule"] in ("superiority", "non_inferiority")]
            if not paired:
                raise GateError("the scorecard has no superiority or non_inferiority gate to plan",
                                file=scorecard, field="gates")
            for g in paired:
                if g["rule"] == "superiority" and effect is None:
                    raise GateError(f"required: gate {g['name']} is a superiority gate (give the change it must "
                                    f"detect)", field="--effect")
                # a non-inferiority gate is planned for an identical candidate: it must pass that one
                eff = effect if g["rule"] == "superiority" else 0.0
                a = float(g.get("alpha", 0.05)) if alpha is None else alpha
                mg = float(g.get("margin") or 0.0) if margin is None else margin
                in_scope = _in_scope(card, g)
                p = plan(rule=g["rule"], baseline=baseline, effect=eff, alpha=a, power=power, margin=mg,
                         correlation=corr, disc=discordance, test=g.get("test"), n=n or in_scope or None)
                note = "" if n else f" (the scorecard has {in_scope} items in scope)"
                # Holm tests the paired gates together: the gate with the smallest p is judged at alpha / m
                holm = plan(rule=g["rule"], baseline=baseline, effect=eff, alpha=a / len(paired), power=power,
                            margin=mg, correlation=corr, disc=discordance, test=g.get("test")).items \
                    if len(paired) > 1 else p.items
                if len(paired) > 1:
                    note += f"; {holm if holm is not None else 'no n'} if Holm judges it at alpha/{len(paired)}"
                lines.append(_line(f"{g['name']}: ", p, baseline, corr, note))
                plans.append({"gate": g["name"], **p.to_json(), "items_in_scope": in_scope,
                              "items_holm_worst": holm, "paired_gates": len(paired)})
    except PowerInputError as exc:
        raise GateError(str(exc)) from None
    if as_json:
        print(json.dumps({"plans": plans}, indent=2))
    else:
        print("\n".join(lines))
        print("(0/1 scores, independent items; clustered items need more: see the README's release decision "
              "section)")
    return int(ExitCode.PASS)
