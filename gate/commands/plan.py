"""`gate plan`: memory floor and cost, as a table for people or JSON for machines. The arithmetic is in gate.plan."""

from __future__ import annotations

import json
from typing import Any

from gate.errors import GateError


def build_plan(*, params: float | None, config: str | None, expert_params: float | None, method: str,
               lora_rank: int | None, lora_targets: tuple[str, ...], trainable_params: float | None,
               master_weights: bool, gpus: int, tp: int, pp: int, cp: int, ep: int, zero: int,
               gpu_memory_gb: float, tokens: float | None, pilot_tokens_per_s: float | None,
               pilot_gpus: int | None, price: float, failure_budget: float,
               scaling_efficiency: float) -> dict[str, Any]:
    from gate.plan.cost import cost_plan
    from gate.plan.memory import Layout, memory_plan
    from gate.plan.params import LORA_GROUPS, count_from_config, load_config

    if (params is None) == (config is None):
        raise GateError("give exactly one of --params or --config", field="--params")
    unknown = [g for g in lora_targets if g not in LORA_GROUPS]
    if unknown:
        raise GateError(f"unknown LoRA target group '{unknown[0]}' (one of {', '.join(LORA_GROUPS)})",
                        field="--lora-targets")
    source: dict[str, Any]
    trainable_expert = 0
    if config is not None:
        counts = count_from_config(load_config(config))
        total, experts = counts.total, counts.expert
        source = {"config": config}
        if method == "lora" and trainable_params is None:
            if not lora_rank:
                raise GateError("LoRA from a config needs --lora-rank", field="--lora-rank")
            trainable, trainable_expert = counts.lora(lora_rank, lora_targets)
        else:
            trainable = int(trainable_params) if trainable_params else None
    else:
        total, experts = int(params), int(expert_params or 0)  # type: ignore[arg-type]
        source = {"params": total}
        trainable = int(trainable_params) if trainable_params else None
        if method == "lora" and trainable is None:
            raise GateError("LoRA from a bare parameter count needs --trainable-params (or give --config)",
                            field="--trainable-params")
    layout = Layout(gpus=gpus, tp=tp, pp=pp, cp=cp, ep=ep, zero=zero, gpu_memory_gb=gpu_memory_gb)
    mem = memory_plan(params=total, expert_params=experts, method=method, trainable=trainable,
                      trainable_expert=trainable_expert, master_weights=master_weights, layout=layout)
    out: dict[str, Any] = {"source": source, "expert_params": experts, "memory": mem.to_dict()}
    if any(v is not None for v in (tokens, pilot_tokens_per_s, pilot_gpus)):
        if tokens is None or pilot_tokens_per_s is None or pilot_gpus is None:
            raise GateError("a cost estimate needs --tokens, --pilot-tokens-per-s and --pilot-gpus together",
                            field="--tokens")
        out["cost"] = cost_plan(tokens=tokens, pilot_tokens_per_s=pilot_tokens_per_s, pilot_gpus=pilot_gpus,
                                gpus=gpus, price_per_gpu_hour=price, failure_budget=failure_budget,
                                scaling_efficiency=scaling_efficiency).to_dict()
    return out


def render_table(plan: dict[str, Any]) -> None:
    from rich.table import Table

    from gate.plan.memory import gb, tb
    from gate.report.console import make_console

    console = make_console()
    m = plan["memory"]
    lay = m["layout"]
    title = (f"training-state memory floor: {m['params'] / 1e9:.1f}B params, {m['method']}"
             + (f" ({m['trainable'] / 1e9:.3f}B trainable)" if m["method"] == "lora" else ""))
    t = Table(title=title)
    t.add_column("state")
    t.add_column("bytes/param", justify="right")
    t.add_column("whole model", justify="right")
    t.add_column(f"per GPU ({lay['gpus']} GPUs, tp{lay['tp']} pp{lay['pp']} cp{lay['cp']} ep{lay['ep']}, "
                 f"ZeRO-{lay['zero']})", justify="right")
    labels = {"weights": "bf16 weights", "grads": "bf16 gradients", "adam": "fp32 Adam moments (m, v)",
              "master": "fp32 master weights"}
    from gate.plan.memory import BYTES

    for s, v in m["totals"].items():
        t.add_row(labels[s], str(BYTES[s]), tb(v), gb(m["per_gpu"][s]))
    if m["master_weights"]:
        no_master = m["per_gpu_total"] - m["per_gpu"]["master"]
        t.add_row("total without master weights", "", tb(m["total_without_master"]), gb(no_master))
    t.add_row("[bold]total before activations[/bold]", "", f"[bold]{tb(m['total'])}[/bold]",
              f"[bold]{gb(m['per_gpu_total'])}[/bold]")
    console.print(t)
    verdict = "fits" if m["fits"] else "does NOT fit"
    console.print(f"per GPU {gb(m['per_gpu_total'])} of {lay['gpu_memory_gb']:.0f} GB: {verdict} "
                  "(activations, buffers and fragmentation come on top)")
    c = plan.get("cost")
    if c:
        ct = Table(title="cost from the measured pilot")
        ct.add_column("")
        ct.add_column("planned", justify="right")
        ct.add_column(f"with {c['failure_budget']:.0%} failure budget", justify="right")
        ct.add_row("tokens/s (cluster)", f"{c['tokens_per_s']:,.0f}", "")
        ct.add_row("wall hours", f"{c['hours']:,.1f}", f"{c['hours_with_budget']:,.1f}")
        ct.add_row("GPU hours", f"{c['gpu_hours']:,.0f}", f"{c['gpu_hours_with_budget']:,.0f}")
        ct.add_row("cost", f"{c['cost']:,.0f}", f"{c['cost_with_budget']:,.0f}")
        console.print(ct)


def run_plan_command(*, as_json: bool, **kwargs: Any) -> int:
    plan = build_plan(**kwargs)
    if as_json:
        print(json.dumps(plan, indent=2, sort_keys=True))
    else:
        render_table(plan)
    return 0
