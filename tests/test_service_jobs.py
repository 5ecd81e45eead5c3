"""The service's record on its own: the job queue's restart rules, tokens (hashed, revocable, one name each) and
the service configuration file's errors."""

import hashlib
import importlib.util

import duckdb
import pytest

from gate.errors import GateError
from gate.service.auth import Role, create_token, verify_token
from gate.service.config import load_config
from gate.service.paths import PathRefused, confine
from gate.store import service as store


def test_interrupted_jobs_are_requeued_then_failed_with_the_reason(tmp_path):
    db = str(tmp_path / "g.duckdb")
    store.insert_job(db, "job-a", "check", {"dataset": "d"}, "ci", str(tmp_path / "a"))
    store.insert_job(db, "job-b", "check", {"dataset": "d"}, "ci", str(tmp_path / "b"))
    first = store.claim_next_job(db)
    assert first["job_id"] == "job-a" and first["status"] == "running" and first["attempts"] == 1
    # the service dies here; at the next start attempt 1 of 2 is requeued
    assert store.recover_interrupted(db, max_attempts=2) == [("job-a", "queued")]
    again = store.claim_next_job(db)
    assert again["job_id"] == "job-a" and again["attempts"] == 2
    assert again["error"] == "interrupted by a service restart during attempt 1; requeued"
    # it dies again: no attempts left, so the job fails and says why
    assert store.recover_interrupted(db, max_attempts=2) == [("job-a", "failed")]
    job = store.get_job(db, "job-a")
    assert job["status"] == "failed" and job["finished_at"]
    assert job["error"] == "interrupted by a service restart during attempt 2 of 2; not retried"
    # the other job was never touched, and the queue hands it out next
    assert store.get_job(db, "job-b")["status"] == "queued"
    assert store.claim_next_job(db)["job_id"] == "job-b"
    assert store.claim_next_job(db) is None
    assert {j["job_id"] for j in store.list_jobs(db)} == {"job-a", "job-b"}


def test_tokens_are_stored_hashed_checked_and_revoked(tmp_path):
    db = str(tmp_path / "g.duckdb")
    token = create_token(db, "release-bot", "release-manager")
    who = verify_token(db, token)
    assert who is not None and who.name == "release-bot" and who.role is Role.release_manager
    secret = token.split("_", 2)[2]
    con = duckdb.connect(db, read_only=True)
    stored = con.execute("SELECT * FROM tokens").fetchall()
    con.close()
    assert secret not in repr(stored) and token not in repr(stored)
    assert hashlib.sha256(secret.encode()).hexdigest() not in repr(stored)  # salted
    assert verify_token(db, token[:-1] + ("A" if token[-1] != "A" else "B")) is None
    assert verify_token(db, "gate_" + "0" * 16 + "_" + secret) is None
    with pytest.raises(GateError, match="already exists"):
        create_token(db, "release-bot", "viewer")
    with pytest.raises(GateError, match="unknown role 'root'"):
        create_token(db, "x", "root")
    with pytest.raises(GateError, match="token name"):
        create_token(db, "../x", "viewer")
    assert store.revoke_token(db, "release-bot") and verify_token(db, token) is None
    assert not store.revoke_token(db, "nobody")
    assert [(t["name"], t["revoked_at"] is not None) for t in store.list_tokens(db)] == [("release-bot", True)]


def test_token_cli_create_list_revoke(tmp_path):
    from tests.conftest import run_gate

    db = str(tmp_path / "g.duckdb")
    res = run_gate("token", "create", "--role", "evaluator", "--name", "eval-bot", "--db", db)
    assert res.returncode == 0 and res.stdout.startswith("gate_")
    res = run_gate("token", "create", "--role", "root", "--name", "x", "--db", db)
    assert res.returncode == 2
    res = run_gate("token", "revoke", "eval-bot", "--db", db)
    assert res.returncode == 0
    res = run_gate("token", "revoke", "ghost", "--db", db)
    assert res.returncode == 1 and res.stderr.strip() == "gate: error: no token named 'ghost'"
    res = run_gate("token", "list", "--db", db)
    assert "eval-bot\tevaluator" in res.stdout and "revoked" in res.stdout
    assert "gate_" not in res.stdout  # never the token itself


def test_confine_follows_symlinks_inside_and_refuses_them_outside(tmp_path):
    root, other = tmp_path / "root", tmp_path / "other"
    (root / "a").mkdir(parents=True)
    other.mkdir()
    (root / "a" / "x.jsonl").write_text("{}\n")
    (other / "y.jsonl").write_text("{}\n")
    (root / "inner-link").symlink_to(root / "a")
    (root / "dir-escape").symlink_to(other)
    roots = [root.resolve()]
    assert confine("inner-link/x.jsonl", roots) == (root / "a" / "x.jsonl").resolve()
    assert confine(str(root / "a"), roots) == (root / "a").resolve()
    with pytest.raises(PathRefused, match="symlink"):
        confine("dir-escape/y.jsonl", roots)
    with pytest.raises(PathRefused, match="outside"):
        confine(str(other / "y.jsonl"), roots)
    with pytest.raises(PathRefused, match="'..'"):
        confine("a/../../other/y.jsonl", roots)
    with pytest.raises(PathRefused):
        confine("a/x.jsonl\x00.txt", roots)


