"""Issue 28 item 4: one request object per use case (gate.requests.CheckRequest). With GATE_URL set, every
`gate check` option reaches the service or is refused in one line with exit 2, never dropped; the CLI, the service's
body model, the client and the job all read the one definition, and a test walks every field through all of them."""

from __future__ import annotations

import pytest

from gate.errors import GateError
from tests.conftest import CONTRACTS, gate_inprocess, triage_row, write_jsonl


@pytest.fixture
def sent(monkeypatch):
    """What the client would submit (the service is not contacted: the capture stops the command)."""
    from gate.service.remote import ServiceClient

    got: list[dict] = []

    def submit(self, route, payload):
        assert route == "/checks"
        got.append(payload)
        raise GateError("captured")

    monkeypatch.setattr(ServiceClient, "submit", submit)
    monkeypatch.setenv("GATE_URL", "http://127.0.0.1:9")
    return got


@pytest.mark.parametrize("option", [("--base", "HEAD"), ("--workers", "3"), ("--no-db",), ("--engine", "ray"),
                                    ("--db", "x.duckdb"), ("--index", "idx"), ("--allow-contract-change",),
                                    ("--limit", "max_line_bytes=1024")])
def test_an_option_the_service_cannot_honour_is_refused_in_one_line(tmp_path, sent, option):
    write_jsonl(tmp_path / "ds" / "train.jsonl", [triage_row(1)])
    code, out = gate_inprocess("check", str(tmp_path / "ds"), "-c", str(CONTRACTS / "triage.yaml"), "-o",
                               str(tmp_path / "o"), *option)
    assert code == 2 and sent == [], out
    assert len(out.strip().splitlines()) == 1 and option[0] in out and "GATE_URL" in out, out


def test_every_field_of_the_service_request_is_sent(tmp_path, sent):
    from gate.service.app import CheckRequest

    write_jsonl(tmp_path / "ds" / "train.jsonl", [triage_row(1)])
    code, out = gate_inprocess("check", str(tmp_path / "ds"), "-c", str(CONTRACTS / "triage.yaml"), "-o",
                               str(tmp_path / "o"), "--max-examples", "0", "--checks", "contract",
                               "--fail-on", "warning")
    assert code == 1 and "captured" in out, out
    (payload,) = sent
    assert set(payload) == set(CheckRequest.model_fields)
    assert payload["max_examples"] == 0 and payload["checks"] == ["contract"] and payload["fail_on"] == "warning"
    CheckRequest(**payload)  # the service accepts what the client sends


def test_snippets_and_tokenizer_are_sent_not_dropped(tmp_path, sent):
    """`--snippets none --tokenizer T` sent {dataset, contract, checks, fail_on} and passed: both are carried now."""
    write_jsonl(tmp_path / "ds" / "train.jsonl", [triage_row(1)])
    code, out = gate_inprocess("check", str(tmp_path / "ds"), "-c", str(CONTRACTS / "triage.yaml"), "-o",
                               str(tmp_path / "o"), "--snippets", "none", "--tokenizer", str(tmp_path / "tok"))
    assert code == 1 and "captured" in out, out
    (payload,) = sent
    assert payload["snippets"] == "none" and payload["tokenizer"] == str((tmp_path / "tok").absolute())


def test_every_field_walks_through_cli_service_client_and_job():
    """Each field of the one request: the CLI has its option; a `remote` field is in the service's body model with
    the same default and is sent; a `local` field at a non-default value is refused by name; nothing else exists."""
    import dataclasses

    import typer.main

    from gate.cli import app
    from gate.requests import CheckRequest, fields_where, flag_of, remote_body, unsent
    from gate.service.app import CheckRequest as Body

    command = typer.main.get_command(app).commands["check"]
    cli_flags = {opt for p in command.params for opt in (*p.opts, *p.secondary_opts)}
    cli_names = {p.name for p in command.params}
    base = CheckRequest(dataset="d", contract="c")
    for f in dataclasses.fields(CheckRequest):
        where = f.metadata["where"]
        assert where in ("remote", "client", "local"), f.name
        assert f.name in cli_names or flag_of(CheckRequest, f.name) in cli_flags or f.name in ("dataset",), f.name
        if where == "remote":
            assert f.name in Body.model_fields and f.name in remote_body(base), f.name
            if f.default is not dataclasses.MISSING:
                assert Body.model_fields[f.name].default == f.default, f.name
        else:
            assert f.name not in Body.model_fields and f.name not in remote_body(base), f.name
        if where == "local":
            other = {bool: not f.default, str: "x", int: 3}.get(type(f.default), "x")
            assert unsent(dataclasses.replace(base, **{f.name: other})) == [flag_of(CheckRequest, f.name)], f.name
    assert set(Body.model_fields) == set(fields_where(CheckRequest, "remote"))


def test_every_command_with_a_request_has_one_option_per_field_and_no_other():
    """Each use case's request (gate.requests.REQUESTS) is the whole list of its options: the CLI offers every
    field, and no option that is not a field (`gate check --limit` was a CLI-only option, so a run with GATE_URL
    set dropped it without a word: the service checked under its own ceilings). The CLI's choice lists are the
    requests' own (ExportFormat and TrainRunner were copies of the core's lists)."""
    import dataclasses

    import typer.main

    from gate import cli
    from gate.export.formats import FORMATS
    from gate.requests import REQUESTS, flag_of
    from gate.train.runners import RUNNERS

    group = typer.main.get_command(cli.app)
    assert {"check", "score", "split", "scrub", "apply", "decide"} <= set(REQUESTS)
    for name, cls in REQUESTS.items():
        params = group.commands[name].params
        fields = [f.name for f in dataclasses.fields(cls)]
        for f in fields:
            assert any(p.name == f or flag_of(cls, f) in p.opts for p in params), f"{name}: {f} has no option"
        for p in params:
            assert p.name in fields or any(flag_of(cls, f) in p.opts for f in fields), f"{name}: {p.name} not a field"
    assert tuple(e.value for e in cli.ExportFormat) == FORMATS and tuple(e.value for e in cli.TrainRunner) == RUNNERS


