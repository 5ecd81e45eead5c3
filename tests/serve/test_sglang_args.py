"""The argv gate builds for SGLang, parsed by SGLang's own server-args code (`prepare_server_args`) in .venv-sglang
(Makefile: torch's CPU wheel, `sglang==0.5.23 --no-deps` and what server_args imports). Parsing runs on CPU; the
resolution step (`resolve_once`: model config, device checks) needs transformers and a GPU and is left to
tools/gpu-smoke.sh. Skipped only when the venv is absent (`make test` builds it)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from gate.engines.sglang import SGLangEngine, sglang_command

ROOT = Path(__file__).resolve().parents[2]
VENV = Path(os.environ.get("SGLANG_VENV", ROOT / ".venv-sglang"))
PY = VENV / "bin" / "python"
INSTALLED = PY.exists() and any(VENV.glob("lib/python*/site-packages/sglang/srt/server_args.py"))

pytestmark = pytest.mark.skipif(not INSTALLED, reason=f"no SGLang venv at {VENV} (make .venv-sglang/.installed)")

PARSE = """
import json, sys
from sglang.srt.server_args import prepare_server_args
a = prepare_server_args(json.loads(sys.argv[1]))
print(json.dumps({k: getattr(a, k) for k in ("model_path", "host", "port", "served_model_name", "random_seed",
      "lora_paths", "max_lora_rank", "tool_call_parser", "reasoning_parser", "chat_template", "enable_metrics",
      "tp_size", "enable_deterministic_inference")}, default=str))
"""


def _parse(argv: list[str], tmp: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHON"))}
    return subprocess.run([str(PY), "-c", PARSE, json.dumps(argv)], capture_output=True, text=True, timeout=180,
                          cwd=tmp, env=env)


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("sglang-args")
    (d / "model").mkdir()
    (d / "lora").mkdir()
    (d / "lora" / "adapter_config.json").write_text('{"r": 8, "target_modules": ["q_proj", "v_proj"]}')
    return d / "model", d / "lora"


def test_sglangs_own_parser_accepts_gates_argv_with_lora_and_tool_parser(model: tuple[Path, Path],
                                                                        tmp_path: Path) -> None:
    tpl = tmp_path / "t.jinja"
    tpl.write_text("{{ messages }}")
    eng = SGLangEngine(model[0], adapter=model[1], served_model_name="glm", adapter_name="triage", python=str(PY),
                       tool_call_parser="glm47", reasoning_parser="glm45", chat_template=str(tpl), seed=7,
                       tp_size=8, deterministic=True, port=30123)
    argv = eng.command
    assert argv[:3] == [str(PY), "-m", "sglang.launch_server"]
    r = _parse(argv[3:], tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got == {"model_path": str(model[0]), "host": "127.0.0.1", "port": 30123, "served_model_name": "glm",
                   "random_seed": 7, "lora_paths": [f"triage={model[1]}"], "max_lora_rank": 8,
                   "tool_call_parser": "glm47", "reasoning_parser": "glm45", "chat_template": str(tpl),
                   "enable_metrics": True, "tp_size": 8, "enable_deterministic_inference": True}


def test_sglangs_parser_refuses_what_it_does_not_know(model: tuple[Path, Path], tmp_path: Path) -> None:
    """The check is real: a parser name SGLang does not ship, or a flag from vLLM, is refused by SGLang itself."""
    bad = sglang_command(str(model[0]), port=30000, python=str(PY), tool_call_parser="no-such-parser")
    r = _parse(bad[3:], tmp_path)
    assert r.returncode != 0 and "--tool-call-parser" in r.stderr and "no-such-parser" in r.stderr
    vllm_flag = sglang_command(str(model[0]), port=30000, python=str(PY), extra_args=["--enable-lora"])
    assert _parse(vllm_flag[3:], tmp_path).returncode == 0  # SGLang has --enable-lora too
    r = _parse(sglang_command(str(model[0]), port=30000, extra_args=["--max-model-len", "1024"])[3:], tmp_path)
    assert r.returncode != 0 and "unrecognized arguments: --max-model-len" in r.stderr
