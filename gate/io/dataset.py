"""Discovering the splits of a dataset and streaming them in bounded chunks.

A dataset is a directory of split files, a single file, or a Hugging Face `save_to_disk` directory.
Reading is chunked so that peak memory does not grow with the file: JSONL is cut into blobs of whole
lines (parsed later, possibly in worker processes), columnar formats into Arrow record batches.
The content hash of every file is computed from the stored bytes during the same pass.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from gate import install_hint
from gate.errors import InputError
from gate.io import limits
from gate.io.confine import confine

#: The one list of the file name endings the reader takes as a split, and the format each is read as. Everything
#: that asks "is this file data?" (`--changed-since`, `--base`, the index) asks `is_dataset_file`, which uses this
#: list: a format the reader accepts but a pull-request gate does not know would let a change through unchecked.
SPLIT_FORMATS: dict[str, str] = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl", ".jsonl.gz": "jsonl.gz",
                                 ".jsonl.zst": "jsonl.zst", ".parquet": "parquet"}
JSONL_SUFFIXES = tuple(s for s, f in SPLIT_FORMATS.items() if f.startswith("jsonl"))
PARQUET_SUFFIXES = tuple(s for s, f in SPLIT_FORMATS.items() if f == "parquet")
#: the files of a Hugging Face `save_to_disk` directory (its splits are `.arrow` files beside `state.json`)
HF_FILES = ("dataset_dict.json", "state.json", "dataset_info.json")
HF_SUFFIXES = (".arrow",)
#: every ending of a file the reader reads as (part of) a dataset
DATA_SUFFIXES = (*SPLIT_FORMATS, *HF_SUFFIXES)
SPLIT_ORDER = ("train", "training", "val", "valid", "validation", "dev", "test", "eval")
CHUNK_BYTES = 4 << 20


@dataclass(frozen=True)
class SplitSource:
    """One split of a dataset and where it lives."""

    split: str
    path: Path
    format: str  # jsonl | jsonl.gz | jsonl.zst | parquet | hf

    @property
    def display(self) -> str:
        return str(self.path)


@dataclass
class Chunk:
    """A unit of work: whole JSONL lines as one blob, or an Arrow record batch, with its first row number."""

    split: str
    file: str
    first_row: int  # 1-based line (JSONL) or row (columnar) number of the first row in the chunk
    blob: bytes | None = None
    batch: Any = None  # pyarrow.RecordBatch for columnar sources
    # Where the blob lies in an uncompressed file, so a local worker can read it itself (see `detached`).
    path: str | None = None
    offset: int = -1
    length: int = 0
    checksum: int = 0

    @property
    def nbytes(self) -> int:
        if self.blob is not None:
            return len(self.blob)
        if self.batch is not None:
            return int(self.batch.nbytes)
        return self.length

    def detached(self) -> Chunk:
        """The same chunk without its bytes, for a worker process on this machine.

        Piping every blob to a worker costs two copies and a syscall per 64 KiB, which on 2 cores took
        as long as parsing; a worker reading the page-cached file by offset costs almost nothing. The
        xxh3 checksum lets the worker prove it read the bytes the parent hashed.
        """
        if self.blob is None or self.path is None or self.offset < 0:
            return self
        import xxhash

        return Chunk(self.split, self.file, self.first_row, path=self.path, offset=self.offset,
                     length=len(self.blob), checksum=xxhash.xxh3_64_intdigest(self.blob))

    def attached(self) -> Chunk:
        """Reads a detached chunk's bytes back from its file; fails if the file changed since the parent read it."""
        if self.blob is not None or self.path is None or self.batch is not None:
            return self
        import os

        import xxhash

        try:
            fd = os.open(self.path, os.O_RDONLY)
            try:
                blob = os.pread(fd, self.length, self.offset)
            finally:
                os.close(fd)
        except OSError as exc:
            raise InputError(f"cannot read: {exc.strerror}", file=self.file, line=self.first_row) from None
        if len(blob) != self.length or xxhash.xxh3_64_intdigest(blob) != self.checksum:
            raise InputError("file changed while it was being checked", file=self.file, line=self.first_row)
        return Chunk(self.split, self.file, self.first_row, blob=blob)


@dataclass
class SplitStats:
    """What reading one split saw; filled in while streaming."""

    split: str
    file: str
    format: str
    rows: int = 0
    bytes: int = 0
    sha256: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def _split_name(path: Path) -> str:
    name = path.name
    for suffix in sorted(JSONL_SUFFIXES + PARQUET_SUFFIXES, key=len, reverse=True):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


