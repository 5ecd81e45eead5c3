"""`gate serve`: build the configuration, then hand the app to uvicorn."""

from __future__ import annotations

from pathlib import Path

from gate.service.config import MIB, ServiceConfig, load_config

KEEP_ALIVE_S = 20


def build_config(*, config: str | None, roots: list[str], db: str | None, state_dir: str | None,
                 max_body_mb: float | None, max_upload_mb: float | None, check_workers: int | None) -> ServiceConfig:
    overrides = {"db": db, "state_dir": Path(state_dir) if state_dir else None,
                 "max_body_bytes": int(max_body_mb * MIB) if max_body_mb else None,
                 "max_upload_bytes": int(max_upload_mb * MIB) if max_upload_mb else None,
                 "check_workers": check_workers, "roots": [Path(r) for r in roots] or None}
    if config:
        return load_config(config, **overrides)
    from gate.store.db import db_path

    overrides["db"] = db_path(db)
    overrides["roots"] = overrides["roots"] or []  # none at all: ServiceConfig says so in one line
    return ServiceConfig(**{k: v for k, v in overrides.items() if v is not None})  # type: ignore[arg-type]


def run_serve_command(*, host: str, port: int, **kw: object) -> int:
    import uvicorn

    from gate.service.app import create_app

    cfg = build_config(**kw)  # type: ignore[arg-type]
    print(f"gate serve: http://{host}:{port} · roots {', '.join(map(str, cfg.roots))} · db {cfg.db} · "
          f"OpenAPI at /openapi.json", flush=True)
    # keep-alive well past the clients' own idle expiry (httpx: 5 s): with uvicorn's default of 5 s, a busy server
    # closes a connection just as a client reuses it, and that request fails with a read error instead of an answer
    uvicorn.run(create_app(cfg), host=host, port=port, log_level="info", access_log=False,
                timeout_keep_alive=KEEP_ALIVE_S)
    return 0
