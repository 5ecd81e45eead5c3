"""Issue 18 item 2: the wheel works outside the checkout, as a user with only pip gets it.

The wheel is built from a copy of this tree (so the shared checkout gets no build/ or egg-info), installed into a
fresh venv in a temp dir with the wheel's own console script; the third-party packages come from this project's
prepared .venv through one .pth line (installing the lock afresh each run would take many minutes), and gate itself
is imported from the wheel, never from the checkout. Then, from a temp dir that is not the checkout: `gate --help`,
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


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    base = tmp_path_factory.mktemp("wheel")
    src, dist, env_dir = base / "src", base / "dist", base / "venv"
    _copy_tree(src)
    # offline: the build backend (setuptools) comes from .venv, not from an isolated build env off PyPI
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dist),
                    str(src)], check=True, capture_output=True, timeout=300)
    [wheel] = dist.glob("finetune_gate-*.whl")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True, timeout=120)
    py = env_dir / "bin" / "python"
    site = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    # third-party packages only: a plain path line, so .venv's own .pth files (the editable gate) do not run
    (site / "zz_prepared_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--ignore-installed",
                    "--disable-pip-version-check", "--prefix", str(env_dir), str(wheel)],
                   check=True, capture_output=True, timeout=300)
    work = base / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "GATE_", "VIRTUAL_ENV", "GITHUB_"))}
    env.update({"HOME": str(base / "home"), "XDG_CACHE_HOME": str(base / "cache"), "PYTHONNOUSERSITE": "1",
                "CI": "true", "PATH": f"{env_dir / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"})
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
