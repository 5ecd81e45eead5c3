"""Step 1: pin what is being proven: the model revision, the config hash and the library versions.

A probe result is only evidence for the exact bytes and stack it ran on; a later run on another revision or another
PEFT release proves nothing about this one, so both are recorded before anything else runs.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from gate.probe.result import Step, judged

_SNAPSHOT = re.compile(r"/snapshots/([0-9a-f]{40})(/|$)")
_HASH_ALL_BELOW = 2 << 30  # hash every weight byte below 2 GiB; above, the shard headers stand for the content


def versions() -> dict[str, str | None]:
    """From package metadata, so pinning does not pay for importing torch (CUDA: the build's, plus the device when
    torch is already loaded)."""
    import re as _re
    import sys
    from importlib import metadata, util

    out: dict[str, str | None] = {}
    for dist in ("torch", "transformers", "peft"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    cuda = None
    spec = util.find_spec("torch")
    if spec and spec.submodule_search_locations:
        vfile = Path(next(iter(spec.submodule_search_locations))) / "version.py"
        m = _re.search(r"^cuda[^=]*=\s*'([^']+)'", vfile.read_text(), _re.M) if vfile.is_file() else None
        cuda = m.group(1) if m else None
    torch = sys.modules.get("torch")
    if cuda and torch is not None and not torch.cuda.is_available():
        cuda += " (no device)"
    out["cuda"] = cuda
    return out


def config_hash(model_dir: Path) -> str:
    cfg = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    return hashlib.sha256(json.dumps(cfg, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def revision(model_dir: Path) -> tuple[str, str]:
    """(revision, how it was found): a hub snapshot commit, a git HEAD, else a content digest of the weights."""
    m = _SNAPSHOT.search(str(model_dir.resolve()))
    if m:
        return m.group(1), "hub snapshot"
    head = model_dir / ".git" / "HEAD"
    if head.is_file():
        ref = head.read_text().strip()
        if ref.startswith("ref: "):
            target = model_dir / ".git" / ref[5:]
            if target.is_file():
                return target.read_text().strip(), "git HEAD"
        elif re.fullmatch(r"[0-9a-f]{40}", ref):
            return ref, "git HEAD"
    files = sorted(p for p in model_dir.iterdir() if p.is_file() and p.suffix in (".safetensors", ".json", ".jinja"))
    total = sum(p.stat().st_size for p in files)
    h = hashlib.sha256()
    for p in files:
        h.update(p.name.encode() + b"\0")
        if total <= _HASH_ALL_BELOW or p.suffix != ".safetensors":
            with open(p, "rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    h.update(chunk)
        else:
            with open(p, "rb") as fh:
                n = int.from_bytes(fh.read(8), "little")
                h.update(fh.read(n))
    kind = "content sha256" if total <= _HASH_ALL_BELOW else "headers sha256"
    return "sha256:" + h.hexdigest(), f"{kind} of the local directory"


def step_pin(model_dir: Path) -> Step:
    rev, how = revision(model_dir)
    chash = config_hash(model_dir)
    vers = versions()
    ev = (f"revision {rev[:19]} ({how}); config sha256 {chash[:12]}; torch {vers['torch']}, transformers "
          f"{vers['transformers']}, peft {vers['peft']}, CUDA {vers['cuda'] or 'none'}")
    details: dict[str, Any] = {"revision": rev, "revision_source": how, "config_sha256": chash, **vers}
    return judged(1, "pin revision and versions", True, ev, details)
