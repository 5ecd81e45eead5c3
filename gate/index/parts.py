"""The index on disk: Parquet parts of per-row entries, one Parquet file of group assignments, a manifest.

Layout of an index directory:

    manifest.json        what the index was built for (near-dup config, text roles, unique fields), its parts
    part-NNNNNN.parquet  one row per indexed dataset row: split, row digest, text digest, id, unique-field values,
                         MinHash signature, LSH band keys
    groups-XXXX.parquet  (split, row digest, group): rows that were ever in one near-duplicate cluster

Updates never rewrite a part: a new part and a new groups file are written under fresh names, then the manifest
is replaced atomically (the commit point), under an exclusive lock. A reader sees the old or the new index,
never a mix; a crash leaves at worst an unreferenced file. `build` replaces the whole directory atomically.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from gate.contract import Contract
from gate.data.text import NORMAL_FORM_VERSION
from gate.errors import GateError
from gate.index.features import Features, unique_fields
from gate.io.atomic import atomic_write_text

FORMAT = 2  # 2: row digests are xxh3-128 of the stripped line (1: blake2b-128)


def compat_key(contract: Contract, config: Any) -> str:
    """Everything that changes an entry: another value means the index must be rebuilt, not reused."""
    parts = [str(config), ",".join(contract.text_roles), str(contract.include_tool_calls),
             ",".join(unique_fields(contract)), str(FORMAT), f"normal-form-{NORMAL_FORM_VERSION}"]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


def default_dir(dataset: str) -> Path:
    """`.gate-index/<dataset path>` under the working directory: next to the record, outside the dataset."""
    p = Path(dataset).resolve()
    try:
        rel = p.relative_to(Path.cwd().resolve())
    except ValueError:
        rel = Path(*p.parts[1:])
    return Path(".gate-index") / "_".join(rel.parts)


def _binary16(values: list[bytes] | np.ndarray) -> Any:
    """16-byte digests as fixed_size_binary(16): an 'S16' array goes over as one buffer (its items, as Python
    bytes, would lose trailing NUL bytes), a list of bytes as it is."""
    import pyarrow as pa

    if isinstance(values, np.ndarray):
        arr = np.ascontiguousarray(values, dtype="S16")
        return pa.FixedSizeBinaryArray.from_buffers(pa.binary(16), len(arr), [None, pa.py_buffer(arr.tobytes())])
    return pa.array(values, pa.binary(16))


def entries_table(splits: list[str], row_digests: list[bytes] | np.ndarray, f: Features) -> Any:
    import pyarrow as pa

    n = len(row_digests)
    cols: dict[str, Any] = {
        "split": pa.array(splits, pa.string()),
        "row_digest": _binary16(row_digests),
        "text_digest": _binary16(f.text_digests),
        "id": pa.array(f.ids, pa.string()),
    }
    for name, values in f.uniques.items():
        cols[f"u:{name}"] = pa.array(values, pa.string())
    cols["shingles"] = pa.array(f.shingles.astype(np.int32))
    sig = np.ascontiguousarray(f.signatures)
    width = sig.shape[1] * sig.itemsize if sig.ndim == 2 else 0
    cols["signature"] = pa.FixedSizeBinaryArray.from_buffers(pa.binary(width), n, [None, pa.py_buffer(sig.tobytes())])
    for b in range(f.bands.shape[1]):
        cols[f"b{b}"] = pa.array(np.ascontiguousarray(f.bands[:, b]))
    return pa.table(cols)


def groups_table(splits: list[str], row_digests: list[bytes] | np.ndarray, groups: list[int]) -> Any:
    import pyarrow as pa

    return pa.table({"split": pa.array(splits, pa.string()), "row_digest": _binary16(row_digests),
                     "group": pa.array(groups, pa.int64())})


def _write_parquet(table: Any, path: Path) -> None:
    import pyarrow.parquet as pq

    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        pq.write_table(table, tmp, compression="zstd")
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


ROW_GROUP_ROWS = 65536  # entries buffered per Parquet row group while a build streams them


class EntriesWriter:
    """Streams a build's entries into one Parquet file, row group by row group, so the build never holds the
    entries (signatures included) of the whole dataset: 1M rows were ~1 GB of Arrow tables at once.
    The file is written next to the index (same file system) and moved in by `write_new`."""

    def __init__(self, near: Path) -> None:
        import tempfile

        near.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=f".{near.name}.entries-", suffix=".parquet", dir=near.parent)
        os.close(fd)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(name, 0o666 & ~umask)  # mkstemp's 0600 would make this one index file private
        self.path = Path(name)
        self.rows = 0
        self._buf: list[Any] = []
        self._buffered = 0
        self._writer: Any = None

    def write(self, table: Any) -> None:
        self._buf.append(table)
        self._buffered += table.num_rows
        self.rows += table.num_rows
        if self._buffered >= ROW_GROUP_ROWS:
            self._flush()

    def _flush(self) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        if not self._buf:
            return
        table = pa.concat_tables(self._buf)
        self._buf, self._buffered = [], 0
        if self._writer is None:
            self._writer = pq.ParquetWriter(self.path, table.schema, compression="zstd")
        self._writer.write_table(table, row_group_size=max(table.num_rows, 1))

    def close(self, empty: Any) -> Path:
        """Finishes the file (`empty`: the table to write when no entry came, for its schema)."""
        self._flush()
        if self._writer is None:
            _write_parquet(empty, self.path)
        else:
            self._writer.close()
            with open(self.path, "rb") as fh:
                os.fsync(fh.fileno())
        return self.path

    def discard(self) -> None:
        if self._writer is not None:
            self._writer.close()
        self.path.unlink(missing_ok=True)


def write_new(tmpdir: Path, manifest: dict[str, Any], entries: Any, groups: Any) -> None:
    """Fills an empty directory (the caller's `atomic_dir`) with a complete index; `entries` is a table, or the
    path of a finished `EntriesWriter` file (moved in)."""
    part = tmpdir / "part-000000.parquet"
    if isinstance(entries, Path):
        import pyarrow.parquet as pq

        os.replace(entries, part)
        rows = pq.ParquetFile(part).metadata.num_rows
    else:
        _write_parquet(entries, part)
        rows = entries.num_rows
    gname = f"groups-{secrets.token_hex(4)}.parquet"
    _write_parquet(groups, tmpdir / gname)
    now = datetime.now(UTC).isoformat()
    manifest = {**manifest, "format": FORMAT, "parts": ["part-000000.parquet"], "groups": gname,
                "rows": rows, "built_at": now, "updated_at": now}
    atomic_write_text(tmpdir / "manifest.json", json.dumps(manifest, indent=1) + "\n")


@contextmanager
def locked(index_dir: Path) -> Iterator[None]:
    """One writer at a time: two concurrent pull-request checks must not both append on the same manifest."""
    index_dir.parent.mkdir(parents=True, exist_ok=True)
    with open(index_dir.parent / f".{index_dir.name}.lock", "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def read_manifest(index_dir: Path) -> dict[str, Any] | None:
    path = index_dir / "manifest.json"
    if not path.is_file():
        return None
    try:
        m = json.loads(path.read_text())
    except ValueError as exc:
        raise GateError(f"index manifest is not JSON ({exc}); rebuild with `gate index build`",
                        file=str(path)) from None
    if m.get("format") != FORMAT:
        raise GateError(f"index format {m.get('format')} is not {FORMAT}; rebuild with `gate index build`",
                        file=str(path))
    return m


def check_compatible(manifest: dict[str, Any], key: str, index_dir: Path) -> None:
    if manifest.get("compat") != key:
        raise GateError("index was built for another near-duplicate configuration, text roles, unique fields or "
                        "text normal form; rebuild it with `gate index build`", file=str(index_dir))


def load_entries(index_dir: Path, manifest: dict[str, Any], columns: list[str]) -> Any:
    import pyarrow as pa
    import pyarrow.parquet as pq

    tables = []
    for part in manifest["parts"]:
        try:
            tables.append(pq.read_table(index_dir / part, columns=columns))
        except (OSError, pa.ArrowException) as exc:
            raise GateError(f"cannot read index part ({exc}); rebuild with `gate index build`",
                            file=str(index_dir / part)) from None
    return pa.concat_tables(tables) if tables else None


def load_groups(index_dir: Path, manifest: dict[str, Any]) -> Any:
    import pyarrow.parquet as pq

    return pq.read_table(index_dir / manifest["groups"])


def append(index_dir: Path, manifest: dict[str, Any], entries: Any, groups: Any) -> dict[str, Any]:
    """Adds a part and replaces the groups file; the manifest swap makes both visible at once."""
    parts = list(manifest["parts"])
    name = f"part-{len(parts):06d}-{secrets.token_hex(3)}.parquet"
    if entries.num_rows:
        _write_parquet(entries, index_dir / name)
        parts.append(name)
    gname = f"groups-{secrets.token_hex(4)}.parquet"
    _write_parquet(groups, index_dir / gname)
    new = {**manifest, "parts": parts, "groups": gname, "rows": manifest["rows"] + entries.num_rows,
           "updated_at": datetime.now(UTC).isoformat()}
    atomic_write_text(index_dir / "manifest.json", json.dumps(new, indent=1) + "\n")
    if manifest["groups"] != gname:
        (index_dir / manifest["groups"]).unlink(missing_ok=True)
    return new


def digest_array(column: Any) -> np.ndarray:
    """A fixed_size_binary(16) column as a numpy 'S16' array without a Python object per row."""
    arr = column.combine_chunks() if hasattr(column, "combine_chunks") else column
    if len(arr) == 0:
        return np.zeros(0, dtype="S16")
    buf = arr.buffers()[1]
    return np.frombuffer(buf, dtype="S16", count=len(arr) + arr.offset)[arr.offset:]
