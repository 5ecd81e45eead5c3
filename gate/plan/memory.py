"""The memory floor of training states: what must sit in GPU memory before a single activation is stored.

Per parameter: bf16 weights (2 B), bf16 gradients (2 B), fp32 Adam first and second moments (8 B) and, optionally, an
fp32 master copy (4 B). With LoRA the base is frozen: its weights stay, but gradients, moments and master copies exist
only for the adapter. Sharding divides each state: tensor and pipeline parallelism split every parameter, expert
parallelism splits the routed experts, and ZeRO / FSDP split, by stage, the optimizer states (1), the gradients (2)
and the weights (3 = FSDP) across the data-parallel ranks that hold the same slice. Figures are decimal (1 TB =
1e12 B), as in the published arithmetic; activations, buffers and fragmentation come on top.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from gate.errors import GateError

BYTES = {"weights": 2, "grads": 2, "adam": 8, "master": 4}
STATES = ("weights", "grads", "adam", "master")
#: which states a ZeRO stage shards across data-parallel ranks
SHARDED_BY_STAGE = {0: (), 1: ("adam", "master"), 2: ("adam", "master", "grads"),
                    3: ("adam", "master", "grads", "weights")}


@dataclass(frozen=True)
class Layout:
    gpus: int = 8
    tp: int = 1
    pp: int = 1
    cp: int = 1
    ep: int = 1
    zero: int = 3  # 3 = FSDP / ZeRO-3
    gpu_memory_gb: float = 80.0

    def check(self) -> None:
        for name in ("gpus", "tp", "pp", "cp", "ep"):
            if getattr(self, name) < 1:
                raise GateError(f"must be at least 1 (got {getattr(self, name)})", field=f"--{name}")
        if self.zero not in SHARDED_BY_STAGE:
            raise GateError(f"ZeRO stage must be 0-3 (got {self.zero})", field="--zero")
        if self.gpus % (self.tp * self.pp * self.cp):
            raise GateError(f"{self.gpus} GPUs are not a multiple of tp*pp*cp = {self.tp * self.pp * self.cp}",
                            field="--gpus")
        if self.gpus % (self.ep * self.pp):
            raise GateError(f"{self.gpus} GPUs are not a multiple of ep*pp = {self.ep * self.pp}", field="--ep")

    @property
    def dense_split(self) -> int:
        return self.tp * self.pp

    @property
    def dense_dp(self) -> int:
        """Ranks holding the same dense slice; context-parallel ranks share it too, so they shard with it."""
        return self.gpus // self.dense_split

    @property
    def expert_split(self) -> int:
        return self.ep * self.pp

    @property
    def expert_dp(self) -> int:
        return self.gpus // self.expert_split


@dataclass(frozen=True)
class MemoryPlan:
    method: str
    params: int
    trainable: int
    master_weights: bool
    totals: dict[str, float]  # bytes for the whole model, per state
    total: float
    total_without_master: float
    per_gpu: dict[str, float]  # bytes on one GPU, per state
    per_gpu_total: float
    layout: Layout
    fits: bool

    def to_dict(self) -> dict[str, object]:
        d = asdict(self)
        d["layout"] = asdict(self.layout)
        return d


def memory_plan(*, params: int, expert_params: int = 0, method: str = "full", trainable: int | None = None,
                trainable_expert: int = 0, master_weights: bool = True, layout: Layout | None = None) -> MemoryPlan:
    """The floor for `params` (of which `expert_params` are routed experts) under `layout`.

    For LoRA, `trainable` adapter parameters (of which `trainable_expert` sit on routed experts) carry gradients,
    moments and master copies; the frozen base carries weights only.
    """
    layout = layout or Layout()
    layout.check()
    if params <= 0:
        raise GateError("the parameter count must be positive", field="--params")
    if not 0 <= expert_params <= params:
        raise GateError("expert parameters must lie between 0 and the total", field="--expert-params")
    if method not in ("full", "lora"):
        raise GateError(f"method must be full or lora (got {method})", field="--method")
    if method == "lora":
        if not trainable:
            raise GateError("LoRA needs the adapter size: --lora-rank with --config, or --trainable-params",
                            field="--trainable-params")
        counts = {"weights": (params + trainable, expert_params + trainable_expert)}
        for s in ("grads", "adam", "master"):
            counts[s] = (trainable, trainable_expert)
    else:
        trainable = params
        counts = {s: (params, expert_params) for s in STATES}
    states = STATES if master_weights else STATES[:3]
    totals = {s: float(counts[s][0] * BYTES[s]) for s in states}
    sharded = SHARDED_BY_STAGE[layout.zero]
    per_gpu = {}
    for s in states:
        tot, exp = counts[s]
        dense = (tot - exp) / layout.dense_split
        expert = exp / layout.expert_split
        if s in sharded:
            dense /= layout.dense_dp
            expert /= layout.expert_dp
        per_gpu[s] = (dense + expert) * BYTES[s]
    per_total = sum(per_gpu.values())
    return MemoryPlan(method=method, params=params, trainable=trainable, master_weights=master_weights,
                      totals=totals, total=sum(totals.values()),
                      total_without_master=sum(v for k, v in totals.items() if k != "master"),
                      per_gpu=per_gpu, per_gpu_total=per_total,
                      layout=layout, fits=per_total <= layout.gpu_memory_gb * 1e9)


def tb(x: float) -> str:
    return f"{x / 1e12:.2f} TB"


def gb(x: float) -> str:
    return f"{x / 1e9:.1f} GB"
