"""Cost of a run from a measured pilot, not from peak FLOPs: a short pilot on the real stack gives tokens/s, and
tokens/s on the pilot's GPUs scales to the full run (with a scaling efficiency when the cluster grows). The failure
budget is the share of GPU time expected to be lost to crashes, restarts from the last checkpoint and bad nodes; it is
added on top, because a plan without it is always over budget.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from gate.errors import GateError


@dataclass(frozen=True)
class CostPlan:
    tokens: float
    pilot_tokens_per_s: float
    pilot_gpus: int
    gpus: int
    scaling_efficiency: float
    tokens_per_s: float
    hours: float
    gpu_hours: float
    price_per_gpu_hour: float
    cost: float
    failure_budget: float
    hours_with_budget: float
    gpu_hours_with_budget: float
    cost_with_budget: float

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


def cost_plan(*, tokens: float, pilot_tokens_per_s: float, pilot_gpus: int, gpus: int, price_per_gpu_hour: float,
              failure_budget: float = 0.15, scaling_efficiency: float = 1.0) -> CostPlan:
    for name, v in (("--tokens", tokens), ("--pilot-tokens-per-s", pilot_tokens_per_s),
                    ("--pilot-gpus", pilot_gpus), ("--gpus", gpus)):
        if v <= 0:
            raise GateError(f"must be positive (got {v})", field=name)
    if price_per_gpu_hour < 0:
        raise GateError("a price cannot be negative", field="--price")
    if not 0 <= failure_budget < 1:
        raise GateError("the failure budget is a share of GPU time, 0 <= x < 1", field="--failure-budget")
    if not 0 < scaling_efficiency <= 1:
        raise GateError("scaling efficiency lies in (0, 1]", field="--scaling-efficiency")
    per_gpu = pilot_tokens_per_s / pilot_gpus
    eff = scaling_efficiency if gpus > pilot_gpus else 1.0
    tps = per_gpu * gpus * eff
    hours = tokens / tps / 3600
    gpu_hours = hours * gpus
    # lost time is a share of all time spent: useful = (1 - budget) * total
    scale = 1 / (1 - failure_budget)
    return CostPlan(tokens=tokens, pilot_tokens_per_s=pilot_tokens_per_s, pilot_gpus=pilot_gpus, gpus=gpus,
                    scaling_efficiency=eff, tokens_per_s=tps, hours=hours, gpu_hours=gpu_hours,
                    price_per_gpu_hour=price_per_gpu_hour, cost=gpu_hours * price_per_gpu_hour,
                    failure_budget=failure_budget, hours_with_budget=hours * scale,
                    gpu_hours_with_budget=gpu_hours * scale, cost_with_budget=gpu_hours * scale * price_per_gpu_hour)
