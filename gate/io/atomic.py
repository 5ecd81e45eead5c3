"""Outputs appear whole or not at all: write into a temporary sibling, then rename into place."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def _owner_is_dead(name: str, marker: str) -> bool:
    """`.<target>.tmp-<host>-<pid>-…`: true when that process ran on this host and no longer exists."""
    try:
        host, pid = name.split(marker, 1)[1].split("-")[:2]
        if host != socket.gethostname().replace("-", "_"):
            return False
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except (ValueError, IndexError, OSError):
        return False
    return False


def _sweep_stale(target: Path) -> None:
    """A run killed mid-write (kill -9, OOM, power) leaves its temporary sibling behind; the next run removes
    those whose writer is gone, so crashed runs do not pile up partial copies of a dataset."""
    for marker in (".tmp-", ".old-"):
        for stale in target.parent.glob(f".{glob.escape(target.name)}{marker}*"):
            if stale.is_dir() and _owner_is_dead(stale.name, f".{target.name}{marker}"):
                if marker == ".old-" and not target.exists():
                    continue  # killed between the two renames: the previous output is all there is; keep it
                shutil.rmtree(stale, ignore_errors=True)


def _umask() -> int:
    """Read without setting it (os.umask would change it for every thread for a moment)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022


def _owner() -> str:
    return f"{socket.gethostname().replace('-', '_')}-{os.getpid()}-"


@contextmanager
def scratch_dir(target: str | Path) -> Iterator[Path]:
    """A working directory beside `target` (same filesystem), removed on exit; if the process is killed, the
    next atomic write to `target` sweeps it like any other stale temporary sibling."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-{_owner()}scratch-", dir=target.parent))
    try:
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@contextmanager
def atomic_dir(target: str | Path) -> Iterator[Path]:
    """Yields a temporary directory; on success it replaces `target`, on error it is removed and `target` kept."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    _sweep_stale(target)
    owner = _owner()
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-{owner}", dir=target.parent))
    tmp.chmod(0o777 & ~_umask())  # mkdtemp makes it 0700: the output is a dataset others read, like any mkdir
    try:
        yield tmp
        for p in tmp.rglob("*"):
            if p.is_file():
                with open(p, "rb") as fh:
                    os.fsync(fh.fileno())
        old = None
        if target.exists():
            old = target.parent / f".{target.name}.old-{owner}"
            os.replace(target, old)
        os.replace(tmp, target)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        _sweep_stale(target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def atomic_write_text(path: str | Path, text: str) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
