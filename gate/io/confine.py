"""Every file gate reads on a user's behalf stays inside the repository: one function, symlinks resolved.

Why: in a pull-request gate the dataset, its contract and the scorecards are the pull request's. A reference to
`/etc/passwd`, to `../../outside/eval.jsonl`, a committed symlink out of the checkout, or a Hugging Face
`state.json` naming data files elsewhere would make gate read (and print ids from) files the pull request does
not own. So every reader and loader asks `confine` before it opens a file named by an input, and `confine` judges
the fully resolved target (every symlink followed), not the string: `..`, absolute paths and symlinks all lead out.

Where the root is, in order:
1. `use_roots(...)` in effect (the service: its configured dataset roots and its uploads);
2. `GATE_ROOT` (one directory, or several separated by the OS path separator): an explicit override;
3. the git work tree that holds the file making the reference (its nearest ancestor with a `.git` entry, found on
   the path as written, before any symlink is followed);
4. outside any git work tree (a loose copy, a temporary directory): the working directory, and the directory
   above the referencing file's directory (so `contracts/` and `scorecards/` side by side may name each other,
   and a dataset directory's siblings are readable, but nothing further up).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from pathlib import Path

from gate.errors import InputError

ENV_ROOT = "GATE_ROOT"
_override: ContextVar[tuple[Path, ...] | None] = ContextVar("gate_confine_roots", default=None)


class OutsideRoot(InputError):
    """A file named by an input resolves outside the repository: one line naming it and where it points."""


@contextlib.contextmanager
def use_roots(roots: Sequence[str | Path]) -> Iterator[None]:
    """Within the block every confined read must stay under `roots` (resolved), whatever the referencing file."""
    token = _override.set(tuple(Path(r).resolve() for r in roots))
    try:
        yield
    finally:
        _override.reset(token)


def git_toplevel(path: str | Path) -> Path | None:
    """The nearest ancestor of `path` (as written, made absolute without following symlinks) holding `.git`."""
    p = Path(os.path.abspath(path))
    for d in (p, *p.parents):
        if os.path.lexists(d / ".git"):
            return d
    return None


def roots_for(anchor: str | Path) -> tuple[Path, ...]:
    """The directories a file named by `anchor` (a contract, a scorecard, a dataset) may read under."""
    forced = _override.get()
    if forced is not None:
        return forced
    env = os.environ.get(ENV_ROOT, "").strip()
    if env:
        return tuple(Path(r).resolve() for r in env.split(os.pathsep) if r)
    top = git_toplevel(anchor)
    if top is not None:
        return (top.resolve(),)
    a = Path(os.path.abspath(anchor))
    own = a if a.is_dir() else a.parent
    tree = own.parent if own.parent != own.parent.parent else own  # never the file system's root
    return (Path.cwd().resolve(), tree.resolve())


def confine(path: str | Path, *, anchor: str | Path, what: str = "file") -> Path:
    """The real path of `path` (symlinks followed; it need not exist) if it lies under the roots of `anchor`;
    else `OutsideRoot` naming the file and where it points. Callers open the returned path, so a symlink swapped
    after the check still cannot lead out through a name that was judged before it."""
    raw = str(path)
    if "\x00" in raw:
        raise InputError(f"{what} path contains a NUL byte", file=raw.replace("\x00", "\\0"))
    try:
        real = Path(path).resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop
        raise InputError(f"{what} cannot be resolved ({exc.__class__.__name__})", file=raw) from None
    roots = roots_for(anchor)
    if any(real == r or real.is_relative_to(r) for r in roots):
        return real
    where = " or ".join(map(str, roots))
    # the verdict and the real target first: a one-line message is cut at 240 characters (gate.yamlio.one_line), so
    # with long paths the name as given and the repository are what is cut
    raise OutsideRoot(f"{what} outside the repository: points to {real} (given as {raw}; repository: {where})")