def test_the_service_job_honours_snippets_none(tmp_path):
    """Through the real route (confined paths, body model) into the job function the service's worker runs."""
    from fastapi.testclient import TestClient

    from gate.service.app import create_app
    from gate.service.auth import create_token
    from gate.service.config import ServiceConfig
    from gate.service.worker import CheckWorker
    from gate.store.service import get_job

    root = tmp_path / "root"
    rows = [triage_row(i, f"ticket {i}: call me at 415-555-01{i:02d} about the broken widget") for i in range(6)]
    write_jsonl(root / "ds" / "train.jsonl", rows)
    (root / "triage.yaml").write_text((CONTRACTS / "triage.yaml").read_text())
    cfg = ServiceConfig(roots=[root], db=str(tmp_path / "g.duckdb"), state_dir=tmp_path / "state", run_jobs=False)
    token = create_token(cfg.db, "t-ci", "ci")
    with TestClient(create_app(cfg)) as client:
        resp = client.post("/checks", headers={"Authorization": f"Bearer {token}"},
                           json={"dataset": "ds", "contract": "triage.yaml", "snippets": "none", "checks": ["pii"]})
        assert resp.status_code == 202, resp.text
        params = get_job(cfg.db, resp.json()["job_id"])["params"]
    assert params["snippets"] == "none" and params["dataset"] == str((root / "ds").resolve())
    worker = CheckWorker(cfg.job_memory_bytes, cfg.job_cpu_seconds)  # the job's own spawned process, its limits
    try:
        for mode in ("none", "masked"):
            kind, code, run = worker.run({**params, "snippets": mode}, str(tmp_path / f"r-{mode}"), [root], 1)
            assert kind == "ok", code
            findings = [f for r in run.results for f in r.findings]
            assert findings and all(bool(f.snippet) == (mode == "masked") for f in findings), mode
    finally:
        worker.close()


def test_every_score_field_walks_through_cli_and_service():
    """`gate score` has one request too (gate.requests.ScoreRequest): the CLI has every field's option, the service's
    POST /scores body is its `remote` fields with the same defaults and bounds, and nothing else; `--concurrency`
    and `--strict` were CLI-only before (the service refused them as unknown fields)."""
    import dataclasses

    import typer.main

    from gate.cli import app
    from gate.requests import ScoreRequest, fields_where, flag_of
    from gate.service.app import ScoreRequest as Body

    command = typer.main.get_command(app).commands["score"]
    cli_flags = {opt for p in command.params for opt in (*p.opts, *p.secondary_opts)}
    cli_names = {p.name for p in command.params}
    for f in dataclasses.fields(ScoreRequest):
        assert f.name in cli_names or flag_of(ScoreRequest, f.name) in cli_flags, f.name
        if f.metadata["where"] == "remote":
            assert f.name in Body.model_fields, f.name
            if f.default is not dataclasses.MISSING:
                assert Body.model_fields[f.name].default == f.default, f.name
        else:
            assert f.name not in Body.model_fields, f.name
    assert set(Body.model_fields) == set(fields_where(ScoreRequest, "remote"))
    assert {"concurrency", "strict"} <= set(Body.model_fields)
    with pytest.raises(ValueError):
        Body(candidate="m", scorecard="s", engine="llamacpp")
    with pytest.raises(ValueError):
        Body(candidate="m", scorecard="s", concurrency=0)


def test_the_service_score_job_honours_concurrency(tmp_path):
    """Through the real route into the real job: `concurrency: 1` reaches the url engine (the server never sees
    two requests at once), where the job used to build its engine with the default 8."""
    import shutil
    import time

    from fastapi.testclient import TestClient

    from gate.service.app import create_app
    from gate.service.auth import create_token
    from gate.service.config import ServiceConfig
    from gate.testing.fake_openai import FakeOpenAI
    from tests.conftest import ROOT

    root = tmp_path / "root"
    shutil.copytree(ROOT / "scorecards", root / "scorecards")
    shutil.copytree(ROOT / "contracts", root / "contracts")
    cfg = ServiceConfig(roots=[root], db=str(tmp_path / "g.duckdb"), state_dir=tmp_path / "state")
    ev, viewer = create_token(cfg.db, "ev", "evaluator"), create_token(cfg.db, "v", "viewer")
    srv = FakeOpenAI(delay_s=0.05).start()
    try:
        with TestClient(create_app(cfg)) as c:
            res = c.post("/scores", headers={"Authorization": f"Bearer {ev}"}, json={
                "candidate": "tiny", "scorecard": "scorecards/triage.yaml", "engine": "url", "base_url": srv.url,
                "limit": 6, "model_hash": "sha256:1", "concurrency": 1})
            assert res.status_code == 202, res.text
            deadline = time.monotonic() + 180
            while (got := c.get(f"/jobs/{res.json()['job_id']}",
                                headers={"Authorization": f"Bearer {viewer}"}).json())["status"] not in ("done",
                                                                                                        "failed"):
                assert time.monotonic() < deadline, got
                time.sleep(0.2)
        assert got["status"] == "done", got
        assert srv.calls == 6 and srv.max_inflight == 1, (srv.calls, srv.max_inflight)
    finally:
        srv.kill()
