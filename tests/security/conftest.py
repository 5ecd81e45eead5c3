"""A throwaway git repository shaped like a dataset project (contract, evaluation set, dataset on `main`), for the
attacks of issue 27: a pull request is a branch `pr` off `main` whose commits the gate must not trust."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import CONTRACTS, ROOT, triage_row, write_jsonl

AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
EVAL_PROMPT = "My order number 4471 never arrived and the tracking page says the parcel was returned to sender"


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.invalid", "GIT_CONFIG_GLOBAL": "/dev/null",
           "GIT_CONFIG_NOSYSTEM": "1"}
    out = subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True)
    return out.stdout


def rows(n: int, start: int = 0) -> list[dict]:
    return [triage_row(i, f"ticket {i} about a broken widget number {i} in the billing page")
            for i in range(start, start + n)]


def commit_all(repo: Path, msg: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", msg)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """`main`: contracts/triage.yaml (the shipped one), its evaluation set, data/triage/train.jsonl (10 clean
    rows); then checked out on a new branch `pr`."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "contracts").mkdir()
    shutil.copy(CONTRACTS / "triage.yaml", repo / "contracts" / "triage.yaml")
    suite = repo / "scorecards" / "suites"
    suite.mkdir(parents=True)
    shutil.copy(ROOT / "scorecards" / "suites" / "triage-heldout.jsonl", suite / "triage-heldout.jsonl")
    write_jsonl(repo / "data" / "triage" / "train.jsonl", rows(10))
    commit_all(repo, "base")
    git(repo, "checkout", "-q", "-b", "pr")
    return repo


def edit_contract(repo: Path, old: str, new: str) -> None:
    p = repo / "contracts" / "triage.yaml"
    text = p.read_text(encoding="utf-8")
    assert old in text, old
    p.write_text(text.replace(old, new), encoding="utf-8")


def append_rows(path: Path, new: list[dict]) -> None:
    import json

    with open(path, "a", encoding="utf-8") as fh:
        for r in new:
            fh.write(json.dumps(r) + "\n")
