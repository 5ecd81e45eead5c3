"""The lines of a JSON Lines split, now and at a git ref, as row digests: what "changed since REF" means.

A row is identified by the digest of its stored line (whitespace at the ends ignored), so finding the rows a
pull request added or edited costs one hash per line and no JSON parsing; only the changed rows are parsed.

Most pull requests on a dataset append rows. When the split's blob at the base ref is byte for byte a prefix of
the current file, which git's own object id of that prefix proves, the changed lines are the ones past it and
neither `git diff` nor the base blob is read (git refuses to diff files over 1 GB anyway).
"""

from __future__ import annotations

import gzip
import hashlib
import os
import re
import subprocess
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gate.errors import GateError, InputError
from gate.io.dataset import SplitSource

INDEXABLE = ("jsonl", "jsonl.gz", "jsonl.zst")


@dataclass
class LineTable:
    """Every non-blank line of one split: 1-based line numbers, byte spans in the (decompressed) text, digests."""

    data: bytes
    lines: np.ndarray  # int64, 1-based
    starts: np.ndarray  # int64 offsets into `data`
    ends: np.ndarray
    digests: list[bytes]
    sha256: str = ""
    git_prefix_id: str = ""  # git's object id of the first `git_prefix` bytes (see `line_table`)

    def __len__(self) -> int:
        return len(self.digests)

    def line_bytes(self, k: int) -> bytes:
        return self.data[int(self.starts[k]):int(self.ends[k])]


def decode(raw: bytes, fmt: str, where: str) -> bytes:
    """The decompressed bytes, read piece by piece under the inflation limits (gate.io.limits): a bomb is refused
    after a few MiB, not inflated whole."""
    import io

    from gate.io.limits import check_inflation

    if fmt not in ("jsonl.gz", "jsonl.zst"):
        return raw
    try:
        if fmt == "jsonl.gz":
            stream: Any = gzip.GzipFile(fileobj=io.BytesIO(raw), mode="rb")
        else:
            import zstandard

            stream = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
        out = bytearray()
        while piece := stream.read(4 << 20):
            out += piece
            check_inflation(where, len(out), len(raw))
        return bytes(out)
    except InputError:
        raise
    except Exception as exc:  # gzip/zstandard raise their own error types
        raise InputError(f"cannot decompress ({exc})", file=where) from None


_WS = np.zeros(256, dtype=bool)
_WS[[9, 10, 11, 12, 13, 32]] = True


_NL_STEP = 1 << 26  # newline search in 64 MB steps: one boolean array of the whole file costs its size in page faults


def _git_object_id(algo: str, data: memoryview) -> str:
    h = hashlib.new(algo, b"blob %d\0" % len(data))
    h.update(data)
    return h.hexdigest()


