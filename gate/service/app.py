"""The HTTP face of gate: routes that check a caller's role, confine its paths and hand work to the core.

No gate logic lives here: a check or score runs through the core's own functions (as a job), and reads are the
store's (gate.store.service). Findings leave the service redacted, like every report.
"""

# No `from __future__ import annotations`: FastAPI reads the route signatures, and the role aliases below are
# local to each area's routes (they close over the configuration), so the annotations must be real objects.

import importlib.util
import logging
import shutil
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, FastAPI, File, Form, HTTPException, Query, Request, UploadFile
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ConfigDict, Field

from gate import __version__
from gate.errors import GateError
from gate.io.dataset import SPLIT_FORMATS
from gate.requests import ApplyRequest as CoreApplyRequest
from gate.requests import CheckRequest as CoreCheckRequest
from gate.requests import ReviewRequest as CoreReviewRequest
from gate.requests import ScoreRequest as CoreScoreRequest
from gate.requests import body_model, path_fields
from gate.service.auth import Perm, Principal, Role, create_token, verify_token
from gate.service.config import ServiceConfig
from gate.service.jobs import REPORT_FILES, JobRunner, get_job, list_jobs, new_job_id, submit
from gate.service.limits import BodyLimit
from gate.service.paths import PathRefused, confine
from gate.store import service as store

log = logging.getLogger("gate.service")
UPLOAD_PATH = "/checks/upload"
DASHBOARD_PREFIX = "/dashboard"
# an upload is a one-file dataset: every suffix the reader reads as a split (the one list, owned by gate.io)
UPLOAD_SUFFIXES = tuple(SPLIT_FORMATS)
Limit = Annotated[int, Query(ge=1, le=1000, description="Newest first, at most this many.")]
_bearer = HTTPBearer(auto_error=False, description="A token from `gate token create`.")


#: the body of POST /checks: the `remote` fields of the one check request (gate.requests), derived from it
CheckRequest = body_model(CoreCheckRequest)


#: the body of POST /scores: the `remote` fields of the one score request (gate.requests), derived from it
ScoreRequest = body_model(CoreScoreRequest)

#: the body of POST /reviews (the hard-case queue) and of POST /corrections (`gate apply`), derived the same way
ReviewRequest = body_model(CoreReviewRequest)
ApplyRequest = body_model(CoreApplyRequest)


class TokenRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$", description="Who or what holds it (unique).")
    role: Role


def _confine(cfg: ServiceConfig, raw: str, field: str) -> str:
    try:
        return str(confine(raw, cfg.roots))
    except PathRefused as exc:
        raise HTTPException(404 if exc.missing else 400, f"{field}: {exc}") from None


def _sweep_orphan_uploads(cfg: ServiceConfig) -> None:
    """Uploads whose job was never queued (the service died between saving the file and queueing the job): nobody
    was told of such a job, so nothing refers to the file; removed at start, before any request is served."""
    if not cfg.uploads_dir.is_dir():
        return
    for d in cfg.uploads_dir.iterdir():
        if store.get_job(cfg.db, d.name) is None:
            log.warning("removing upload %s: its job was never queued", d.name)
            shutil.rmtree(d, ignore_errors=True)


def create_app(cfg: ServiceConfig) -> FastAPI:
    """The service for one configuration; the job worker starts and stops with the app's lifespan.

    Assembled from named parts, one per area (submitting work, review work, jobs, reads of the record, tokens,
    release moves, the dashboard), in the order their routes are matched."""
    runner = JobRunner(cfg) if cfg.run_jobs else None
    app = FastAPI(title="gate", version=__version__, lifespan=_lifespan(cfg, runner),
                  description="Data-and-evaluation gatekeeper: dataset checks, score runs, decisions and releases.")
    app.state.config = cfg
    app.exception_handler(GateError)(_gate_error)
    app.add_middleware(BodyLimit, default=cfg.max_body_bytes, per_path={UPLOAD_PATH: cfg.max_upload_bytes})
    require = _require(cfg)
    queue = _queue(cfg, runner)
    app.add_api_route("/health", health, methods=["GET"], tags=["service"])
    app.include_router(_submit_routes(cfg, require, queue))
    app.include_router(_review_routes(cfg, require, queue))
    app.include_router(_job_routes(cfg, require))
    app.include_router(_record_routes(cfg, require))
    app.include_router(_token_routes(cfg, require))
    from gate.service import release_actions

    release_actions.mount(app, require, queue)
    _mount_dashboard(app)
    return app