def _format_of(path: Path) -> str | None:
    name = path.name
    for suffix in sorted(SPLIT_FORMATS, key=len, reverse=True):
        if name.endswith(suffix):
            return SPLIT_FORMATS[suffix]
    return None


def is_dataset_file(path: Path, *, single_file: bool = False) -> bool:
    """Whether the reader reads `path` as (part of) a dataset: a split file, or a file of a Hugging Face directory.

    `single_file`: the dataset is this one file. Only then is a plain `.json` data: in a directory the reader
    skips it as metadata (MANIFEST.json, FAULTS.json), so a change to it changes no dataset."""
    name = path.name
    if single_file:
        return _format_of(path) is not None
    if name in HF_FILES or name.endswith(HF_SUFFIXES):
        return True
    return _format_of(path) is not None and not name.endswith(".json")


def _split_sort_key(split: str) -> tuple[int, str]:
    return (SPLIT_ORDER.index(split) if split in SPLIT_ORDER else len(SPLIT_ORDER), split)


def discover(path: str | Path) -> list[SplitSource]:
    """Finds the splits of a dataset; fails with one clear line when there are none."""
    p = Path(path)
    if not p.exists():
        raise InputError("no such file or directory", file=str(p))
    confine(p, anchor=p, what="dataset")
    if p.is_file():
        fmt = _format_of(p)
        if fmt is None:
            raise InputError(f"unsupported file type (expected {', '.join(SPLIT_FORMATS)})", file=str(p))
        return [SplitSource(_split_name(p), p, fmt)]
    if (p / "dataset_dict.json").is_file():
        try:
            splits = json.loads((p / "dataset_dict.json").read_text())["splits"]
        except (ValueError, KeyError, TypeError) as exc:
            raise InputError(f"not a Hugging Face DatasetDict ({exc})", file=str(p / "dataset_dict.json")) from None
        if not isinstance(splits, list) or not all(isinstance(s, str) and s and Path(s).name == s for s in splits):
            raise InputError("not a Hugging Face DatasetDict ('splits' must be a list of split directory names)",
                             file=str(p / "dataset_dict.json"))
        for s in splits:
            if "\x00" in s:
                raise InputError("not a Hugging Face DatasetDict (a split name contains a NUL byte)",
                                 file=str(p / "dataset_dict.json"))
            confine(p / s, anchor=p, what="dataset split directory")
        return sorted((SplitSource(s, p / s, "hf") for s in splits), key=lambda s: _split_sort_key(s.split))
    if (p / "state.json").is_file() and any(p.glob("*.arrow")):
        return [SplitSource("train", p, "hf")]
    found: dict[str, SplitSource] = {}
    for child in sorted(p.iterdir()):
        fmt = _format_of(child) if child.is_file() else None
        # plain .json is accepted as JSON Lines for a single file only: in a directory it is metadata
        # (MANIFEST.json, FAULTS.json, a report), not a split
        if fmt is None or child.name.endswith(".json"):
            continue
        confine(child, anchor=p, what="dataset file")  # a committed symlink out of the repository is refused
        split = _split_name(child)
        if split in found:
            raise InputError(f"split '{split}' is stored twice ({found[split].path.name} and {child.name})",
                             file=str(p))
        found[split] = SplitSource(split, child, fmt)
    if not found:
        raise InputError("no split files found (expected train.jsonl, val.jsonl, test.jsonl, ... or .parquet)",
                         file=str(p))
    return sorted(found.values(), key=lambda s: _split_sort_key(s.split))


def refuse_unmapped_splits(dataset: str | Path, sources: list[SplitSource], kind_of: Any) -> None:
    """A file of a dataset directory whose name is no known split (SPLIT_ORDER) and that no contract `splits` rule
    maps (`kind_of(name)` is None) is refused in one line naming it: silently its own split, a copied evaluation item
    in `train_more.ndjson` would escape `contamination`, which reads the train splits only. A single file is its own
    dataset and is not refused."""
    if Path(dataset).is_file():
        return
    for src in sources:
        if kind_of(src.split) is None:
            raise InputError(f"'{src.split}' is not a known split ({', '.join(SPLIT_ORDER)}) and no contract `splits` "
                             f"rule maps it: add e.g. `splits: {{train: [\"{src.split}*\"]}}` (docs/contracts.md, "
                             "Splits)", file=str(src.path))


