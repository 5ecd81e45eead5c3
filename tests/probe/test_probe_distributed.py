"""Step 10 (torchrun, FSDP2, sharded checkpoint) on the real torchrun: what it says when a rank fails, and a batch
smaller than the number of workers."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gate.probe.distributed import step_distributed, torchrun_cause
from tests.conftest import ROOT


@pytest.fixture(scope="module")
def tiny_glm() -> Path:
    sys.path.insert(0, str(ROOT / "fixtures"))
    try:
        import build_glm_models
    finally:
        sys.path.pop(0)
    return build_glm_models.build(ROOT / ".cache" / "probe-models")["glm45-tiny"]


def _batch(path: Path, rows: int) -> Path:
    import torch

    ids = torch.randint(5, 100, (rows, 16), generator=torch.Generator().manual_seed(0))
    torch.save({"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": ids.clone()}, path)
    return path


def _torchrun(script: Path) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", str(script)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"})


@pytest.mark.parametrize("init", [True, False], ids=["process-group", "plain"])
def test_the_cause_is_the_failing_ranks_exception_not_torchruns_banner(tmp_path, init):
    """A child whose exception is dotted and runs over two lines: the old pattern (`\\w+Error: ...` on one line)
    found nothing and the evidence was torchrun's last line, "=====...". Now the failing rank's exception line
    (named by rank where torch prefixes the rank's lines, as it does once a process group is up)."""
    script = tmp_path / "child.py"
    script.write_text("import os, _pickle\n"
                      + ("import torch.distributed as dist\ndist.init_process_group('gloo')\n" if init else "")
                      + "if os.environ['RANK'] == '1':\n"
                      "    raise _pickle.UnpicklingError('batch file is damaged\\nsee the probe log')\n")
    proc = _torchrun(script)
    assert proc.returncode == 1
    out = proc.stderr + "\n" + proc.stdout
    assert out.rstrip().endswith("=" * 60)  # what the evidence used to show
    want = "_pickle.UnpicklingError: batch file is damaged"
    assert torchrun_cause(out) == (f"rank 1: {want}" if init else want), out


def test_step_10_names_a_ranks_error_on_a_damaged_shard(tiny_glm, tmp_path):
    """The real worker on a truncated safetensors shard: the evidence is safetensors' error, not the banner."""
    model = tmp_path / "model"
    shutil.copytree(tiny_glm, model)
    shard = next(model.glob("*.safetensors"))
    shard.write_bytes(shard.read_bytes()[:100])
    step = step_distributed(model, None, _batch(tmp_path / "b.pt", 2), tmp_path)
    assert not step.ok
    assert "SafetensorError: Error while deserializing header" in step.evidence, step.evidence
    assert "=====" not in step.evidence and step.evidence.startswith("torchrun exited 1: rank ")


def test_one_row_for_two_workers_gives_every_rank_a_row(tiny_glm, tmp_path):
    """`gate probe --rows 1`: rank 1 of 2 used to get an empty batch and die on a reshape of 0 elements."""
    step = step_distributed(tiny_glm, None, _batch(tmp_path / "b.pt", 1), tmp_path)
    assert step.ok, step.evidence
    assert "the batch has 1 row(s) for 2 workers: repeated" in step.evidence
    assert len(step.details["losses"]) == 2


def _aborting_child(tmp_path: Path, *, once: bool, init: bool = True) -> Path:
    """A torchrun child whose rank 1 aborts (SIGABRT, no Python exception), every time or only on the first run."""
    script = tmp_path / "child.py"
    marker = tmp_path / "ran-once"
    script.write_text("import os, pathlib\n"
                      + ("import torch.distributed as dist\ndist.init_process_group('gloo')\n" if init else "")
                      + f"marker = pathlib.Path({str(marker)!r})\n"
                      "def die():\n"
                      "    os.abort()\n"
                      "if os.environ['RANK'] == '1':\n"
                      f"    if {not once} or not marker.exists():\n"
                      "        marker.touch()\n"
                      "        die()\n"
                      + ("dist.barrier()\n" if init else ""))
    return script


@pytest.mark.parametrize("init", [True, False], ids=["process-group", "plain"])
def test_a_rank_killed_by_a_signal_names_the_frame_it_died_in(tmp_path, init):
    """Regression: a rank aborted under CI load and the evidence was only torchrun's "Signal 6 (SIGABRT) received by
    PID ..."; the ranks now run with Python's fault handler and the cause names the function the rank died in."""
    from gate.probe.distributed import run_torchrun

    script = _aborting_child(tmp_path, once=False, init=init)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", str(script)]
    proc, first = run_torchrun(cmd, {**os.environ, "OMP_NUM_THREADS": "1"}, 300)
    assert proc.returncode != 0
    line = script.read_text().splitlines().index("    os.abort()") + 1
    assert first == f"Fatal Python error: Aborted in die (child.py:{line}) (SIGABRT)"  # the first of the two runs
    assert torchrun_cause(proc.stderr + "\n" + proc.stdout) == first


def test_a_rank_that_died_of_a_signal_once_runs_again_and_says_so(tmp_path):
    """Regression for the CI flake: a signal death (an abort in gloo's transport under load) failed step 10 although
    the same run passes; torchrun runs a second time, and the first death is reported, not hidden."""
    from gate.probe.distributed import run_torchrun

    script = _aborting_child(tmp_path, once=True)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", str(script)]
    proc, first = run_torchrun(cmd, {**os.environ, "OMP_NUM_THREADS": "1"}, 300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert first is not None and "SIGABRT" in first


def test_a_python_exception_is_not_run_again(tmp_path):
    """The same code raises the same exception: only a signal death earns a second run."""
    from gate.probe.distributed import run_torchrun

    script = tmp_path / "child.py"
    runs = tmp_path / "runs"
    script.write_text(f"import os\nif os.environ['RANK'] == '1':\n    open({str(runs)!r}, 'a').write('x')\n"
                      "    raise ValueError('bad shard')\n")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", str(script)]
    proc, first = run_torchrun(cmd, {**os.environ, "OMP_NUM_THREADS": "1"}, 300)
    assert proc.returncode == 1 and first is None
    assert runs.read_text() == "x"
