"""Which files git says changed since a ref, for `gate check --changed-since`.

Why merge-base and the working tree: in a pull request the question is "what does this branch change relative
to where it left the target", which is the diff from the merge-base (not from the target's current tip, which may
have moved on); locally, uncommitted and untracked files are part of the change a user is about to push.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from gate.errors import GateError


def _git(args: list[str], cwd: Path) -> str:
    try:
        out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=120)
    except FileNotFoundError:
        raise GateError("git is not installed; --changed-since needs it") from None
    if out.returncode != 0:
        msg = (out.stderr.strip().splitlines() or ["git failed"])[-1]
        raise GateError(f"git {' '.join(args[:2])}: {msg}", file=str(cwd))
    return out.stdout


def repo_root(path: Path) -> Path:
    """The top of the git work tree that holds `path` (or the nearest existing parent of it)."""
    probe = path.absolute()
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if probe.is_file():
        probe = probe.parent
    try:
        return Path(_git(["rev-parse", "--show-toplevel"], probe).strip()).resolve()
    except GateError:
        raise GateError("not inside a git work tree (--changed-since needs one)", file=str(path)) from None


def changed_files(ref: str, root: Path) -> list[Path]:
    """Absolute paths added, modified, deleted or renamed since the merge-base of `ref` and HEAD, committed or not."""
    try:
        base = _git(["merge-base", ref, "HEAD"], root).strip()
    except GateError:
        raise GateError(f"unknown git ref {ref!r}, or no common history with HEAD (in CI, check out with full "
                        "history: fetch-depth 0, and fetch the target branch)", file=str(root)) from None
    names = set(_git(["diff", "--name-only", "-z", base], root).split("\0"))
    names |= set(_git(["ls-files", "--others", "--exclude-standard", "-z"], root).split("\0"))
    return sorted(root / n for n in names if n)
