"""Promote and roll back over HTTP: the caller's role is checked here, the move itself is the release module's.

Why as jobs: moving "current" is a write like a check or a score run, and long or short, writes go through the
job queue; the API answers 202 with a job whose result says promoted / already-current / refused (with the
reasons) or rolled back (from, to). Mounted only when the release module is installed.
"""

# No `from __future__ import annotations`: FastAPI reads these route signatures, which use a local alias.

import importlib.util
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import Depends, FastAPI
from pydantic import BaseModel, ConfigDict, Field

from gate.errors import ExitCode
from gate.service.auth import Perm, Principal
from gate.service.config import ServiceConfig


class RollbackRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    reason: str = Field(min_length=1, max_length=2000, description="Recorded with the move.")
    release_id: str | None = Field(None, description="Target [default: the release promoted before the current].")


def available() -> bool:
    return importlib.util.find_spec("gate.release") is not None \
        and importlib.util.find_spec("gate.release.promote") is not None


def mount(app: FastAPI, require: Callable[[Perm], Callable[..., Principal]],
          queue: Callable[..., dict[str, Any]]) -> None:
    if not available():
        return
    manager = Depends(require(Perm.release))

    def promote_release(release_id: str, who: Annotated[Principal, manager]) -> dict[str, Any]:
        """Queue a promote of a recorded release (refused unless its decision is PROMOTE over clean data)."""
        return queue("promote", {"release_id": release_id}, who)

    def rollback_release(body: RollbackRequest, who: Annotated[Principal, manager]) -> dict[str, Any]:
        """Queue a rollback of "current" to the previous (or the named) promoted release."""
        return queue("rollback", body.model_dump(), who)

    app.add_api_route("/releases/{release_id}/promote", promote_release, methods=["POST"], status_code=202,
                      tags=["releases"])
    app.add_api_route("/releases/rollback", rollback_release, methods=["POST"], status_code=202, tags=["releases"])


def execute_release_job(cfg: ServiceConfig, job: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """Runs in the writer process with the release module's own functions; the job's submitter is `by`."""
    from gate.release.promote import promote, rollback

    p, by = job["params"], f"{job['submitted_by']} (gate serve)"
    if job["kind"] == "promote":
        status, reasons = promote(p["release_id"], by=by, db=cfg.db)
        code = ExitCode.GATE_FAILED if status == "refused" else ExitCode.PASS
        return int(code), {"outcome": status, "release_id": p["release_id"], "reasons": reasons}
    old, new = rollback(p.get("release_id"), reason=p["reason"], by=by, db=cfg.db)
    return int(ExitCode.PASS), {"outcome": "rolled-back", "from": old, "to": new}
