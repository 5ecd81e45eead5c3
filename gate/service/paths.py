"""Dataset and contract paths sent to the service must stay inside the configured roots.

Why resolve and compare instead of string checks: `..` segments, absolute paths and symlinks all lead out of a
directory, and only the fully resolved target (symlinks followed) says where a path really points.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from gate.errors import GateError


class PathRefused(GateError):
    """A path that leaves the roots, or names nothing: the caller's mistake, answered 400/404."""

    def __init__(self, message: str, *, missing: bool = False) -> None:
        super().__init__(message)
        self.missing = missing


def confine(raw: str, roots: list[Path]) -> Path:
    """The real path `raw` names, if it exists inside one of `roots` after following every symlink."""
    if not raw or "\x00" in raw:
        raise PathRefused("empty or malformed path")
    if ".." in PurePosixPath(raw).parts or ".." in Path(raw).parts:
        raise PathRefused(f"{raw}: '..' is not allowed in paths")
    candidate = Path(raw) if Path(raw).is_absolute() else roots[0] / raw
    lexical = candidate.absolute()
    if not any(lexical.is_relative_to(r) for r in roots):
        raise PathRefused(f"{raw}: outside the service's dataset roots")
    try:
        real = candidate.resolve(strict=True)
    except (FileNotFoundError, NotADirectoryError):
        raise PathRefused(f"{raw}: no such file or directory", missing=True) from None
    except (OSError, RuntimeError) as exc:  # symlink loops, permission
        raise PathRefused(f"{raw}: cannot be resolved ({exc})") from None
    if not any(real.is_relative_to(r) for r in roots):
        raise PathRefused(f"{raw}: resolves outside the service's dataset roots (symlink)")
    return real