def _line_spans(data: bytes, at_start: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Non-blank lines of `data` as (0-based segment index, start, end), trimmed like bytes.strip(), and the
    number of newlines in `data`. `at_start`: `data` begins the file (a UTF-8 BOM is skipped)."""
    buf = np.frombuffer(data, dtype=np.uint8)
    parts = [np.flatnonzero(buf[i:i + _NL_STEP] == 10) + i for i in range(0, len(buf), _NL_STEP)]
    nl = np.concatenate(parts) if parts else np.zeros(0, np.int64)
    starts = np.concatenate(([0], nl + 1)).astype(np.int64)
    ends = np.concatenate((nl, [len(data)])).astype(np.int64)
    if at_start and data.startswith(b"\xef\xbb\xbf"):
        starts[0] = 3
    nonempty = np.flatnonzero(ends > starts)
    edge = nonempty[_WS[buf[starts[nonempty]]] | _WS[buf[ends[nonempty] - 1]]]
    for k in edge.tolist():  # rare: CRLF endings, indentation, blank lines; trim like bytes.strip()
        seg = data[starts[k]:ends[k]]
        stripped = seg.strip()
        if not stripped:
            ends[k] = starts[k]
            continue
        lead = len(seg) - len(seg.lstrip())
        starts[k] += lead
        ends[k] = starts[k] + len(stripped)
    idx = np.flatnonzero(ends > starts)
    return idx, starts[idx], ends[idx], int(nl.size)


def line_table(raw: bytes, fmt: str, where: str, git_prefix: tuple[str, int] | None = None) -> LineTable:
    """Finds lines with numpy and hashes them through memoryview slices: no copy of a gigabyte file per line.

    `git_prefix` (hash algorithm, length) also computes git's blob id of that many leading bytes of `raw`, on
    another core while the lines are hashed."""
    data = decode(raw, fmt, where)
    idx, starts, ends, _ = _line_spans(data, True)
    # the file's sha256 (the run fingerprint) on the other core: hashlib releases the GIL on large buffers
    import xxhash

    whole = hashlib.sha256()
    threads = [threading.Thread(target=whole.update, args=(raw,))]
    prefix_id: list[str] = [""]
    if git_prefix is not None and git_prefix[1] <= len(raw):
        algo, n = git_prefix

        def prefix() -> None:
            prefix_id[0] = _git_object_id(algo, memoryview(raw)[:n])

        threads.append(threading.Thread(target=prefix))
    for t in threads:
        t.start()
    mv = memoryview(data)
    # a row's identity is xxh3-128 of its stripped line: not a defence against forgery, and ~5x faster per line
    # than blake2b (index format 2)
    xxh = xxhash.xxh3_128_digest
    digests = [xxh(mv[a:b]) for a, b in zip(starts.tolist(), ends.tolist(), strict=True)]
    for t in threads:
        t.join()
    return LineTable(data, idx + 1, starts, ends, digests, whole.hexdigest(), prefix_id[0])


def current_lines(src: SplitSource, git_prefix: tuple[str, int] | None = None) -> LineTable:
    if src.format not in INDEXABLE:
        raise InputError(f"incremental checks need JSON Lines splits, not {src.format}", file=src.display)
    try:
        raw = src.path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", file=src.display) from None
    return line_table(raw, src.format, src.display, git_prefix)


BLOCK_BYTES = 1 << 25  # `line_blocks` reads 32 MB at a time: the build's memory does not grow with the file


@dataclass
class LineBlock:
    """The whole lines of one block of a split: `line_table`'s fields, with offsets into the decompressed file."""

    data: bytes
    offset: int  # of data[0] in the decompressed file
    lines: np.ndarray  # int64, 1-based line numbers in the file
    starts: np.ndarray  # int64 offsets into `data`
    ends: np.ndarray
    digests: np.ndarray  # S16, xxh3-128 of each stripped line (as `line_table`)

    def __len__(self) -> int:
        return int(self.lines.size)

    def line_bytes(self, k: int) -> bytes:
        return self.data[int(self.starts[k]):int(self.ends[k])]


def _open_stream(src: SplitSource) -> Any:
    """The split's decompressed bytes as a stream; closing it closes the file."""
    if src.format == "jsonl.gz":
        return gzip.open(src.path, "rb")
    fh = open(src.path, "rb")
    if src.format == "jsonl.zst":
        import zstandard

        return zstandard.ZstdDecompressor().stream_reader(fh, read_across_frames=True, closefd=True)
    return fh


def line_blocks(src: SplitSource, raw_sink: Callable[[bytes], None] | None = None) -> Iterator[LineBlock]:
    """The split's lines block by block, exactly as `current_lines` finds them (same numbers, spans, digests),
    without the whole (decompressed) file in memory: a 1M-row split held whole costs its size, and more in forked
    workers (5.5 GB peak for a 1.2 GB split). `raw_sink` gets every block as read (plain JSON Lines:
    the file's own bytes, for its hashes)."""
    import xxhash

    if src.format not in INDEXABLE:
        raise InputError(f"incremental checks need JSON Lines splits, not {src.format}", file=src.display)
    xxh = xxhash.xxh3_128_digest
    try:
        stream = _open_stream(src)
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", file=src.display) from None
    from gate.io.limits import check_inflation, current

    lim = current()
    stored = src.path.stat().st_size if src.format != "jsonl" else 0
    with stream:
        carry, offset, line_base, eof = b"", 0, 0, False
        while not eof:
            try:
                chunk = stream.read(BLOCK_BYTES)
            except OSError as exc:
                raise InputError(f"cannot read: {exc.strerror or exc}", file=src.display) from None
            except Exception as exc:  # gzip/zstandard raise their own error types
                raise InputError(f"cannot decompress ({exc})", file=src.display) from None
            eof = not chunk
            if stored:  # a compressed split: bounded like the dataset reader's (gate.io.limits)
                check_inflation(src.display, offset + len(carry) + len(chunk), stored, lim=lim)
            if len(carry) > lim.max_line_bytes:
                raise InputError(f"line is longer than {lim.max_line_bytes:,} bytes (limit max_line_bytes)",
                                 file=src.display, line=line_base + 1)
            if raw_sink is not None and chunk:
                raw_sink(chunk)
            data = carry + chunk
            cut = len(data) if eof else data.rfind(b"\n") + 1
            if cut == 0:  # no newline yet: one line longer than a block
                carry = data
                continue
            data, carry = data[:cut], data[cut:]
            idx, starts, ends, newlines = _line_spans(data, offset == 0)
            mv = memoryview(data)
            digests = b"".join(xxh(mv[a:b]) for a, b in zip(starts.tolist(), ends.tolist(), strict=True))
            yield LineBlock(data, offset, idx + 1 + line_base, starts, ends,
                            np.frombuffer(digests, dtype="S16") if digests else np.zeros(0, "S16"))
            offset += len(data)
            line_base += newlines


class _Digests:
    """An 'S16' digest array read as 16-byte `bytes` per item (numpy's own items drop trailing NUL bytes)."""

    def __init__(self, array: np.ndarray) -> None:
        self.array = array

    def __len__(self) -> int:
        return int(self.array.size)

    def __getitem__(self, k: int) -> bytes:
        k = k + len(self) if k < 0 else k
        return self.array[k:k + 1].tobytes()

    def __iter__(self) -> Iterator[bytes]:
        raw = self.array.tobytes()
        return (raw[i:i + 16] for i in range(0, len(raw), 16))


class StreamedLines:
    """`LineTable`'s interface for a split read block by block (`line_blocks`): per line only its number, span
    and digest stay in memory (~40 B), and `line_bytes` reads a line back from the file (or, compressed, from a
    decompressed temporary copy) when a row is parsed. An incremental check of a 1M-row split parses a few
    thousand rows; holding the whole file for them cost its size, and again in every forked worker's RSS."""

    def __init__(self, src: SplitSource, git_prefix: tuple[str, int] | None = None) -> None:
        import tempfile

        whole = hashlib.sha256()
        prefix = hashlib.new(git_prefix[0], b"blob %d\0" % git_prefix[1]) if git_prefix is not None else None
        need = [git_prefix[1] if git_prefix is not None else 0, 0]  # prefix bytes still to hash, bytes seen

        def sink(chunk: bytes) -> None:
            whole.update(chunk)
            need[1] += len(chunk)
            if prefix is not None and need[0] > 0:
                prefix.update(memoryview(chunk)[:need[0]])
                need[0] -= min(need[0], len(chunk))

        plain = src.format == "jsonl"
        self._spool: Any = None if plain else tempfile.TemporaryFile()  # lives with the table
        lines, starts, ends, digests = [], [], [], []
        for block in line_blocks(src, sink if plain else None):
            if self._spool is not None:
                self._spool.write(block.data)
            lines.append(block.lines)
            starts.append(block.starts + block.offset)
            ends.append(block.ends + block.offset)
            digests.append(block.digests)
        if not plain:
            with open(src.path, "rb") as fh:  # the run fingerprint is the stored file's sha256
                while chunk := fh.read(BLOCK_BYTES):
                    whole.update(chunk)
            self._spool.flush()
            self._fh: Any = self._spool
        else:
            self._fh = open(src.path, "rb")  # read back with pread while the table lives
        self.lines = np.concatenate(lines) if lines else np.zeros(0, np.int64)
        self.starts = np.concatenate(starts) if starts else np.zeros(0, np.int64)
        self.ends = np.concatenate(ends) if ends else np.zeros(0, np.int64)
        self.digest_array = np.concatenate(digests) if digests else np.zeros(0, "S16")
        self.digests = _Digests(self.digest_array)
        self.sha256 = whole.hexdigest()
        complete = git_prefix is not None and need[0] == 0 and git_prefix[1] <= need[1]
        self.git_prefix_id = prefix.hexdigest() if prefix is not None and complete else ""

    def __len__(self) -> int:
        return int(self.lines.size)

    def line_bytes(self, k: int) -> bytes:
        a, b = int(self.starts[k]), int(self.ends[k])
        return os.pread(self._fh.fileno(), b - a, a)


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=False)
    except FileNotFoundError:
        raise GateError("--base needs git on PATH") from None