class _HashingReader(io.RawIOBase):
    """Hashes the stored bytes as they are read, so a fingerprint costs no second pass."""

    def __init__(self, raw: BinaryIO, digest: Any) -> None:
        self._raw = raw
        self._digest = digest
        self.nbytes = 0

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        n = self._raw.readinto(b)
        if n:
            self._digest.update(memoryview(b)[:n])
            self.nbytes += n
        return n or 0

    def close(self) -> None:
        self._raw.close()
        super().close()


def _open_text_stream(src: SplitSource, digest: Any) -> tuple[BinaryIO, _HashingReader]:
    raw = open(src.path, "rb")
    hashing = _HashingReader(raw, digest)
    buffered = io.BufferedReader(hashing, buffer_size=1 << 20)
    if src.format == "jsonl.gz":
        return gzip.GzipFile(fileobj=buffered, mode="rb"), hashing  # type: ignore[return-value]
    if src.format == "jsonl.zst":
        import zstandard

        return zstandard.ZstdDecompressor().stream_reader(buffered, read_across_frames=True), hashing
    return buffered, hashing


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 and n % (1 << 20) == 0 else f"{n:,} bytes"


def iter_chunks(src: SplitSource, stats: SplitStats, *, chunk_bytes: int = CHUNK_BYTES,
                max_line_bytes: int | None = None, batch_rows: int = 4096) -> Iterator[Chunk]:
    """Streams one split as chunks; fills `stats` (rows, bytes, sha256) once the split is read to its end.

    Bounded on any input (gate.io.limits): the inflated size and inflation ratio of a compressed file, the length
    of a line and the number of lines are checked as the bytes arrive, so a decompression bomb or a file of
    millions of empty rows is refused with one line in seconds instead of being read into memory."""
    lim = limits.current()
    if max_line_bytes is None:
        max_line_bytes = lim.max_line_bytes
    if src.format == "parquet":
        yield from _iter_parquet(src, stats, batch_rows)
        return
    if src.format == "hf":
        yield from _iter_hf(src, stats, batch_rows)
        return
    digest = hashlib.sha256()
    try:
        stream, hashing = _open_text_stream(src, digest)
    except OSError as exc:
        raise InputError(f"cannot open: {exc.strerror}", file=src.display) from None
    line_no = 1
    pending = b""
    pending_at = 0  # file offset of `pending` (meaningful for uncompressed files only)
    plain = src.format == "jsonl"
    path = str(src.path) if plain else None
    seen_content = False
    inflated = 0
    try:
        with stream:
            while True:
                try:
                    data = stream.read(chunk_bytes)
                except (OSError, EOFError) as exc:
                    raise InputError(f"cannot decompress ({_one_line(exc)})", file=src.display, line=line_no) from None
                except MemoryError:  # a memory limit reached (a service job's worker): not a corrupt file
                    raise
                except Exception as exc:  # zstandard raises its own ZstdError
                    raise InputError(f"cannot decompress ({_one_line(exc)})", file=src.display, line=line_no) from None
                if not data:
                    break
                if not plain:
                    inflated += len(data)
                    limits.check_inflation(src.display, inflated, hashing.nbytes, line_no, lim)
                buf = pending + data if pending else data
                cut = buf.rfind(b"\n")
                if cut < 0:
                    if len(buf) > max_line_bytes:
                        raise InputError(f"line is longer than {_size(max_line_bytes)} (limit max_line_bytes)",
                                         file=src.display, line=line_no)
                    pending = buf
                    continue
                blob, pending = buf[: cut + 1], buf[cut + 1:]
                if len(blob) > max_line_bytes:  # rare at the default: only then can a whole line be too long
                    lengths = [len(x) for x in blob.split(b"\n")]
                    if max(lengths) > max_line_bytes:
                        raise InputError(f"line is longer than {_size(max_line_bytes)} (limit max_line_bytes)",
                                         file=src.display,
                                         line=line_no + next(i for i, n in enumerate(lengths) if n > max_line_bytes))
                if len(pending) > max_line_bytes:
                    raise InputError(f"line is longer than {_size(max_line_bytes)} (limit max_line_bytes)",
                                     file=src.display, line=line_no + blob.count(b"\n"))
                if line_no + blob.count(b"\n") > lim.max_rows_per_file + 1:
                    raise InputError(f"more than {lim.max_rows_per_file:,} lines (limit max_rows_per_file)",
                                     file=src.display, line=lim.max_rows_per_file + 1)
                at, pending_at = pending_at, pending_at + cut + 1
                if line_no == 1 and blob.startswith(b"\xef\xbb\xbf"):
                    blob, at = blob[3:], at + 3
                seen_content = seen_content or bool(blob.strip())
                yield Chunk(src.split, src.display, line_no, blob=blob, path=path, offset=at if plain else -1)
                line_no += blob.count(b"\n")
            if pending:
                at = pending_at
                if line_no == 1 and pending.startswith(b"\xef\xbb\xbf"):
                    pending, at = pending[3:], at + 3
                seen_content = seen_content or bool(pending.strip())  # a lone BOM is no content
                yield Chunk(src.split, src.display, line_no, blob=pending, path=path, offset=at if plain else -1)
    finally:
        stats.bytes = hashing.nbytes
    stats.sha256 = digest.hexdigest()
    if not seen_content:
        raise InputError("file is empty (no rows)", file=src.display)


