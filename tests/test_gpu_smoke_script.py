"""tools/gpu-smoke.sh (issue 16 item 21) is for a machine with a GPU; here it must pass shellcheck and, with no GPU,
stop at once with one line and exit 1 before building a venv or a model."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from gate.engines.sglang import gpu_devices

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tools" / "gpu-smoke.sh"


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck not installed (Debian: shellcheck)")
def test_gpu_smoke_is_shellcheck_clean() -> None:
    r = subprocess.run(["shellcheck", "-x", str(SCRIPT)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("hide", [False, True])
def test_gpu_smoke_without_a_gpu_is_one_line_and_builds_nothing(tmp_path: Path, hide: bool) -> None:
    if gpu_devices() and not hide:
        pytest.skip("this machine has a GPU")
    env = {**os.environ, "OUT": str(tmp_path / "out"), "VLLM_GPU_VENV": str(tmp_path / "v"),
           "SGLANG_GPU_VENV": str(tmp_path / "s")}
    if hide:
        env["CUDA_VISIBLE_DEVICES"] = ""
    r = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path)
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("gpu-smoke: no GPU on this machine"), r.stderr
    assert not any(tmp_path.iterdir())
