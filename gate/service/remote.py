"""The CLI's side of a shared service: with GATE_URL set, `gate check` becomes a job there and waits for it, and
`gate token` manages the tokens there (with an admin token).

Why through the service: DuckDB admits one writing process, and on a shared record that process is the service;
a CLI writing the same file directly would either be locked out or race it. The reports come back into the local
report directory, so a CI step reads report.md and junit.xml exactly as after a local run.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from gate.errors import ExitCode, GateError
from gate.io.atomic import atomic_dir
from gate.requests import CheckRequest, path_fields, remote_body
from gate.settings import positive_seconds

POLL_S = 0.5
CHECK_FILES = ("report.md", "report.json", "junit.xml")


class ServiceClient:
    def __init__(self, url: str, token: str | None, timeout_s: float = 30.0) -> None:
        import httpx

        self.url = url.rstrip("/")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(base_url=self.url, headers=headers, timeout=timeout_s)

    def _call(self, method: str, path: str, **kw: Any) -> Any:
        import httpx

        try:
            resp = self._http.request(method, path, **kw)
        except httpx.HTTPError as exc:
            raise GateError(f"cannot reach the gate service at {self.url} ({type(exc).__name__}: {exc})") from None
        if resp.status_code >= 400:
            try:
                detail = resp.json().get("detail")
            except ValueError:
                detail = resp.text[:200]
            raise GateError(f"the gate service refused {method} {path}: HTTP {resp.status_code}: {detail}")
        return resp

    def submit_check(self, body: dict[str, Any]) -> dict[str, Any]:
        return self._call("POST", "/checks", json=body).json()

    def job(self, job_id: str) -> dict[str, Any]:
        return self._call("GET", f"/jobs/{job_id}").json()

    def wait(self, job_id: str, timeout_s: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        while True:
            job = self.job(job_id)
            if job["status"] in ("done", "failed"):
                return job
            if time.monotonic() > deadline:
                raise GateError(f"job {job_id} still {job['status']} after {timeout_s:.0f} s (it keeps running on "
                                f"the service: GET {self.url}/jobs/{job_id})")
            time.sleep(POLL_S)

    def file(self, job_id: str, name: str) -> bytes:
        return self._call("GET", f"/jobs/{job_id}/files/{name}").content

    def create_token(self, name: str, role: str) -> str:
        return str(self._call("POST", "/tokens", json={"name": name, "role": role}).json()["token"])

    def revoke_token(self, name: str) -> None:
        from urllib.parse import quote

        self._call("DELETE", f"/tokens/{quote(name, safe='')}")

    def list_tokens(self) -> list[dict[str, Any]]:
        return list(self._call("GET", "/tokens").json())


def remote_check(req: CheckRequest) -> int:
    """Submits the check to $GATE_URL with $GATE_TOKEN, waits, copies the reports back; returns the job's exit code.
    Every `remote` field of the request is sent (gate.requests; the caller refused the `local` ones)."""
    timeout = positive_seconds("GATE_JOB_TIMEOUT", 3600.0)  # before submitting: a bad value must not leave a job
    url = os.environ["GATE_URL"]
    client = ServiceClient(url, os.environ.get("GATE_TOKEN"))
    body = remote_body(req)
    for name in path_fields(CheckRequest):  # the service resolves paths under its roots, not our cwd
        if body[name] is not None:
            body[name] = str(Path(body[name]).absolute())
    job = client.submit_check(body)
    quiet, dataset, report_dir = req.quiet, req.dataset, req.report_dir
    if not quiet:
        print(f"submitted {job['job_id']} to {url}", flush=True)
    from gate.report.console import make_console

    console = make_console()
    if console.is_terminal and not quiet:  # a spinner on a terminal; CI logs get the two lines only
        with console.status(f"waiting for {job['job_id']} on {url}"):
            done = client.wait(job["job_id"], timeout)
    else:
        done = client.wait(job["job_id"], timeout)
    if done["status"] == "failed":
        raise GateError(f"job {done['job_id']} failed on the service: {done['error']}")
    with atomic_dir(report_dir) as tmp:
        for name in CHECK_FILES:
            (tmp / name).write_bytes(client.file(done["job_id"], name))
    code = int(done["exit_code"])
    verdict = "PASS" if code == ExitCode.PASS else "FAIL"
    result = done.get("result") or {}
    print(f"{verdict} {dataset}: {result.get('rows', '?')} rows, run {result.get('run_id')} via {url} "
          f"→ {report_dir}/report.md")
    return code
