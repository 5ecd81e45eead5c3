"""Launch commands exactly as the notes give them, and server processes that start, fail and stop cleanly."""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import pytest

from gate.engines.engine import EngineError
from gate.engines.server import ServerProcess, free_port
from gate.engines.sglang import SGLangEngine, request_model, sglang_command
from gate.engines.types import Request
from gate.engines.vllm import VLLMEngine, lora_rank, output_flags, vllm_command

FAKE = str(Path(__file__).resolve().parents[2] / "gate" / "testing" / "fake_openai.py")


def test_vllm_command_matches_the_notes():
    cmd = vllm_command("models/tiny-llama", port=8011, python="py", served_model_name="tiny",
                       lora_modules={"tinylora": "models/tiny-llama-lora"}, max_lora_rank=8,
                       tool_call_parser="glm47", reasoning_parser="glm45", chat_template="t.jinja", seed=0,
                       max_model_len=1024, dtype="bfloat16", enforce_eager=True)
    assert cmd == ["py", "-m", "vllm.entrypoints.openai.api_server", "--host", "127.0.0.1", "--port", "8011",
                   "--model", "models/tiny-llama", "--served-model-name", "tiny", "--seed", "0",
                   "--generation-config", "vllm", "--max-model-len", "1024", "--dtype", "bfloat16", "--enforce-eager",
                   "--enable-lora", "--max-lora-rank", "8", "--lora-modules", "tinylora=models/tiny-llama-lora",
                   "--enable-auto-tool-choice", "--tool-call-parser", "glm47", "--reasoning-parser", "glm45",
                   "--chat-template", "t.jinja"]
    assert not any(a.startswith("--guided") for a in cmd)
    assert output_flags(cmd) == ("--served-model-name", "tiny", "--seed", "0", "--generation-config", "vllm",
                                 "--max-model-len", "1024", "--dtype", "bfloat16", "--enforce-eager", "--enable-lora",
                                 "--max-lora-rank", "8", "--lora-modules", "tinylora", "--enable-auto-tool-choice",
                                 "--tool-call-parser", "glm47", "--reasoning-parser", "glm45")


def test_lora_rank_is_rounded_up_to_an_accepted_value(tmp_path):
    (tmp_path / "adapter_config.json").write_text('{"r": 12}')
    assert lora_rank([tmp_path]) == 16
    assert lora_rank([tmp_path / "missing"]) is None


def test_sglang_command_and_adapter_selection():
    cmd = sglang_command("m", port=30000, python="py", served_model_name="glm", lora_paths={"ad": "/a"},
                         max_lora_rank=32, tool_call_parser="glm47", reasoning_parser="glm45", seed=0)
    assert cmd == ["py", "-m", "sglang.launch_server", "--model-path", "m", "--host", "127.0.0.1", "--port", "30000",
                   "--served-model-name", "glm", "--random-seed", "0", "--lora-paths", "ad=/a", "--max-lora-rank",
                   "32", "--tool-call-parser", "glm47", "--reasoning-parser", "glm45", "--enable-metrics"]
    assert request_model("glm", "ad") == "glm:ad" and request_model("glm", None) == "glm"
    eng = SGLangEngine("m", adapter="/a", served_model_name="glm", adapter_name="ad", python="py", port=1)
    assert eng.client.model == "glm:ad" and eng.server.health_url.endswith("/health_generate")


def test_launch_failure_is_one_line_with_the_log_tail(tmp_path):
    code = "import sys; print('loading model'); print('ValueError: no such model', file=sys.stderr); sys.exit(3)"
    srv = ServerProcess([sys.executable, "-c", code], health_url=f"http://127.0.0.1:{free_port()}/health",
                        log_path=tmp_path / "srv.log", name="vllm", ready_timeout_s=30)
    with pytest.raises(EngineError) as ei:
        srv.start()
    msg = str(ei.value)
    assert "\n" not in msg
    assert "exited with code 3" in msg and "ValueError: no such model" in msg and str(tmp_path / "srv.log") in msg
    assert srv.proc is None


def test_missing_executable_is_one_line(tmp_path):
    srv = ServerProcess([str(tmp_path / "nope")], health_url="http://127.0.0.1:1/health", log_path=tmp_path / "l")
    with pytest.raises(EngineError, match="could not be started"):
        srv.start()


def test_not_ready_in_time_is_stopped(tmp_path):
    code = "import time; print('still compiling', flush=True); time.sleep(60)"
    srv = ServerProcess([sys.executable, "-c", code], health_url=f"http://127.0.0.1:{free_port()}/health",
                        log_path=tmp_path / "srv.log", ready_timeout_s=1.0, stop_grace_s=2)
    with pytest.raises(EngineError, match=r"not ready after 1 s .*still compiling"):
        srv.start()
    assert srv.proc is None


def test_vllm_engine_starts_answers_and_stops_by_pid(tmp_path, monkeypatch):
    # A stand-in `vllm` package whose api_server module is the fake OpenAI server: the real argv, a real process.
    pkg = tmp_path / "shim" / "vllm" / "entrypoints" / "openai"
    pkg.mkdir(parents=True)
    for d in (pkg, pkg.parent, pkg.parent.parent):
        (d / "__init__.py").write_text("")
    (pkg / "api_server.py").write_text(textwrap.dedent(f"""
        import runpy, sys
        sys.argv[0] = {FAKE!r}
        runpy.run_path({FAKE!r}, run_name="__main__")
    """))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "shim") + os.pathsep + str(Path(__file__).parents[2]))
    eng = VLLMEngine(tmp_path / "model-dir", served_model_name="tiny", python=sys.executable,
                     log_path=tmp_path / "vllm.log", ready_timeout_s=30, retries=0)
    with eng:
        pid = eng.server.pid
        assert pid and (tmp_path / "vllm.log.pid").read_text() == str(pid)
        out = eng.generate([Request(messages=({"role": "user", "content": "ping"},))])
        assert out[0].text == "echo: ping"
        assert eng.identity.engine == "vllm" and eng.identity.engine_version == "0.0-fake"
        assert "--port" not in eng.identity.flags and "--generation-config" in eng.identity.flags
    assert eng.server.proc is None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert "listening on" in (tmp_path / "vllm.log").read_text()
