"""What a running service may touch and how much it accepts, in one place the operator sets.

Why explicit roots and limits: a service takes paths and uploads from other people; without a fixed list of
directories it may read and a fixed ceiling on what it accepts, one request could read any file on the host or fill
its disk.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gate.errors import GateError

MIB = 1024 * 1024


@dataclass
class ServiceConfig:
    roots: list[Path]
    db: str = "gate.duckdb"
    state_dir: Path = field(default_factory=lambda: Path("gate-service"))
    max_body_bytes: int = 1 * MIB
    max_upload_bytes: int = 64 * MIB
    check_workers: int = 1  # processes per check job: the service shares its machine with the API
    max_attempts: int = 2  # a job interrupted by a restart is run again until this many attempts, then failed
    run_jobs: bool = True  # False: accept and queue jobs but do not run them (read-only replicas, API tests)
    # a check job runs in a worker process: the memory it may add to the worker's own (RLIMIT_AS) and the CPU
    # seconds it may use (RLIMIT_CPU); over either, the job fails with one line and the next one runs
    job_memory_bytes: int = 8 * 1024 * MIB
    job_cpu_seconds: int = 3600

    def __post_init__(self) -> None:
        if not self.roots:
            raise GateError("the service needs at least one dataset root (--root DIR)")
        resolved = []
        for r in self.roots:
            p = Path(r).expanduser()
            if not p.is_dir():
                raise GateError("root is not a directory", file=str(p))
            resolved.append(p.resolve())
        self.roots = resolved
        self.state_dir = Path(self.state_dir).resolve()
        if min(self.max_body_bytes, self.max_upload_bytes, self.job_memory_bytes, self.job_cpu_seconds) <= 0:
            raise GateError("size and job limits must be positive")

    @property
    def jobs_dir(self) -> Path:
        return self.state_dir / "jobs"

    @property
    def uploads_dir(self) -> Path:
        return self.state_dir / "uploads"


def load_config(path: str | Path, **overrides: Any) -> ServiceConfig:
    """Reads a service YAML (roots, db, state_dir, limits); command-line values that are not None win."""
    import yaml

    p = Path(path)
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
    except OSError as exc:
        raise GateError(f"cannot read the service config ({exc.strerror})", file=str(p)) from None
    except yaml.YAMLError as exc:
        line = getattr(getattr(exc, "problem_mark", None), "line", None)
        raise GateError("not valid YAML", file=str(p), line=line + 1 if line is not None else None) from None
    if not isinstance(data, dict):
        raise GateError("expected a mapping of settings", file=str(p))
    known = {f for f in ServiceConfig.__dataclass_fields__}
    unknown = sorted(set(data) - known)
    if unknown:
        raise GateError(f"unknown setting(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})",
                        file=str(p), field=unknown[0])
    base = p.parent
    if "roots" in data:
        if not isinstance(data["roots"], list):
            raise GateError("expected a list of directories", file=str(p), field="roots")
        data["roots"] = [base / str(r) for r in data["roots"]]
    for key in ("state_dir", "db"):  # relative to the file, like the roots
        if key in data:
            data[key] = base / str(data[key]) if key == "state_dir" else str(base / str(data[key]))
    data.update({k: v for k, v in overrides.items() if v is not None})
    for key in ("max_body_bytes", "max_upload_bytes", "check_workers", "max_attempts", "job_memory_bytes",
                "job_cpu_seconds"):
        if key in data and not isinstance(data[key], int):
            raise GateError("expected an integer", file=str(p), field=key)
    return ServiceConfig(**data)
