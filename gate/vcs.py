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


def merge_base(ref: str, root: Path) -> str:
    """The commit a pull request left `ref` at: what "changed since REF" and "existing at REF" are relative to."""
    try:
        return _git(["merge-base", ref, "HEAD"], root).strip()
    except GateError:
        raise GateError(f"unknown git ref {ref!r}, or no common history with HEAD (in CI, check out with full "
                        "history: fetch-depth 0, and fetch the target branch)", file=str(root)) from None


def changed_files(ref: str, root: Path) -> list[Path]:
    """Absolute paths added, modified, deleted or renamed since the merge-base of `ref` and HEAD, committed or not."""
    base = merge_base(ref, root)
    names = set(_git(["diff", "--name-only", "-z", base], root).split("\0"))
    names |= set(_git(["ls-files", "--others", "--exclude-standard", "-z"], root).split("\0"))
    return sorted(root / n for n in names if n)


def export_at(commit: str, root: Path, paths: list[Path], dest: Path) -> list[Path]:
    """Writes the files and directories `paths` (absolute, inside `root`) as they are at `commit` under `dest`,
    at the same relative places; returns those that existed there. Read from git's objects (`git archive`), so the
    work tree and the index are never touched; the tar is extracted with tarfile's `data` filter (no absolute
    paths, links out of `dest` or device files, whatever the repository holds)."""
    import tarfile

    rels = []
    for p in paths:
        try:
            rel = p.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            continue
        if rel and _git(["ls-tree", "--name-only", commit, "--", rel], root).strip():
            rels.append(rel)
    if not rels:
        return []
    dest.mkdir(parents=True, exist_ok=True)
    try:  # streamed: a gigabyte split is never held in memory
        proc = subprocess.Popen(["git", "archive", "--format=tar", commit, "--", *rels], cwd=root,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except FileNotFoundError:
        raise GateError("git is not installed; --changed-since needs it") from None
    assert proc.stdout is not None and proc.stderr is not None
    try:
        with tarfile.open(fileobj=proc.stdout, mode="r|") as tar:
            tar.extractall(dest, filter="data")
    except tarfile.TarError as exc:
        proc.kill()
        raise GateError(f"git archive: unreadable output ({exc})", file=str(root)) from None
    finally:
        proc.stdout.close()
        err = proc.stderr.read()
        proc.wait()
    if proc.returncode != 0:
        msg = (err.decode("utf-8", "replace").strip().splitlines() or ["git archive failed"])[-1]
        raise GateError(f"git archive: {msg}", file=str(root))
    return [root.resolve() / r for r in rels]


def files_under(root: Path, under: Path) -> list[Path]:
    """Absolute paths of the files git sees under `under` (tracked, or untracked and not ignored): the same view of
    the work tree as `changed_files`, so an ignored cache or index folder is never taken for a dataset."""
    try:
        rel = under.resolve().relative_to(root.resolve()).as_posix() or "."
    except ValueError:
        return []
    names = set(_git(["ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", rel], root).split("\0"))
    return sorted(root / n for n in names if n and (root / n).is_file())


def unseen_content(root: Path, under: Path) -> list[str]:
    """What under `under` a diff of its own files does not show: symlinks that lead out of `under` (a change to
    their target, elsewhere in the repository, changes the data), git submodules (gitlinks: git records a commit,
    never the files) and nested repositories. Paths relative to `root`, `link -> target` for a symlink."""
    import os

    found: list[str] = []
    base = under.absolute()
    inside = base.resolve()

    def rel(p: Path) -> str:
        try:
            return p.relative_to(root).as_posix()
        except ValueError:
            return str(p)

    if base.is_symlink() and not inside.is_relative_to(root.resolve()):
        return [f"{rel(base)} -> {os.readlink(base)}"]
    if not base.is_dir():
        return []
    for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
        here = Path(dirpath)
        if ".git" in dirnames or ".git" in filenames:
            if here.resolve() != root.resolve():
                found.append(f"{rel(here)} (a nested git repository)")
            dirnames[:] = []
            continue
        for name in [*dirnames, *filenames]:
            p = here / name
            if p.is_symlink() and not p.resolve().is_relative_to(inside):
                found.append(f"{rel(p)} -> {os.readlink(p)}")
    try:
        where = base.resolve().relative_to(root.resolve()).as_posix() or "."
    except ValueError:
        return found
    for entry in _git(["ls-files", "-s", "-z", "--", where], root).split("\0"):
        mode, _, rest = entry.partition(" ")
        if mode == "160000":  # a gitlink: a submodule's commit, its files are not in this repository
            found.append(f"{rest.split(chr(9), 1)[-1]} (a git submodule)")
    return sorted(set(found))


def refuse_unseen(root: Path, under: Path, ref: str) -> None:
    """Fails closed (one line naming them) when the dataset holds content a diff since `ref` cannot see."""
    found = unseen_content(root, under)
    if found:
        more = f" and {len(found) - 3} more" if len(found) > 3 else ""
        raise GateError(f"the dataset holds content a diff since `{ref}` cannot see: {', '.join(found[:3])}{more}; "
                        "replace links and submodules with the files themselves", file=str(under))