def _lifespan(cfg: ServiceConfig, runner: JobRunner | None) -> Callable[[FastAPI], Any]:
    """Start-up and shut-down: the record held, orphan uploads swept, the worker started; all undone at the end."""
    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        from gate.store.db import single_writer

        cfg.state_dir.mkdir(parents=True, exist_ok=True)
        # the service is the file's one process for its life: every connection in it (the worker's core functions,
        # read-only ones included, and each request's) is a cursor on this one database, costing microseconds
        with single_writer(cfg.db, ddl=store.DDL):
            _sweep_orphan_uploads(cfg)
            if runner is not None:
                runner.start()
            yield
            if runner is not None:
                runner.stop()

    return lifespan


async def _gate_error(_: Request, exc: GateError) -> JSONResponse:
    """The core could not do it (bad input it found, the record unavailable): its one line, never a traceback."""
    return JSONResponse({"detail": str(exc)}, status_code=503)


def health() -> dict[str, str]:
    return {"status": "ok", "version": __version__}


Require = Callable[[Perm], Callable[..., Principal]]
Queue = Callable[..., dict[str, Any]]


def _require(cfg: ServiceConfig) -> Require:
    """`require(perm)`: the dependency that admits a bearer token whose role has `perm` (401 unknown, 403 role)."""
    def require(perm: Perm) -> Callable[..., Principal]:
        def dependency(creds: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]) -> Principal:
            if creds is None or creds.scheme.lower() != "bearer":
                raise HTTPException(401, "a bearer token is required", headers={"WWW-Authenticate": "Bearer"})
            who = verify_token(cfg.db, creds.credentials)
            if who is None:
                raise HTTPException(401, "unknown, wrong or revoked token", headers={"WWW-Authenticate": "Bearer"})
            if not who.can(perm):
                raise HTTPException(403, f"role {who.role.value!r} may not {perm.value.replace('_', ' ')}")
            return who
        return dependency

    return require


def _queue(cfg: ServiceConfig, runner: JobRunner | None) -> Queue:
    """`queue(kind, params, who, job_id=None)`: the job recorded, the worker woken (no polling delay)."""
    def queued(kind: str, params: dict[str, Any], who: Principal, job_id: str | None = None) -> dict[str, Any]:
        job = submit(cfg, kind, params, who.name, job_id)
        if runner is not None:
            runner.wake()
        return job

    return queued


def _submit_routes(cfg: ServiceConfig, require: Require, queue: Queue) -> APIRouter:
    """Work handed to the job queue: a check of a dataset under a root or uploaded, a score run."""
    Checker = Annotated[Principal, Depends(require(Perm.submit_check))]
    Scorer = Annotated[Principal, Depends(require(Perm.submit_score))]
    router = APIRouter()

    @router.post("/checks", status_code=202, tags=["checks"])
    def submit_check(body: CheckRequest, who: Checker) -> dict[str, Any]:
        """Queue a `gate check` of a dataset that is already under one of the roots."""
        params = body.model_dump()
        for name in path_fields(CoreCheckRequest):
            if params[name] is not None:
                params[name] = _confine(cfg, params[name], name)
        return queue("check", params, who)

    @router.post(UPLOAD_PATH, status_code=202, tags=["checks"])
    def submit_check_upload(who: Checker, file: Annotated[UploadFile, File(description="One .jsonl or .parquet "
                                                                                        "dataset file.")],
                            contract: Annotated[str, Form()],
                            fail_on: Annotated[Literal["error", "warning", "never"], Form()] = "error",
                            checks: Annotated[str | None, Form(description="Comma-separated subset.")] = None,
                            ) -> dict[str, Any]:
        """Queue a `gate check` of an uploaded dataset file (within the upload size limit)."""
        name = Path(file.filename or "").name
        if not name.endswith(UPLOAD_SUFFIXES) or name.startswith("."):
            raise HTTPException(400, f"file: expected a name ending in {', '.join(UPLOAD_SUFFIXES)}")
        contract_path = _confine(cfg, contract, "contract")
        job_id = new_job_id()
        dest_dir = cfg.uploads_dir / job_id
        dest_dir.mkdir(parents=True, exist_ok=False)
        try:
            with open(dest_dir / name, "xb") as fh:
                shutil.copyfileobj(file.file, fh)
        except BaseException:
            shutil.rmtree(dest_dir, ignore_errors=True)
            raise
        params = {"dataset": str(dest_dir / name), "contract": contract_path, "fail_on": fail_on,
                  "checks": [c.strip() for c in checks.split(",") if c.strip()] if checks else None,
                  "max_examples": 10, "uploaded": name}
        return queue("check", params, who, job_id)

    @router.post("/scores", status_code=202, tags=["scores"])
    def submit_score(body: ScoreRequest, who: Scorer) -> dict[str, Any]:
        """Queue a `gate score` run; model directories must be under the roots unless served by URL."""
        params = body.model_dump()
        params["scorecard"] = _confine(cfg, body.scorecard, "scorecard")
        if body.chat_template:
            params["chat_template"] = _confine(cfg, body.chat_template, "chat_template")
        if body.engine == "url":
            if not body.base_url:
                raise HTTPException(400, "base_url: required for engine=url")
        else:
            for key in ("candidate", "baseline", "adapter", "baseline_adapter"):
                if params.get(key):
                    params[key] = _confine(cfg, params[key], key)
        return queue("score", params, who)

    return router


