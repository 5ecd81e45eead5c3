"""The schema of a training spec file.

One JSON Schema catches every unknown key, wrong type or missing value, so a typo in a spec is reported with its YAML
line before anything is launched on a cluster that costs money by the hour.
"""

from __future__ import annotations

from typing import Any

_STR_LIST = {"type": "array", "items": {"type": "string", "minLength": 1}}
_POS = {"type": "integer", "minimum": 1}

SPEC_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "additionalProperties": False,
    "required": ["name", "base_model", "method", "data", "output_dir"],
    "properties": {
        "name": {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"},
        "description": {"type": "string"},
        "base_model": {
            "type": "object", "additionalProperties": False, "required": ["path"],
            "properties": {
                "path": {"type": "string", "minLength": 1,
                         "description": "local directory, or a hub id the trainer resolves on its own machine"},
                "revision": {"type": "string", "minLength": 1},
                "model_type": {"type": "string", "description": "config.json model_type when not readable here"},
            },
        },
        "method": {
            "type": "object", "additionalProperties": False, "required": ["type"],
            "properties": {
                "type": {"enum": ["full", "lora"]},
                "rank": _POS,
                "alpha": {"type": "number", "exclusiveMinimum": 0},
                "dropout": {"type": "number", "minimum": 0, "maximum": 1},
                "targets": _STR_LIST,
                "target_parameters": _STR_LIST,
                "exclude": _STR_LIST,
            },
        },
        "data": {
            "type": "object", "additionalProperties": False, "required": ["train"],
            "properties": {
                "train": {"type": "string", "minLength": 1,
                          "description": "JSONL file, or a `gate split` / `gate export` directory"},
                "val": {"type": "string", "minLength": 1},
                "manifest": {"type": "string", "minLength": 1},
            },
        },
        "sequence_length": _POS,
        "dtype": {"enum": ["bfloat16", "float16", "float32"],
                  "description": "training precision, the same on every runner; float32 on CPU for ms-swift "
                                 "(its bf16 needs a GPU); the local and nemo-automodel runners refuse float16 (no "
                                 "loss scaling)"},
        "batch": {
            "type": "object", "additionalProperties": False,
            "properties": {"micro": _POS, "global": _POS},
        },
        "steps": _POS,
        "seed": {"type": "integer", "minimum": 0},
        "optimizer": {
            "type": "object", "additionalProperties": False,
            "properties": {
                "lr": {"type": "number", "exclusiveMinimum": 0},
                "min_lr": {"type": "number", "minimum": 0},
                "warmup_steps": {"type": "integer", "minimum": 0},
                "schedule": {"enum": ["cosine", "constant"]},
                "weight_decay": {"type": "number", "minimum": 0},
                "max_grad_norm": {"type": "number", "exclusiveMinimum": 0},
            },
        },
        "parallelism": {
            "type": "object", "additionalProperties": False,
            "properties": {
                "tp": _POS, "pp": _POS, "ep": _POS, "cp": _POS, "nodes": _POS, "gpus_per_node": _POS,
                "strategy": {"enum": ["fsdp2", "megatron_fsdp", "ddp"]},
                "activation_checkpointing": {"type": "boolean"},
            },
        },
        "checkpoint": {
            "type": "object", "additionalProperties": False,
            "properties": {
                "every_steps": {"type": "integer", "minimum": 0},
                "keep": _POS,
                "format": {"enum": ["safetensors", "torch_save"]},
                "merge_lora": {"type": "boolean"},
            },
        },
        "logging": {
            "type": "object", "additionalProperties": False,
            "properties": {"every_steps": _POS},
        },
        "output_dir": {"type": "string", "minLength": 1},
        "checks": {**_STR_LIST, "description": "`gate check` run ids the data passed; copied into the manifest"},
        "runners": {
            "type": "object", "additionalProperties": False,
            "properties": {
                "local": {
                    "type": "object", "additionalProperties": False,
                    "properties": {"device": {"enum": ["cpu", "cuda"]}, "threads": _POS,
                                   "python": {"type": "string"}},
                },
                "nemo-automodel": {
                    "type": "object", "additionalProperties": False,
                    "properties": {
                        "backend": {"type": "object"},
                        "packed_sequence_size": {"type": "integer", "minimum": 0},
                        "loss": {"enum": ["masked_ce", "chunked_ce"]},
                        "chat_template": {"type": "string"},
                        "slurm": {"type": "object", "additionalProperties": False,
                                  "properties": {"account": {"type": "string"}, "partition": {"type": "string"},
                                                 "time": {"type": "string"}, "container": {"type": "string"}}},
                    },
                },
                "ms-swift": {
                    "type": "object", "additionalProperties": False,
                    "properties": {
                        "backend": {"enum": ["swift", "megatron"]},
                        "model_type": {"type": "string"},
                        "template": {"type": "string"},
                        "agent_template": {"type": "string"},
                        "loss_scale": {"enum": ["default", "last_round", "all"]},
                        "packing": {"type": "boolean"},
                        "use_hf": {"type": "boolean"},
                        "master_addr": {"type": "string"},
                        "master_port": {"type": "integer"},
                        "deepspeed": {"type": "string", "minLength": 1,
                                      "description": "zero2, zero3, zero3_offload... or a DeepSpeed JSON path"},
                    },
                },
            },
        },
    },
}