def test_service_config_file_errors_name_the_file_and_field(tmp_path):
    (tmp_path / "data").mkdir()
    good = tmp_path / "svc.yaml"
    good.write_text("roots: [data]\ndb: g.duckdb\nmax_upload_bytes: 1000\n")
    cfg = load_config(good)
    assert cfg.roots == [(tmp_path / "data").resolve()] and cfg.max_upload_bytes == 1000
    bad = tmp_path / "bad.yaml"
    bad.write_text("roots: [data]\nmax_uplod_bytes: 5\n")
    with pytest.raises(GateError) as err:
        load_config(bad)
    assert str(err.value).startswith(f"{bad}: max_uplod_bytes: unknown setting")
    bad.write_text("roots: [missing]\n")
    with pytest.raises(GateError, match="root is not a directory"):
        load_config(bad)
    bad.write_text("roots: [data\n")
    with pytest.raises(GateError, match="not valid YAML"):
        load_config(bad)


def test_single_writer_mode_lasts_only_while_the_app_runs(tmp_path):
    """Inside the service, read-only requests (the release module's, the dashboard's) open on the service's one
    database instead of clashing with it; outside it, read-only means read-only again."""
    from fastapi.testclient import TestClient

    from gate.service.app import create_app
    from gate.service.config import ServiceConfig
    from gate.store.db import connect, is_held

    db = str(tmp_path / "g.duckdb")
    cfg = ServiceConfig(roots=[tmp_path], db=db, state_dir=tmp_path / "state", run_jobs=False)
    assert not is_held(db)
    with TestClient(create_app(cfg)):
        assert is_held(db) and is_held(str(tmp_path / "." / "g.duckdb"))  # the same file by another spelling
        with connect(db) as con:
            con.execute("CREATE TABLE t (x INTEGER)").fetchall()
            con.execute("INSERT INTO t VALUES (7)").fetchall()
        with connect(db, read_only=True) as con:  # plain DuckDB would refuse: "different configuration"
            assert con.execute("SELECT x FROM t").fetchall() == [(7,)]
        if importlib.util.find_spec("gate.dashboard.queries"):
            from gate.dashboard.queries import read_only

            with read_only(db) as con:
                assert con.execute("SELECT x FROM t").fetchall() == [(7,)]
        assert store.list_jobs(db) == []  # the service's tables were made when it took the file
    assert not is_held(db)
    with connect(db, read_only=True) as con:
        assert con.execute("SELECT x FROM t").fetchall() == [(7,)]
        with pytest.raises(duckdb.Error, match="read-only"):
            con.execute("CREATE TABLE u (x INTEGER)").fetchall()


def test_serve_options_override_the_config_file(tmp_path):
    from gate.commands.serve import build_config

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    cfg_file = tmp_path / "svc.yaml"
    cfg_file.write_text("roots: [a]\ndb: from-file.duckdb\nmax_body_bytes: 2048\n")
    cfg = build_config(config=str(cfg_file), roots=[str(tmp_path / "b")], db=None, state_dir=None, max_body_mb=None,
                       max_upload_mb=2, check_workers=None)
    assert cfg.roots == [(tmp_path / "b").resolve()]  # the command line wins
    assert cfg.db == str(tmp_path / "from-file.duckdb")  # relative to the config file
    assert cfg.max_body_bytes == 2048 and cfg.max_upload_bytes == 2 * 1024 * 1024
    with pytest.raises(GateError, match="at least one dataset root"):
        build_config(config=None, roots=[], db=None, state_dir=None, max_body_mb=None, max_upload_mb=None,
                     check_workers=None)


def test_uploads_whose_job_was_never_queued_are_swept_at_start(tmp_path):
    """The service died between saving an upload and queueing its job: nobody holds that job id, so the file goes."""
    from fastapi.testclient import TestClient

    from gate.service.app import create_app
    from gate.service.config import ServiceConfig

    cfg = ServiceConfig(roots=[tmp_path], db=str(tmp_path / "g.duckdb"), state_dir=tmp_path / "state",
                        run_jobs=False)
    for job_id in ("job-kept", "job-orphan"):
        (cfg.uploads_dir / job_id).mkdir(parents=True)
        (cfg.uploads_dir / job_id / "up.jsonl").write_text('{"id": 1}\n')
    store.insert_job(cfg.db, "job-kept", "check", {"dataset": str(cfg.uploads_dir / "job-kept" / "up.jsonl")}, "ci",
                     str(tmp_path / "r"))
    with TestClient(create_app(cfg)):
        assert sorted(p.name for p in cfg.uploads_dir.iterdir()) == ["job-kept"]
    assert (cfg.uploads_dir / "job-kept" / "up.jsonl").read_text() == '{"id": 1}\n'