def _review_routes(cfg: ServiceConfig, require: Require, queue: Queue) -> APIRouter:
    """Data review handed to the job queue: the hard-case queue of a dataset, corrections applied to a copy."""
    Checker = Annotated[Principal, Depends(require(Perm.submit_check))]
    router = APIRouter()

    @router.post("/reviews", status_code=202, tags=["review"])
    def submit_review(body: ReviewRequest, who: Checker) -> dict[str, Any]:
        """Queue a `gate review`: the hard-case queue of a dataset under the roots (review.jsonl, review.html); a
        model is a directory under the roots unless served by URL, and runs inside the job's memory limit."""
        params = body.model_dump()
        for name in path_fields(CoreReviewRequest):
            if params[name] is not None:
                params[name] = _confine(cfg, params[name], name)
        if body.model and body.engine == "url":
            if not body.base_url:
                raise HTTPException(400, "base_url: required for engine=url")
        elif body.model:
            params["model"] = _confine(cfg, body.model, "model")
        return queue("review", params, who)

    @router.post("/corrections", status_code=202, tags=["review"])
    def submit_corrections(body: ApplyRequest, who: Checker) -> dict[str, Any]:
        """Queue a `gate apply`: reviewed corrections onto a copy of a dataset under the roots, written into the
        job's own directory (all or nothing) and recorded with their reasons."""
        params = body.model_dump()
        for name in path_fields(CoreApplyRequest):
            if params[name] is not None:
                params[name] = _confine(cfg, params[name], name)
        return queue("apply", params, who)

    return router


def _job_routes(cfg: ServiceConfig, require: Require) -> APIRouter:
    """The queue as a reader sees it: jobs, one job, the reports a job wrote."""
    Reader = Annotated[Principal, Depends(require(Perm.read))]
    router = APIRouter(tags=["jobs"])

    @router.get("/jobs")
    def jobs(_: Reader, status: Literal["queued", "running", "done", "failed"] | None = None,
             limit: Limit = 100) -> list[dict[str, Any]]:
        return list_jobs(cfg, status=status, limit=limit)

    @router.get("/jobs/{job_id}")
    def job(job_id: str, _: Reader) -> dict[str, Any]:
        got = get_job(cfg, job_id)
        if got is None:
            raise HTTPException(404, f"no job {job_id!r}")
        return got

    @router.get("/jobs/{job_id}/files/{name}")
    def job_file(job_id: str, name: str, _: Reader) -> FileResponse:
        """A report the job wrote (report.md, report.json, junit.xml, scores.md, scores.json); all are redacted."""
        got = get_job(cfg, job_id)
        if got is None or name not in REPORT_FILES or not (Path(got["report_dir"]) / name).is_file():
            raise HTTPException(404, f"no {name!r} for job {job_id!r}")
        return FileResponse(Path(got["report_dir"]) / name)

    return router


