"""Pure helpers of the probe: step lists, parameter classification, safetensors header checks."""

from __future__ import annotations

import json
import struct

import pytest

from gate.errors import GateError
from gate.probe.modules import base_name, part_of
from gate.probe.runner import parse_steps
from gate.probe.shards import read_header


def test_parse_steps():
    assert parse_steps("1-4,7") == {1, 2, 3, 4, 7}
    assert parse_steps(None) == set(range(1, 11))
    for bad in ("0", "11", "a-b", "3-1x"):
        with pytest.raises(GateError):
            parse_steps(bad)


@pytest.mark.parametrize("name, part", [
    ("model.layers.1.self_attn.q_a_proj.weight", "attention"),
    ("model.layers.1.self_attn.indexer.weights_proj.weight", "indexer"),
    ("model.layers.1.mlp.gate.weight", "router"),
    ("model.layers.1.mlp.gate_proj.weight", "dense_mlp"),
    ("model.layers.1.mlp.experts.gate_up_proj", "routed_experts"),
    ("model.layers.1.mlp.shared_experts.down_proj.weight", "shared_experts"),
    ("base_model.model.model.layers.1.mlp.experts.base_layer.lora_A.default.weight", "routed_experts"),
    ("base_model.model.model.layers.0.self_attn.o_proj.lora_B.default.weight", "attention"),
    ("lm_head.weight", "lm_head"),
    ("model.norm.weight", "norms"),
])
def test_part_of(name, part):
    assert part_of(name) == part


def test_base_name_strips_peft_wrapping():
    assert base_name("base_model.model.model.layers.1.mlp.experts.base_layer") == "model.layers.1.mlp.experts"


def _safetensors(tmp_path, header: dict, data: bytes):
    raw = json.dumps(header).encode()
    p = tmp_path / "x.safetensors"
    p.write_bytes(struct.pack("<Q", len(raw)) + raw + data)
    return p


def test_read_header_checks_sizes(tmp_path):
    ok = _safetensors(tmp_path, {"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, b"\0" * 8)
    assert "a" in read_header(ok)
    short = _safetensors(tmp_path, {"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, b"\0" * 8)
    with pytest.raises(ValueError, match="needs 12 bytes"):
        read_header(short)
    (tmp_path / "y.safetensors").write_bytes(b"\xff" * 4)
    with pytest.raises(ValueError, match="8-byte"):
        read_header(tmp_path / "y.safetensors")


def _expert_spec():
    from gate.probe.spec import LoraSpec

    return LoraSpec(path="spec.yaml", target_parameters=["mlp.experts.gate_up_proj"])


def test_peft_rewrite_is_bypassed_only_inside_and_restored():
    import peft.utils.transformers_weight_conversion as conv

    from gate.probe.spec import PEFT_REWRITE, check_rewrite, honour_targets, installed_peft

    real = getattr(conv, PEFT_REWRITE)
    check_rewrite(real, installed_peft())  # the installed PEFT is one the bypass was written for
    with honour_targets(_expert_spec()):
        assert getattr(conv, PEFT_REWRITE) is not real
    assert getattr(conv, PEFT_REWRITE) is real


def test_peft_rewrite_with_another_signature_is_refused_not_swapped(monkeypatch):
    import peft.utils.transformers_weight_conversion as conv

    from gate.probe.spec import PEFT_REWRITE, honour_targets

    def convert_peft_config_for_transformers(peft_config, model, conversions, strict=True):  # a future PEFT
        return None

    monkeypatch.setattr(conv, PEFT_REWRITE, convert_peft_config_for_transformers)
    with pytest.raises(GateError) as info, honour_targets(_expert_spec()):
        pytest.fail("the body must not run")
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith("peft: PEFT ")
    assert "(peft_config, model, conversions, strict), not (peft_config, model, conversions)" in msg
    assert getattr(conv, PEFT_REWRITE) is convert_peft_config_for_transformers  # left as it was


@pytest.mark.parametrize("version, ok", [("0.19.0", True), ("0.21.2", True), ("0.18.1", False),
                                         ("0.22.0.dev0", False), ("1.0.0", False), ("not-a-version", False)])
def test_peft_rewrite_version_range(version, ok):
    import peft.utils.transformers_weight_conversion as conv

    from gate.probe.spec import PEFT_REWRITE, check_rewrite

    real = getattr(conv, PEFT_REWRITE)
    if ok:
        check_rewrite(real, version)
    else:
        with pytest.raises(GateError, match="PEFT"):
            check_rewrite(real, version)
