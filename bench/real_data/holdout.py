"""What the held-out dialogue sets share (sgd.py, kvret.py): reading a mirrored repository at its pinned commit, and
writing chat rows with the contract they are checked under.

Why: a held-out precision figure means something only for bytes someone else can rebuild; the commit pins them
(a git blob is named by its content's hash), so a mirror at another commit is refused, not read."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

CONTRACT = """\
name: {name}
version: "1.0"
description: {description}
fields:
  id: {{type: string, required: true, unique: true}}
{extra}messages:
  roles: [user, assistant]
  max_messages: 200
text:
  roles: [user, assistant]
"""


def pinned_reader(mirrors: Path, repo: str, commit: str) -> Callable[[str], bytes]:
    """A reader of `repo`'s files at `commit` from the fetch tool's mirror (`<mirrors>/<owner>+<name>/repo`)."""
    git = ["git", "--git-dir", str(mirrors / repo.replace("/", "+") / "repo")]
    head = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    if head != commit:
        raise SystemExit(f"{repo}: mirror at {head[:7]}, this set is pinned to {commit[:7]}")
    return lambda path: subprocess.run([*git, "show", f"{commit}:{path}"], check=True, capture_output=True).stdout


def write_chat_set(out: Path, rows: list[dict], contract: str) -> None:
    """`out/data/train.jsonl` (one row per line) and `out/contract.yaml`."""
    (out / "data").mkdir(parents=True, exist_ok=True)
    with open(out / "data" / "train.jsonl", "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    (out / "contract.yaml").write_text(contract)