def repo_root(path: Path) -> Path:
    start = path if path.is_dir() else path.parent
    out = _git(start, "rev-parse", "--show-toplevel")
    if out.returncode != 0:
        raise GateError("--base needs the dataset inside a git repository", file=str(path))
    return Path(out.stdout.decode().strip())


def resolve_ref(repo: Path, ref: str) -> str:
    out = _git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    if out.returncode != 0:
        raise GateError(f"unknown git ref '{ref}' in {repo}")
    return out.stdout.decode().strip()


def lines_at(repo: Path, commit: str, src: SplitSource) -> LineTable | None:
    """The split's lines as committed at `commit`; None when the file did not exist there (every row is new)."""
    rel = src.path.resolve().relative_to(repo.resolve()).as_posix()
    out = _git(repo, "cat-file", "blob", f"{commit}:{rel}")
    if out.returncode != 0:
        return None
    return line_table(out.stdout, src.format, f"{commit[:12]}:{rel}")


@dataclass(frozen=True)
class BaseBlob:
    """The split's blob at the base commit, as far as the append fast path needs it: no content is read."""

    object_id: str
    size: int
    algo: str  # the repository's object format: sha1 or sha256


def base_blob(repo: Path, commit: str, src: SplitSource) -> BaseBlob | None:
    """Id and size of the split's blob at `commit` (plain JSON Lines only; None when absent or compressed)."""
    if src.format != "jsonl":
        return None
    rel = src.path.resolve().relative_to(repo.resolve()).as_posix()
    oid = _git(repo, "rev-parse", "--verify", "--quiet", f"{commit}:{rel}")
    size = _git(repo, "cat-file", "-s", f"{commit}:{rel}")
    algo = _git(repo, "rev-parse", "--show-object-format")
    if oid.returncode or size.returncode:
        return None
    fmt = algo.stdout.decode().strip() if algo.returncode == 0 else "sha1"
    if fmt not in ("sha1", "sha256"):
        return None
    return BaseBlob(oid.stdout.decode().strip(), int(size.stdout), fmt)


