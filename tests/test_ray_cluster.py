"""The Ray engine on a real multi-node cluster that loses nodes part-way (issue 35).

A head (no CPUs, as KubeRay heads are usually run) and two worker nodes with one CPU each are started with
`ray start` on this host, each its own raylet with its own temp dir and ports, as a user starts them on Slurm nodes.
One test kills a worker node's raylet while that node is mapping chunks: the check must still give the local findings
(Ray runs the lost tasks again on the surviving node). The other kills every worker node left: the check must end
with one line naming the cluster problem, exit 1, and write nothing.

Cost: the three nodes start at once (the workers wait for the head by themselves) and without the optional processes
(autoscaler monitor, log monitor); the drivers are separate processes (Ray reads RAY_AUTH_MODE once, at import).
Every process a node started is killed by its process id in the finalizer, whatever the test did; `ray stop` (which
kills every Ray on the machine) is never used.
"""

from __future__ import annotations

import os
import pickle
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import CONTRACTS, FIXTURES, ROOT, run_gate

ray = pytest.importorskip("ray")
psutil = pytest.importorskip("psutil")

# Checks whose state crosses chunks (first occurrence, pairs, splits) so a chunk folded twice, lost or out of order
# changes the findings; none of them loads a heavy library in the Ray workers.
DATASET, CONTRACT = FIXTURES / "tool-use-faulty", CONTRACTS / "tool-use.yaml"
CHECKS = ["exact_duplicate", "near_duplicate", "leakage", "group_split", "length", "contamination"]
CHUNK = 8 << 10  # ~230 tasks: the run is still mapping when the victim has done its share of work
VICTIM_CPU_S = 0.2  # mapping CPU the victim's worker spends before its node is killed: it has finished tasks
READY_S = 120  # a node start on a loaded 2-core machine (~3 s idle, 25 s seen at load 9)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Node:
    """One `ray start --block` process and everything it started; stopped by process id, never by `ray stop`."""

    def __init__(self, name: str, args: list[str], temp: Path, env: dict[str, str]) -> None:
        self.name = name
        self.log = temp.with_suffix(".log")
        with open(self.log, "wb") as log:
            # its own session: the node is one process group whose id is this pid (the last resort of `stop`), and
            # a signal to the pytest process group does not reach it
            self.proc = subprocess.Popen(
                [sys.executable, "-c", "from ray.scripts.scripts import main; main()", "start", "--block",
                 "--temp-dir", str(temp), "--node-ip-address", "127.0.0.1", "--disable-usage-stats",
                 "--include-log-monitor", "false", "--dashboard-agent-listen-port", str(_free_port()), *args],
                stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        self.seen: set[int] = set()
        self._listed: list[psutil.Process] = []
        self._listed_at = -1.0

    def wait_ready(self) -> None:
        deadline = time.monotonic() + READY_S
        while b"will now block forever" not in self.log.read_bytes():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                tail = self.log.read_text(errors="replace")[-2000:]
                raise RuntimeError(f"ray node {self.name} did not start (exit {self.proc.poll()}):\n{tail}")
            time.sleep(0.1)

    def processes(self) -> list[psutil.Process]:
        try:
            found = psutil.Process(self.proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            found = []
        self.seen.update(p.pid for p in found)
        return found

    def raylet(self) -> psutil.Process | None:
        return next((p for p in self.processes() if p.name() == "raylet"), None)

    def mapping_worker(self) -> tuple[psutil.Process, float] | None:
        """The worker now running a map task (Ray titles it after the task) and its CPU seconds; None if none is.

        Listing a process tree reads every /proc entry of the machine, so the tree is listed every 0.25 s and only
        the known processes' titles are read in between: the killer polls this every 10 ms."""
        now = time.monotonic()
        if now - self._listed_at > 0.25:
            self._listed, self._listed_at = self.processes(), now
        for p in self._listed:
            try:
                if p.cmdline()[:1] and p.cmdline()[0].startswith("ray::map_chunk_task"):
                    t = p.cpu_times()
                    return p, t.user + t.system
            except psutil.Error:
                continue
        return None

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        """SIGTERM first (`ray start --block` then stops its processes), SIGKILL to whatever is left, by pid."""
        self.processes()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        for pid in self.leftovers():
            try:
                psutil.Process(pid).kill()
            except psutil.Error:
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def leftovers(self) -> list[int]:
        out = []
        for pid in self.seen:
            try:
                if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                    out.append(pid)
            except psutil.Error:
                pass
        return out


class Cluster:
    """A head with no CPUs and one-CPU worker nodes, all on 127.0.0.1, with a token of their own."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.token = secrets.token_hex(32)  # token auth, Ray's default; never the user's ~/.ray/auth_token
        self.env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": self.token,
                    "RAY_USAGE_STATS_ENABLED": "0", "PYTHONPATH": str(ROOT)}
        self.env.pop("RAY_ADDRESS", None)
        self.port = _free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.nodes: list[Node] = []

    def launch(self, workers: int) -> None:
        # a lost node is noticed in ~1.5 s instead of Ray's ~15 s default
        config = '{"health_check_period_ms":500,"health_check_timeout_ms":500,"health_check_failure_threshold":3}'
        self._launch("head", ["--head", "--port", str(self.port), "--num-cpus", "0", "--include-dashboard", "false",
                              "--dashboard-port", str(_free_port()), "--no-monitor", "--system-config", config])
        for i in range(workers):
            self._launch(f"w{i + 1}", ["--address", self.address, "--num-cpus", "1"])

    def _launch(self, name: str, args: list[str]) -> None:
        self.nodes.append(Node(name, args, self.root / name, self.env))

    def workers(self) -> list[Node]:
        """The worker nodes still alive, once every node has started."""
        for node in self.nodes:
            if node.alive():
                node.wait_ready()
        return [w for w in self.nodes[1:] if w.alive()]

    def stop(self) -> list[int]:
        """Stops every node; returns the pids still running after that (none, or the test fails)."""
        for node in reversed(self.nodes):
            node.stop()
        return [pid for n in self.nodes for pid in n.leftovers()]


@pytest.fixture(scope="module")
def cluster():
    root = Path("/tmp") / f"gate-rc-{os.getpid()}"  # short: Ray's socket paths must fit in 107 bytes
    root.mkdir()
    c = Cluster(root)
    try:
        c.launch(workers=2)  # started, not waited for: the test does its local run meanwhile
        yield c
    finally:
        left = c.stop()
        shutil.rmtree(root, ignore_errors=True)
        assert not left, f"ray processes left running: {left}"


class Killer(threading.Thread):
    """SIGKILLs, by pid, the raylets of `victims` (or only the worker mapping a chunk, `worker_only`) once one of
    their workers spent `after_cpu_s` mapping chunks: a node, or a worker, lost part-way through the run."""

    def __init__(self, victims: list[Node], after_cpu_s: float, *, worker_only: bool = False) -> None:
        super().__init__(daemon=True)
        self.victims, self.after_cpu_s, self.worker_only = victims, after_cpu_s, worker_only
        self.done = threading.Event()  # set by the test when the run has ended
        self.killed_during_run = False
        self.error: str | None = None

    def run(self) -> None:
        deadline, first = time.monotonic() + 120, None
        while True:
            busy = next(((v, w) for v in self.victims if (w := v.mapping_worker()) is not None), None)
            if busy is not None:
                first = busy[1][1] if first is None else first
                if busy[1][1] - first >= self.after_cpu_s:
                    break
            if self.done.is_set() or time.monotonic() > deadline:
                self.error = f"the run ended before a victim node mapped for {self.after_cpu_s} s (first={first})"
                return
            time.sleep(0.01)
        if self.worker_only:
            busy[1][0].kill()
        else:
            for v in self.victims:
                raylet = v.raylet()
                if raylet is not None:
                    raylet.kill()
        self.killed_during_run = not self.done.is_set()


def _compared(run) -> tuple:
    """What must not depend on the engine or on a lost node: every check's outcome and findings, the data read."""
    return ([(r.name, r.status, r.findings, r.counts, r.summary) for r in run.results], run.fingerprint,
            [(s.split, s.rows, s.sha256) for s in run.splits])


DRIVER = """
import pickle, sys
from gate.contract import load_contract
from gate.data.runner import run_checks
from tests.test_ray_cluster import _compared
run = run_checks(sys.argv[1], load_contract(sys.argv[2]), checks=sys.argv[3].split(","), progress=False,
                 engine="ray", address=sys.argv[4], chunk_bytes=int(sys.argv[5]))
with open(sys.argv[6], "wb") as fh:
    pickle.dump((_compared(run), run.timings), fh)
"""


def _driver_env(cluster: Cluster, **extra: str) -> dict[str, str]:
    """A driver joins with the cluster's token, as a user's job does (RAY_AUTH_MODE=token, RAY_AUTH_TOKEN)."""
    return {**cluster.env, "CI": "true", **extra}


def test_lost_node_part_way_gives_the_local_findings(cluster, tmp_path):
    from gate.contract import load_contract
    from gate.data.runner import run_checks

    local = run_checks(str(DATASET), load_contract(CONTRACT), checks=CHECKS, progress=False, workers=1)
    found = {r.name: len(r.findings) for r in local.results}
    assert found["exact_duplicate"] and found["near_duplicate"] and found["leakage"]  # not a vacuous comparison
    keep, lose = cluster.workers()
    killer = Killer([lose], VICTIM_CPU_S)
    killer.start()
    try:
        res = subprocess.run([sys.executable, "-c", DRIVER, str(DATASET), str(CONTRACT), ",".join(CHECKS),
                              cluster.address, str(CHUNK), str(tmp_path / "run.pkl")],
                             env=_driver_env(cluster), capture_output=True, text=True, timeout=120)
    finally:
        killer.done.set()
        killer.join()
    assert killer.error is None and killer.killed_during_run
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stdout == ""  # Ray's own report of the lost node stays off the driver's stdout
    lose.proc.wait(30)  # the node is gone: `ray start --block` exits once its raylet died
    assert keep.alive()
    remote, timings = pickle.loads((tmp_path / "run.pkl").read_bytes())
    assert timings["ray_nodes_lost"] == 1 and timings["ray_slots"] == 2
    want = _compared(local)
    for a, b in zip(want[0], remote[0], strict=True):
        assert b == a, a[0]
    assert remote == want


def test_lost_worker_once_too_often_is_one_line(cluster, tmp_path):
    out = tmp_path / "report"
    workers = cluster.workers()
    killer = Killer(workers, 0.0, worker_only=True)  # the worker process, not the node: Ray starts another
    _one_line_failure(cluster, killer, out, f"ray cluster at {cluster.address}: a map task failed after 0 retries: "
                      "WorkerCrashedError: ", GATE_RAY_MAX_RETRIES="0", GATE_RAY_CAPACITY_WAIT_S="60")
    assert all(w.alive() for w in workers)  # only a worker was lost, no node


def test_no_capacity_left_is_one_line(cluster, tmp_path):
    out = tmp_path / "report"
    killer = Killer(cluster.workers(), 0.0)  # every worker node left: no CPU anywhere in the cluster
    _one_line_failure(cluster, killer, out, f"ray cluster at {cluster.address}: no node with a CPU left",
                      GATE_RAY_CAPACITY_WAIT_S="2")


def _one_line_failure(cluster, killer, out, start: str, **env: str) -> None:
    """A check on the cluster while `killer` takes capacity away: one line starting `start`, exit 1, nothing on
    stdout, no report."""
    killer.start()
    try:
        res = run_gate("check", str(DATASET), "-c", str(CONTRACT), "--checks", ",".join(CHECKS), "--engine", "ray",
                       "--address", cluster.address, "-o", str(out), "--no-db", "-q",
                       env=_driver_env(cluster, **env), timeout=120)
    finally:
        killer.done.set()
        killer.join()
    assert killer.error is None and killer.killed_during_run
    assert res.returncode == 1, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith(f"gate: error: {start}"), lines[0]
    assert "internal error" not in res.stderr and "Traceback" not in res.stderr
    assert res.stdout == ""
    assert not out.exists()


LOST_NOW = """
import os, signal, sys, time
import ray
from gate.data.ray_engine import _Capacity
ray.init(address=sys.argv[1], logging_level="ERROR", log_to_driver=False)
cap = _Capacity(ray, sys.argv[1], 60.0)
os.kill(int(sys.argv[2]), signal.SIGKILL)
time.sleep(0.05)  # the raylet's port is closed once the kernel reaped its sockets
gcs_alive = sum(1 for n in ray.nodes() if n.get("Alive"))
print("counts", len(cap.nodes), gcs_alive, cap.lost())
"""


def test_a_node_whose_raylet_died_is_lost_before_the_gcs_says_so(cluster):
    """Regression: `ray_nodes_lost` read 0 when the map ended before Ray's health checks marked the node dead."""
    cluster._launch("w3", ["--address", cluster.address, "--num-cpus", "1"])
    node = cluster.nodes[-1]
    node.wait_ready()
    raylet = node.raylet()
    assert raylet is not None
    res = subprocess.run([sys.executable, "-c", LOST_NOW, cluster.address, str(raylet.pid)],
                         env=_driver_env(cluster), capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-3000:]
    counts = next(line for line in res.stdout.splitlines() if line.startswith("counts "))  # Ray logs there too
    started, gcs_alive, lost = map(int, counts.split()[1:])
    assert gcs_alive == started  # the GCS still called the node alive: the case the count got wrong
    assert lost == 1
