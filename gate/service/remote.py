"""The CLI's side of a shared service: with GATE_URL set, `gate check`, `gate review` and `gate apply` become jobs
there and wait for them, and `gate token` manages the tokens there (with an admin token).

Why through the service: DuckDB admits one writing process, and on a shared record that process is the service;
a CLI writing the same file directly would either be locked out or race it. What the job wrote comes back into the
local output directory (atomically: the whole directory or nothing), so a CI step reads report.md and junit.xml,
review.html, or the corrected copy exactly as after a local run. One path does it for every kind (`run_job`: send
the request's `remote` fields, wait, fail in one line; `fetch_into`: the files back).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from gate.errors import ExitCode, GateError
from gate.io.atomic import atomic_dir
from gate.requests import ApplyRequest, CheckRequest, ReviewRequest, path_fields, remote_body, unsent
from gate.settings import positive_seconds

POLL_S = 0.5
CHECK_FILES = ("report.md", "report.json", "junit.xml")
REVIEW_FILES = ("review.jsonl", "review.html")


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

    def submit(self, route: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST `route` (/checks, /reviews, /corrections): the queued job."""
        return self._call("POST", route, json=body).json()

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
        """A report the job wrote (all are redacted)."""
        return self._call("GET", f"/jobs/{job_id}/files/{quote(name, safe='')}").content

    def create_token(self, name: str, role: str) -> str:
        return str(self._call("POST", "/tokens", json={"name": name, "role": role}).json()["token"])

    def revoke_token(self, name: str) -> None:
        self._call("DELETE", f"/tokens/{quote(name, safe='')}")

    def list_tokens(self) -> list[dict[str, Any]]:
        return list(self._call("GET", "/tokens").json())


@dataclass(frozen=True)
class Finished:
    """A job that ran to its end on the service (`job`: GET /jobs/{id}), and where to fetch its files."""

    client: ServiceClient
    url: str
    job: dict[str, Any]

    @property
    def code(self) -> int:
        return int(self.job["exit_code"])

    @property
    def result(self) -> dict[str, Any]:
        return self.job.get("result") or {}


def refuse_unsent(req: Any) -> int | None:
    """With GATE_URL set: a `local` option given a value other than its default is refused in one line on stderr
    (dropping it would answer another question than the one asked); returns the exit code 2 then, else None."""
    refused = unsent(req)
    if not refused:
        return None
    print(f"gate: error: the service (GATE_URL) cannot honour {', '.join(refused)}: run without GATE_URL, "
          f"or without the option(s)", file=sys.stderr)
    return int(ExitCode.USAGE)


def run_job(req: Any, route: str, *, quiet: bool = False, paths: Iterable[str] = ()) -> Finished:
    """Submits every `remote` field of `req` (gate.requests; the caller refused the `local` ones) to $GATE_URL
    `route` with $GATE_TOKEN and waits for the job; a job that failed there is one GateError line. The path fields,
    and the fields named in `paths`, are sent absolute: the service resolves them under its roots, not our cwd."""
    timeout = positive_seconds("GATE_JOB_TIMEOUT", 3600.0)  # before submitting: a bad value must not leave a job
    url = os.environ["GATE_URL"]
    client = ServiceClient(url, os.environ.get("GATE_TOKEN"))
    body = remote_body(req)
    for name in (*path_fields(type(req)), *paths):
        if body[name] is not None:
            body[name] = str(Path(body[name]).absolute())
    job = client.submit(route, body)
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
    return Finished(client, url, done)


def fetch_into(done: Finished, dest: str, names: Iterable[str], read: Any = None) -> None:
    """The job's files `names` into the local directory `dest`, which they replace whole (gate.io.atomic.atomic_dir):
    all of them or, if one cannot be fetched, none, and `dest` as it was. `read(name)` gives a file's bytes (default:
    the report route of the service)."""
    read = read or (lambda name: done.client.file(done.job["job_id"], name))
    with atomic_dir(dest) as tmp:
        for name in names:
            if not name or Path(name).name != name or name in (".", ".."):  # a name, never a path out of `dest`
                raise GateError(f"the service named a file {name!r} for job {done.job['job_id']}: not a file name")
            (tmp / name).write_bytes(read(name))


def remote_check(req: CheckRequest) -> int:
    """`gate check` as a job on $GATE_URL: the reports come back into the report directory; the job's exit code."""
    done = run_job(req, "/checks", quiet=req.quiet)
    fetch_into(done, req.report_dir, CHECK_FILES)
    verdict = "PASS" if done.code == ExitCode.PASS else "FAIL"
    print(f"{verdict} {req.dataset}: {done.result.get('rows', '?')} rows, run {done.result.get('run_id')} via "
          f"{done.url} → {req.report_dir}/report.md")
    return done.code


def remote_review(req: ReviewRequest) -> int:
    """`gate review` as a job on $GATE_URL: review.jsonl and review.html come back into `out`, the service records
    the queue; the job's exit code (1 when the engine could not answer some rows, as locally)."""
    model_is_path = req.model is not None and req.engine != "url"  # the service confines it as it does a path
    done = run_job(req, "/reviews", quiet=req.quiet, paths=("model",) if model_is_path else ())
    fetch_into(done, req.out, REVIEW_FILES)
    r = done.result
    asked = (f"; model asked about {r['rows_asked']} row(s), {r['rows_agreeing']} agree, {r['engine_errors']} "
             "engine error(s)") if "rows_asked" in r else ""
    print(f"{r.get('review_id')}: {r.get('cases', '?')} case(s){asked} via {done.url} → {req.out}/review.html, "
          f"{req.out}/review.jsonl")
    return done.code


def _readable(path: Path) -> bool:
    """A file of the service's job directory this client can read (they share a filesystem)."""
    return path.is_file() and os.access(path, os.R_OK)


def remote_apply(req: ApplyRequest) -> int:
    """`gate apply` as a job on $GATE_URL: the service writes the corrected copy into the job's own directory and
    records the corrections; the copy (its splits and MANIFEST.json) is copied from there into `out`. The job's exit
    code. The copy is the dataset's own rows, which the service never sends over HTTP (every route gives masked
    reports only): it is read through the filesystem the service and this client share (the dataset itself was sent
    as a path), and where this machine cannot read the job's directory, one line says where the copy is."""
    from gate.data.corrections import MANIFEST, refuse_output_over_input

    refuse_output_over_input([Path(req.dataset)], req.out)  # `out` is replaced whole: never the input
    done = run_job(req, "/corrections")
    r = done.result
    copy = Path(done.job.get("report_dir") or "") / "dataset"
    names = [*r.get("outputs", []), MANIFEST]
    if not done.job.get("report_dir") or not all(_readable(copy / n) for n in names if Path(n).name == n):
        raise GateError(f"job {done.job['job_id']} applied {r.get('corrections', 0)} correction(s) on the service; "
                        f"the corrected copy is there, in {copy}, which this machine cannot read (the service never "
                        "sends a dataset's rows): read it on the service's filesystem")
    fetch_into(done, req.out, names, read=lambda name: (copy / name).read_bytes())
    reasons = ", ".join(f"{k} {v}" for k, v in sorted((r.get("by_reason") or {}).items()))
    print(f"{r.get('corrections', 0)} correction(s) applied to {r.get('rows_corrected', 0)} row(s) ({reasons}) via "
          f"{done.url} → {req.out}/{MANIFEST}")
    return done.code
