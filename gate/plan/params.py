"""Parameter counts from a Hugging Face config.json, split the way sharding treats them (experts vs the rest).

Counting from the config, not from weights, lets `gate plan` answer for a 750B model on a laptop. Covers Llama-style
GQA, MLA (`q_lora_rank`/`kv_lora_rank`), the DSA indexer, dense and MoE MLPs (routed + shared experts, router), which
spans Llama, Qwen2, DeepSeek-V3, GLM-4.5 (`glm4_moe`) and GLM-5 (`glm_moe_dsa`). Norm weights are counted; the MTP
layers (`num_nextn_predict_layers`) are not, since trainers do not load them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gate.errors import GateError

LORA_GROUPS = ("attention", "dense_mlp", "shared_experts", "routed_experts")


@dataclass(frozen=True)
class ParamCount:
    total: int
    expert: int  # routed experts: sharded by expert parallelism
    lora_per_rank: dict[str, int]  # trainable LoRA parameters per unit of rank, by target group

    @property
    def dense(self) -> int:
        return self.total - self.expert

    def lora(self, rank: int, groups: tuple[str, ...] = LORA_GROUPS) -> tuple[int, int]:
        """(total, routed-expert share) of LoRA parameters at this rank for these target groups."""
        tot = sum(self.lora_per_rank.get(g, 0) for g in groups) * rank
        exp = self.lora_per_rank.get("routed_experts", 0) * rank if "routed_experts" in groups else 0
        return tot, exp


def _g(cfg: dict[str, Any], *names: str, default: Any = None) -> Any:
    for n in names:
        if cfg.get(n) is not None:
            return cfg[n]
    return default


def count_from_config(cfg: dict[str, Any]) -> ParamCount:
    if "text_config" in cfg and "hidden_size" not in cfg:
        cfg = cfg["text_config"]
    try:
        h = int(cfg["hidden_size"])
        n_layers = int(cfg["num_hidden_layers"])
        vocab = int(cfg["vocab_size"])
        heads = int(cfg["num_attention_heads"])
    except KeyError as exc:
        raise GateError(f"config.json has no {exc.args[0]}", field=str(exc.args[0])) from None
    lora = dict.fromkeys(LORA_GROUPS, 0)
    # attention
    if cfg.get("kv_lora_rank"):
        ql = cfg.get("q_lora_rank")
        nope, rope, v = cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"], cfg["v_head_dim"]
        kvl = cfg["kv_lora_rank"]
        shapes = [(h, kvl + rope), (kvl, heads * (nope + v)), (heads * v, h)]
        shapes += [(h, ql), (ql, heads * (nope + rope))] if ql else [(h, heads * (nope + rope))]
        attn = sum(i * o for i, o in shapes) + (ql or 0) + kvl
        attn_lora = sum(i + o for i, o in shapes)
        if cfg.get("index_n_heads"):  # DSA indexer: trained by no LoRA target, but it is weights on the GPU
            ih, ihd = cfg["index_n_heads"], cfg["index_head_dim"]
            attn += (ql or h) * ih * ihd + h * ihd + h * ih + 2 * ihd
    else:
        hd = int(_g(cfg, "head_dim", default=h // heads))
        kv = int(_g(cfg, "num_key_value_heads", default=heads))
        shapes = [(h, heads * hd), (h, kv * hd), (h, kv * hd), (heads * hd, h)]
        attn = sum(i * o for i, o in shapes)
        if cfg.get("attention_bias"):
            attn += heads * hd + 2 * kv * hd
        attn_lora = sum(i + o for i, o in shapes)
    n_experts = int(_g(cfg, "n_routed_experts", "num_experts", "num_local_experts", default=0) or 0)
    inter = int(_g(cfg, "intermediate_size", default=4 * h))
    moe_inter = int(_g(cfg, "moe_intermediate_size", default=inter))
    n_shared = int(_g(cfg, "n_shared_experts", default=0) or 0)
    first_dense = int(_g(cfg, "first_k_dense_replace", default=0)) if n_experts else n_layers
    moe_layers = n_layers - first_dense if n_experts else 0
    dense_mlp = 3 * h * inter
    routed = n_experts * 3 * h * moe_inter
    shared = n_shared * 3 * h * moe_inter
    router = n_experts * h + n_experts  # fp32 gate weight + correction bias
    per_layer_norms = 2 * h
    total = n_layers * (attn + per_layer_norms) + first_dense * dense_mlp + moe_layers * (routed + shared + router)
    total += vocab * h * (1 if cfg.get("tie_word_embeddings") else 2) + h
    lora["attention"] = n_layers * attn_lora
    lora["dense_mlp"] = first_dense * (2 * (h + inter) + (inter + h))
    lora["shared_experts"] = moe_layers * n_shared * (2 * (h + moe_inter) + (moe_inter + h))
    lora["routed_experts"] = moe_layers * n_experts * (2 * (h + moe_inter) + (moe_inter + h))
    return ParamCount(total=total, expert=moe_layers * routed, lora_per_rank=lora)


def load_config(path: str | Path) -> dict[str, Any]:
    p = Path(path)
    if p.is_dir():
        p = p / "config.json"
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise GateError("model config not found", file=str(p)) from None
    except ValueError as exc:
        raise GateError(f"model config is not JSON ({exc})", file=str(p)) from None
    if not isinstance(data, dict):
        raise GateError("model config is not a JSON object", file=str(p))
    return data
