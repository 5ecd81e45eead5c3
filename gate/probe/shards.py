"""Step 2: every checkpoint shard is present, parses and matches its manifest; the disk can hold the run.

A missing or truncated shard of a 1.5 TB checkpoint is found here in seconds instead of after the cluster has
loaded 90 % of it. Only headers are parsed (8-byte length + JSON); tensor bytes are hashed only when a manifest
names a hash to check them against.
"""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path
from typing import Any

from gate.io.digest import sha256_file
from gate.probe.result import Step, judged

_DTYPE_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1,
                "F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1, "U16": 2, "U32": 4, "U64": 8, "F4": 1, "F6_E2M3": 1,
                "F6_E3M2": 1}
_MANIFESTS = ("MANIFEST.json", "manifest.json")


def read_header(path: Path) -> dict[str, Any]:
    """The safetensors header, checked against the file size; raises ValueError with the reason."""
    size = path.stat().st_size
    with open(path, "rb") as fh:
        raw = fh.read(8)
        if len(raw) < 8:
            raise ValueError("shorter than the 8-byte header length")
        (n,) = struct.unpack("<Q", raw)
        if n > size - 8:
            raise ValueError(f"header length {n} exceeds the file ({size} bytes)")
        try:
            header = json.loads(fh.read(n))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(f"header is not JSON ({exc})") from None
    data = size - 8 - n
    for name, t in header.items():
        if name == "__metadata__":
            continue
        start, end = t["data_offsets"]
        if not 0 <= start <= end <= data:
            raise ValueError(f"tensor {name} lies outside the file ({start}..{end} of {data} data bytes)")
        count = 1
        for d in t["shape"]:
            count *= d
        width = _DTYPE_BYTES.get(t["dtype"])
        if width is not None and t["dtype"] not in ("F4", "F6_E2M3", "F6_E3M2") and count * width != end - start:
            raise ValueError(f"tensor {name}: {t['dtype']}{t['shape']} needs {count * width} bytes, has {end - start}")
    return header


def _manifest_hashes(model_dir: Path) -> tuple[str | None, dict[str, str]]:
    """{file name: sha256} from a manifest that lists files as a mapping or as a list of {path, sha256}."""
    for name in _MANIFESTS:
        p = model_dir / name
        if not p.is_file():
            continue
        try:
            doc = json.loads(p.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError):
            return name, {}
        files = doc.get("files", doc) if isinstance(doc, dict) else doc
        out: dict[str, str] = {}
        if isinstance(files, dict):
            for k, v in files.items():
                h = v.get("sha256") if isinstance(v, dict) else v
                if isinstance(h, str):
                    out[Path(k).name] = h.removeprefix("sha256:")
        elif isinstance(files, list):
            for item in files:
                if isinstance(item, dict) and isinstance(item.get("sha256"), str):
                    out[Path(str(item.get("path") or item.get("name"))).name] = item["sha256"].removeprefix("sha256:")
        return name, out
    return None, {}


_sha256 = sha256_file


def step_shards(model_dir: Path, work_dir: Path, trainable_hint: int = 0) -> Step:
    problems: list[str] = []
    on_disk = sorted(p.name for p in model_dir.glob("*.safetensors"))
    index_path = model_dir / "model.safetensors.index.json"
    listed: dict[str, str] = {}
    if index_path.is_file():
        try:
            listed = json.loads(index_path.read_text(encoding="utf-8"))["weight_map"]
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            problems.append(f"{index_path.name}: unreadable weight_map ({exc})")
        shards = sorted(set(listed.values()))
        missing = [s for s in shards if s not in on_disk]
        extra = [s for s in on_disk if s not in shards]
        problems += [f"{s}: listed in the index but missing" for s in missing]
        problems += [f"{s}: on disk but not in the index" for s in extra]
    else:
        shards = on_disk
        if not shards:
            problems.append("no *.safetensors weights")
        elif len(shards) > 1:
            problems.append(f"{len(shards)} shards but no model.safetensors.index.json")
    tensors = 0
    seen: dict[str, str] = {}
    for s in shards:
        p = model_dir / s
        if not p.is_file():
            continue
        try:
            header = read_header(p)
        except (ValueError, KeyError, TypeError) as exc:
            problems.append(f"{s}: {exc}")
            continue
        names = [k for k in header if k != "__metadata__"]
        tensors += len(names)
        for k in names:
            seen[k] = s
    if listed:
        wrong = [k for k, s in listed.items() if seen.get(k) != s and (model_dir / s).is_file()]
        problems += [f"{listed[k]}: index lists tensor {k}, the shard lacks it" for k in wrong[:3]]
    manifest, hashes = _manifest_hashes(model_dir)
    checked = 0
    for s in shards:
        want = hashes.get(s)
        if want and (model_dir / s).is_file():
            checked += 1
            got = _sha256(model_dir / s)
            if got != want:
                problems.append(f"{s}: sha256 {got[:12]} differs from {manifest} ({want[:12]})")
    if manifest and not hashes:
        problems.append(f"{manifest}: no file hashes could be read")
    source = sum((model_dir / s).stat().st_size for s in shards if (model_dir / s).is_file())
    # the source is already on disk; a working copy (e.g. the merged model) and two checkpoints of the trainable
    # state (fp32 weights + two Adam moments each) are not
    outputs = 12 * trainable_hint * 2
    work_dir.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(work_dir).free
    need = source + outputs
    if free < need:
        problems.append(f"free storage {_human(free)} < working copy + outputs {_human(need)}")
    hash_note = f"{checked} sha256 checked against {manifest}" if manifest else "no manifest (hashes not checked)"
    ev = (f"{len(shards)} shard(s), {tensors} tensors, headers parse; {hash_note}; free {_human(free)} >= need "
          f"{_human(need)} (working copy {_human(source)} + outputs "
          f"{_human(outputs) if trainable_hint else 'not estimated: step 4 not run'})")
    if problems:
        ev = "; ".join(problems[:4])
    details = {"shards": shards, "tensors": tensors, "index": index_path.is_file(), "manifest": manifest,
               "hashes_checked": checked, "free_bytes": free, "source_bytes": source, "need_bytes": need,
               "problems": problems}
    return judged(2, "verify shards and storage", not problems, ev, details)


def _human(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1024 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"
