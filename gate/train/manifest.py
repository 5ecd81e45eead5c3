"""The MANIFEST.json written beside a collected checkpoint: what exactly came out, and from what.

A release record pins a checkpoint by these hashes; a later audit can recompute them from the files alone. Every
file is hashed whole (sha256), grouped by role so a reviewer sees at once whether only the adapter changed or the
tokenizer or chat template did too.
"""

from __future__ import annotations

import hashlib
import json
import platform
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gate.io.atomic import atomic_write_text
from gate.io.digest import sha256_file

ROLES: dict[str, tuple[str, ...]] = {
    "weights": ("*.safetensors", "*.bin", "*.pt", "*.distcp", "*.gguf"),
    "tokenizer": ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "tokenizer.model",
                  "vocab.json", "merges.txt", "added_tokens.json"),
    "chat_template": ("chat_template.jinja", "chat_template.json"),
    "config": ("config.json", "adapter_config.json", "generation_config.json", "automodel_peft_config.json",
               "args.json", "*.safetensors.index.json"),
}


def _role(name: str) -> str | None:
    from fnmatch import fnmatch

    for role in ("config", "tokenizer", "chat_template", "weights"):  # index.json before *.safetensors-like globs
        if any(fnmatch(name, pat) for pat in ROLES[role]):
            return role
    return None


def hash_checkpoint(ckpt: Path) -> dict[str, dict[str, str]]:
    groups: dict[str, dict[str, str]] = {r: {} for r in ROLES}
    for f in sorted(ckpt.rglob("*")):
        if f.is_file() and not f.name.startswith(".") and f.name != "MANIFEST.json":
            role = _role(f.name)
            if role:
                groups[role][str(f.relative_to(ckpt))] = sha256_file(f)
    return groups


def _chat_template_hash(ckpt: Path) -> str | None:
    """The template may live inside tokenizer_config.json rather than its own file; hash the text either way."""
    jinja = ckpt / "chat_template.jinja"
    if jinja.is_file():
        return hashlib.sha256(jinja.read_bytes()).hexdigest()
    cfg = ckpt / "tokenizer_config.json"
    if cfg.is_file():
        tpl = json.loads(cfg.read_text(encoding="utf-8")).get("chat_template")
        if isinstance(tpl, str):
            return hashlib.sha256(tpl.encode()).hexdigest()
    return None


def build_manifest(ckpt: Path, *, spec: Any, runner: str, run_id: str, command: list[str],
                   metrics: dict[str, Any]) -> dict[str, Any]:
    files = hash_checkpoint(ckpt)
    if not files["weights"]:
        from gate.errors import GateError

        raise GateError("the trainer finished but wrote no weights or adapter", file=str(ckpt))
    data = {str(f): sha256_file(f) for f in (*spec.train_files, *spec.val_files)}
    if spec.data_manifest:
        data[spec.data_manifest] = sha256_file(spec.data_manifest)
    base_cfg = Path(spec.model) / "config.json"
    versions = {"python": platform.python_version()}
    for mod in ("torch", "transformers", "peft"):
        try:
            versions[mod] = __import__(mod).__version__
        except ImportError:
            pass
    import gate

    versions["gate"] = gate.__version__
    return {
        "kind": "gate.train.checkpoint",
        "version": 1,
        "run_id": run_id,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "runner": runner,
        "command": command,
        "spec": {"name": spec.name, "path": spec.path, "sha256": spec.sha256},
        "method": spec.method,
        "adapter": spec.method == "lora",
        "base_model": {"path": spec.model, "revision": spec.revision,
                       "config_sha256": sha256_file(base_cfg) if base_cfg.is_file() else None},
        "files": files,
        "chat_template_sha256": _chat_template_hash(ckpt),
        "data": data,
        "checks": list(spec.checks),
        "metrics": metrics,
        "versions": versions,
    }


def write_manifest(ckpt: Path, manifest: dict[str, Any]) -> str:
    """Writes MANIFEST.json atomically and returns its sha256 (the checkpoint's identity in the record)."""
    text = json.dumps(manifest, indent=2, sort_keys=True) + "\n"
    atomic_write_text(ckpt / "MANIFEST.json", text)
    return hashlib.sha256(text.encode()).hexdigest()
