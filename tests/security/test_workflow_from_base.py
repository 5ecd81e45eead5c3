"""Issue 27 item 5: the workflow and ci/scripts come from the target branch, so a pull request cannot edit the gate
that judges it. The workflow template's own `run:` steps, run in order on a pull request that both adds a
duplicated row and rewrites the gate's scripts to report a pass: the base's scripts run, and the job fails."""

from __future__ import annotations

import os
import subprocess

import yaml

from tests.test_ci_workflows import GITHUB, _git, api, repo, run_github_workflow  # noqa: F401 (fixtures)

FRIENDLY = "#!/usr/bin/env bash\necho 0 > \"${GATE_EXIT_FILE:-gate-exit-code}\"\nexit 0\n"


def test_a_pull_request_that_rewrites_the_gate_scripts_is_judged_by_the_base(repo, api, tmp_path):  # noqa: F811
    url, _ = api
    _git(repo, "checkout", "-q", "-B", "pr-tamper", "pr-faulty")
    for name in ("gate-check.sh", "gate-verdict.sh"):
        (repo / "ci" / "scripts" / name).write_text(FRIENDLY)
    _git(repo, "commit", "-q", "-am", "a friendlier gate")
    rc, _, output = run_github_workflow(repo, "pr-tamper", url, tmp_path)
    assert rc == 100
    assert "exit_code=100" in output.read_text()


def test_the_template_runs_only_what_the_base_holds():
    wf = yaml.safe_load(GITHUB.read_text())
    assert set(wf[True]) == {"pull_request_target"}  # this file as on the target branch
    steps = wf["jobs"]["gate"]["steps"]
    checkout = steps[0]
    assert checkout["with"]["persist-credentials"] is False
    assert checkout["with"]["ref"] == "${{ github.event.pull_request.head.sha }}"
    for step in steps:  # no script from the checkout itself: each one is the base's copy
        assert "bash ci/scripts" not in step.get("run", "")


def gate_check_argv(tmp_path, **env: str) -> list[str]:
    """The arguments ci/scripts/gate-check.sh gives `gate` under `env` (a stand-in `gate` writes them down)."""
    from tests.conftest import ROOT

    log = tmp_path / "argv"
    fake = tmp_path / "gate"
    fake.write_text(f"#!/usr/bin/env bash\nprintf '%s\\n' \"$@\" > {log}\nexit 0\n")
    fake.chmod(0o755)
    base = {**{k: v for k, v in os.environ.items() if not k.startswith(("GATE_", "GITHUB_"))},
            "GATE_BIN": str(fake), "GATE_DATASET": "d", "GATE_CONTRACT": "c.yaml", "GATE_BASE_REF": "origin/main",
            "GATE_EXIT_FILE": str(tmp_path / "rc")}
    subprocess.run(["bash", str(ROOT / "ci" / "scripts" / "gate-check.sh")], cwd=tmp_path, check=True,
                   env={**base, **env}, capture_output=True)
    return log.read_text().split("\n")


def test_the_approval_reaches_gate_only_as_the_flag(tmp_path):
    """gate-check.sh turns GATE_ALLOW_CONTRACT_CHANGE=true (set by the workflow on a maintainer's label) into
    --allow-contract-change, and anything else into nothing."""
    for value, expect in (("true", True), ("false", False), ("yes", False), ("", False)):
        argv = gate_check_argv(tmp_path, GATE_ALLOW_CONTRACT_CHANGE=value)
        assert ("--allow-contract-change" in argv) is expect, value