def _record_routes(cfg: ServiceConfig, require: Require) -> APIRouter:
    """Reads of the record (gate.store.service): check runs and their findings, score runs, decisions, releases."""
    Reader = Annotated[Principal, Depends(require(Perm.read))]
    router = APIRouter()

    @router.get("/checks/runs", tags=["checks"])
    def check_runs(_: Reader, limit: Limit = 100) -> list[dict[str, Any]]:
        return store.api_check_runs(cfg.db, limit)

    @router.get("/checks/runs/{run_id}/findings", tags=["checks"])
    def findings(run_id: str, _: Reader, limit: Annotated[int, Query(ge=1, le=100_000)] = 1000) -> dict[str, Any]:
        """Findings of one check run; snippets and messages are masked again on the way out."""
        from gate.pii.redact import mask_ident
        from gate.pii.redact import mask_loose as mask

        run = store.api_check_run(cfg.db, run_id)
        if run is None:
            raise HTTPException(404, f"no check run {run_id!r}")
        rows = store.api_findings(cfg.db, run_id, limit)
        for r in rows:
            r["message"] = mask(r["message"] or "")
            r["snippet"] = mask(r["snippet"] or "")
            for key in ("split", "field", "row_id", "partner_id", "cluster_id"):  # ids a pull request chose
                if isinstance(r.get(key), str):
                    r[key] = mask_ident(r[key])
        return {"run_id": run_id, "verdict": run["verdict"], "findings": rows}

    @router.get("/scores/runs", tags=["scores"])
    def score_runs(_: Reader, limit: Limit = 100) -> list[dict[str, Any]]:
        return store.api_score_runs(cfg.db, limit)

    @router.get("/decisions", tags=["releases"])
    def decisions(_: Reader, limit: Limit = 100) -> list[dict[str, Any]]:
        return store.api_decisions(cfg.db, limit)

    @router.get("/releases", tags=["releases"])
    def releases(_: Reader) -> dict[str, Any]:
        rel, hist = store.api_releases(cfg.db)
        return {"current": hist[-1]["release_id"] if hist else None, "releases": rel, "history": hist}

    return router


def _token_routes(cfg: ServiceConfig, require: Require) -> APIRouter:
    """Tokens over HTTP: while the service runs it holds the database file, so `gate token --url` comes here."""
    Admin = Annotated[Principal, Depends(require(Perm.manage_tokens))]
    router = APIRouter(tags=["tokens"])

    @router.get("/tokens")
    def tokens(_: Admin) -> list[dict[str, Any]]:
        """Names, roles and states; never a token or its digest."""
        return store.list_tokens(cfg.db)

    @router.post("/tokens", status_code=201)
    def new_token(body: TokenRequest, who: Admin, response: Response) -> dict[str, str]:
        """Create a token; this response is the only time it is shown (only its salted digest is stored)."""
        if any(t["name"] == body.name for t in store.list_tokens(cfg.db)):
            raise HTTPException(409, f"a token named {body.name!r} already exists (revoke it first or pick another "
                                     "name)")
        try:
            token = create_token(cfg.db, body.name, body.role.value)
        except GateError as exc:  # the same name created by a concurrent request since the look above
            if "already exists" not in str(exc):
                raise
            raise HTTPException(409, str(exc)) from None
        response.headers["Cache-Control"] = "no-store"
        log.info("token %r (%s) created by %s", body.name, body.role.value, who.name)
        return {"name": body.name, "role": body.role.value, "token": token}

    @router.delete("/tokens/{name}")
    def revoke(name: str, who: Admin) -> dict[str, Any]:
        """Revoke a token at once: its next request gets 401. Revoking a revoked token is not an error."""
        if not store.revoke_token(cfg.db, name):
            raise HTTPException(404, f"no token named {name!r}")
        log.info("token %r revoked by %s", name, who.name)
        return {"name": name, "revoked": True}

    return router


def _mount_dashboard(app: FastAPI) -> None:
    """The dashboard's pages under /dashboard, when that part of gate is installed."""
    if importlib.util.find_spec("gate.dashboard") is not None \
            and importlib.util.find_spec("gate.dashboard.routes") is not None:
        from gate.dashboard.routes import router

        app.include_router(router, prefix=DASHBOARD_PREFIX)
