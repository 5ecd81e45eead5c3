"""The service is a face of the core (issue 20 item 5): it never imports gate.commands (a command prints; the use
cases live in gate/data, gate/score, gate/decide, gate/release), and a job prints nothing from its worker thread."""

from __future__ import annotations

import ast
import shutil
import threading
from pathlib import Path

import pytest

from tests.conftest import ROOT

GATE = ROOT / "gate"


def _imports_commands(path: Path, root: Path = ROOT) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            names = [base, *(f"{base}.{a.name}" for a in node.names)]
        else:
            continue
        if any(n == "gate.commands" or n.startswith("gate.commands.") for n in names):
            out.append(f"{path.relative_to(root)}:{node.lineno}")
    return out


def test_no_service_or_dashboard_module_imports_gate_commands() -> None:
    """Module-level and function-level imports alike: the worker used to import commands.check/commands.score."""
    found = [hit for pkg in ("service", "dashboard") for p in sorted((GATE / pkg).rglob("*.py"))
             for hit in _imports_commands(p)]
    assert found == [], "the service and the dashboard call the core, never gate.commands: " + ", ".join(found)


def test_the_import_scan_sees_every_spelling(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("import gate.score\n"
                     "def f():\n    from gate.commands.score import run_score_command\n"
                     "from gate import commands\n"
                     "import gate.commands.check\n"
                     "from gate.commandsx import y\n")
    assert sorted(_imports_commands(probe, tmp_path)) == ["probe.py:3", "probe.py:4", "probe.py:5"]


def test_a_service_score_job_writes_nothing_to_stdout_or_stderr(tmp_path: Path, capfd: pytest.CaptureFixture[str]
                                                                ) -> None:
    """A gated baseline-vs-candidate score job, run by the worker's own function on a thread as the service runs
    it: scored, decided, recorded and reported, and not one byte on the process's stdout or stderr (the service's
    terminal and its log). The command it once ran printed the run lines, the report paths and the decision."""
    from gate.service.config import ServiceConfig
    from gate.service.jobs import run_one, submit
    from gate.store import service as store
    from gate.testing.fake_openai import FakeOpenAI

    root = tmp_path / "root"
    shutil.copytree(ROOT / "scorecards", root / "scorecards")
    shutil.copytree(ROOT / "contracts", root / "contracts")  # the scorecard reads its contract
    cfg = ServiceConfig(roots=[root], db=str(tmp_path / "g.duckdb"), state_dir=tmp_path / "state", run_jobs=False)
    srv = FakeOpenAI().start()
    try:
        submit(cfg, "score", {"candidate": "tiny", "baseline": "tiny", "scorecard": str(root / "scorecards" /
                                                                                          "triage.yaml"),
                              "engine": "url", "base_url": srv.url, "limit": 3, "model_hash": "sha256:1",
                              "baseline_model_hash": "sha256:0"}, "ev")
        job = store.claim_next_job(cfg.db)
        assert job is not None
        capfd.readouterr()  # from here on: the job alone
        worker = threading.Thread(target=run_one, args=(cfg, job), name="gate-jobs")
        worker.start()
        worker.join(300)
        out, err = capfd.readouterr()
    finally:
        srv.kill()
    got = store.get_job(cfg.db, job["job_id"])
    assert got is not None and got["status"] == "done", got
    assert got["exit_code"] in (0, 100) and got["result"] == {"complete": True}  # decided (PROMOTE or BLOCK)
    report = Path(got["report_dir"])
    assert (report / "scores.md").is_file() and (report / "decision.md").is_file()
    assert (out, err) == ("", "")


def test_create_app_is_assembled_from_named_parts() -> None:
    """Issue 20 item 7: `create_app` was one 204-line function; each area's routes now have a name, and no function
    of the service's app module is longer than a reader can hold (80 lines)."""
    path = GATE / "service" / "app.py"
    tree = ast.parse(path.read_text())
    top = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    for part in ("_submit_routes", "_review_routes", "_job_routes", "_record_routes", "_token_routes", "_lifespan",
                 "_require"):
        assert part in top, part
    long = {n.name: n.end_lineno - n.lineno + 1 for n in ast.walk(tree)
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.end_lineno - n.lineno + 1 > 80}
    assert long == {}