def appended_mask(now: LineTable | StreamedLines, base: BaseBlob) -> np.ndarray | None:
    """Changed lines when the base blob is a byte prefix of the current file (proved by its object id), else None.

    A line is unchanged exactly when its stripped bytes end within the prefix: the base then holds the same line
    (only whitespace can follow it up to the base's end), and every later line is new or was extended."""
    if not now.git_prefix_id or now.git_prefix_id != base.object_id:
        return None
    return now.ends > base.size


def start_diff(repo: Path, commit: str, src: SplitSource) -> subprocess.Popen[bytes] | None:
    """Starts `git diff` of one split against `commit` (plain JSON Lines that exist there only; else None and the
    caller compares digests). Git compares both versions in C, on the other core while this process hashes the
    current file; the base of a gigabyte file is never read into Python."""
    if src.format != "jsonl":
        return None
    rel = src.path.resolve().relative_to(repo.resolve()).as_posix()
    if _git(repo, "cat-file", "-e", f"{commit}:{rel}").returncode != 0:
        return None
    return subprocess.Popen(["git", "-C", str(repo), "-c", "core.quotepath=off", "diff", "--no-color",
                             "--no-ext-diff", "--no-textconv", "--no-renames", "-U0", "--text", commit, "--", rel],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)


def changed_lines(proc: subprocess.Popen[bytes] | None) -> np.ndarray | None:
    """1-based line numbers the started diff reports as added or changed (None: git could not say)."""
    if proc is None:
        return None
    stdout, _ = proc.communicate()
    if proc.returncode != 0:
        return None
    added: list[np.ndarray] = []
    for header in re.finditer(rb"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@", stdout, re.M):
        first, count = int(header.group(1)), int(header.group(2) or 1)
        if count:
            added.append(np.arange(first, first + count, dtype=np.int64))
    return np.concatenate(added) if added else np.zeros(0, np.int64)


def changed_mask(now: LineTable | StreamedLines, base: LineTable | None) -> np.ndarray:
    """True for the lines of `now` that are not in `base` (as a multiset: an extra copy of a line is a change)."""
    if base is None:
        return np.ones(len(now), dtype=bool)
    remaining: dict[bytes, int] = {}
    for d in base.digests:
        remaining[d] = remaining.get(d, 0) + 1
    out = np.zeros(len(now), dtype=bool)
    for k, d in enumerate(now.digests):
        n = remaining.get(d, 0)
        if n:
            remaining[d] = n - 1
        else:
            out[k] = True
    return out