def _hash_files(paths: list[Path]) -> tuple[str, int]:
    digest = hashlib.sha256()
    total = 0
    for path in paths:
        with open(path, "rb") as fh:
            while block := fh.read(1 << 20):
                digest.update(block)
                total += len(block)
    return digest.hexdigest(), total


def _one_line(exc: BaseException) -> str:
    """Arrow's messages can span lines; the CLI promises one."""
    return " ".join(str(exc).split())[:200]


def _iter_parquet(src: SplitSource, stats: SplitStats, batch_rows: int) -> Iterator[Chunk]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(src.path)
    except (OSError, pa.ArrowException, UnicodeDecodeError) as exc:  # corrupt metadata: column names not UTF-8
        raise InputError(f"not a readable Parquet file ({_one_line(exc)})", file=src.display) from None
    cap = limits.current().max_rows_per_file
    if pf.metadata.num_rows > cap:
        raise InputError(f"more than {cap:,} rows ({pf.metadata.num_rows:,}; limit max_rows_per_file)",
                         file=src.display)
    row = 1
    try:
        for batch in pf.iter_batches(batch_size=batch_rows):
            if batch.num_rows:
                yield Chunk(src.split, src.display, row, batch=batch)
                row += batch.num_rows
    except (OSError, pa.ArrowException, UnicodeDecodeError) as exc:  # a corrupt page shows when read
        raise InputError(f"cannot read Parquet ({_one_line(exc)})", file=src.display, line=row) from None
    stats.rows = row - 1
    stats.sha256, stats.bytes = _hash_files([src.path])
    if stats.rows == 0:
        raise InputError("file is empty (no rows)", file=src.display)


def _hf_data_files(src: SplitSource) -> list[Path]:
    """The `.arrow` files `datasets.load_from_disk` will read for this split: the ones its `state.json` names,
    each confined to the repository (a `state.json` naming `../../outside/x.arrow` is refused), in its order.
    These, not whatever `.arrow` files lie in the directory, are what the fingerprint hashes."""
    state = src.path / "state.json"
    confine(state, anchor=src.path, what="Hugging Face state.json")
    try:
        files = json.loads(state.read_text(encoding="utf-8"))["_data_files"]
        names = [f["filename"] for f in files]
        if not all(isinstance(n, str) and n and "\x00" not in n for n in names):
            raise TypeError("a filename is not a string, or holds a NUL byte")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(f"not a Hugging Face save_to_disk split ({_one_line(exc)})", file=str(state)) from None
    out = []
    for name in names:
        confine(src.path / name, anchor=src.path, what=f"data file {name!r} named by state.json")
        out.append(src.path / name)
    return out


def _iter_hf(src: SplitSource, stats: SplitStats, batch_rows: int) -> Iterator[Chunk]:
    """Reads a `save_to_disk` split through `datasets` itself, memory-mapped, batch by batch."""
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    try:
        import datasets
    except ImportError:
        raise InputError(f"reading a Hugging Face datasets directory needs the 'hf' extra ({install_hint('hf')})",
                         file=src.display) from None
    data_files = _hf_data_files(src)
    try:
        ds = datasets.load_from_disk(str(src.path))
    except Exception as exc:  # datasets raises a variety of errors for a broken directory
        raise InputError(f"cannot load with datasets.load_from_disk ({exc})", file=src.display) from None
    cap = limits.current().max_rows_per_file
    if ds.num_rows > cap:
        raise InputError(f"more than {cap:,} rows ({ds.num_rows:,}; limit max_rows_per_file)", file=src.display)
    table = ds.with_format("arrow")
    row = 1
    for batch in table.iter(batch_size=batch_rows):
        for rb in batch.to_batches():
            if rb.num_rows:
                yield Chunk(src.split, src.display, row, batch=rb)
                row += rb.num_rows
    stats.rows = row - 1
    stats.sha256, stats.bytes = _hash_files(data_files)
    if stats.rows == 0:
        raise InputError("split is empty (no rows)", file=src.display)
