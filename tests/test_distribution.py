"""The distribution's name: `gate` on PyPI is somebody else's 2017 package, so no install hint may name it."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import gate

ROOT = Path(__file__).resolve().parents[1]
# `pip install gate`, `"gate[pii]"`, `'gate[train]'`: any install spec that would fetch the unrelated project.
WRONG_SPEC = re.compile(r"""(pip install\s+['"]?gate(\[|\s|['"]|$))|(['"]gate\[[a-z,]+\]['"])""", re.M)


def _texts() -> list[Path]:
    files = [ROOT / "README.md", ROOT / "pyproject.toml", ROOT / "Makefile"]
    for folder in ("gate", "ci", "docs", "tools", "action.yml"):
        p = ROOT / folder
        files += [p] if p.is_file() else [f for f in p.rglob("*") if f.is_file() and f.suffix in
                                           {".py", ".md", ".yml", ".yaml", ".sh", ".txt"}]
    return [f for f in files if f.exists()]


def test_distribution_name_is_ours_and_import_name_stays_gate():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert meta["name"] == gate.DISTRIBUTION == "finetune-gate"
    assert meta["scripts"]["gate"] == "gate.cli:main"


def test_no_install_hint_names_the_foreign_gate_package():
    bad = [f"{f.relative_to(ROOT)}:{text[:m.start()].count(chr(10)) + 1}: {m.group(0)!r}"
           for f in _texts() for text in [f.read_text(errors="replace")] for m in WRONG_SPEC.finditer(text)]
    assert not bad, "install hints naming PyPI's unrelated 'gate':\n" + "\n".join(bad)


def test_ci_templates_install_our_distribution():
    for name in ("ci/github/dataset-gate.yml", "ci/gitlab/dataset-gate.yml"):
        text = (ROOT / name).read_text()
        assert f'GATE_PIP_SPEC: "{gate.DISTRIBUTION}[pii]"' in text, name


def test_install_hint_names_the_distribution():
    assert gate.install_hint("pii") == "pip install 'finetune-gate[pii]'"
