"""Release record, promote, rollback and watch end to end through the `gate` CLI, on a real record: real
`gate check` runs behind the data, decisions from `gate decide` on score tables in DuckDB."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.conftest import CONTRACTS, FIXTURES, ROOT, gate_inprocess, write_jsonl
from tests.test_decide_gates import GATES, make_scorecard, pair, record_run

pytestmark = pytest.mark.usefixtures("run_gate_env")


def _sql(db: Path, sql: str) -> list[tuple[Any, ...]]:
    import duckdb

    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(sql).fetchall()


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def record(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CI", "true")
        mp.delenv("GITHUB_ACTIONS", raising=False)
        return _record(tmp_path_factory.mktemp("release"))


def _record(tmp: Path) -> dict[str, Any]:
    db = tmp / "g.duckdb"
    checks = {}
    for name, code in (("triage-clean", 0), ("triage-faulty", 100)):
        r = gate_inprocess("check", str(FIXTURES / name), "-c", str(CONTRACTS / "triage.yaml"), "--checks",
                           "exact_duplicate,group_split", "--db", str(db), "-o", str(tmp / name), "-q", "-j", "1",
                           split=True)
        assert r.returncode == code, r.stdout + r.stderr
        checks[name] = _sql(db, f"SELECT run_id FROM runs WHERE dataset LIKE '%{name}' ORDER BY started_at DESC")[0][0]
    triggers = [{"name": "error-rate", "metric": "error", "aggregate": "mean", "above": 0.02, "min_samples": 10},
                {"name": "p95-latency", "metric": "latency_ms", "aggregate": "p95", "above": 800}]
    card = make_scorecard(tmp, gates=GATES, triggers=triggers)
    rng = np.random.default_rng(3)
    decisions = {}
    for label, lift in (("good", 0.15), ("flat", 0.0)):
        tb, tc = pair(rng, 0.5, lift)
        fb, fc = pair(rng, 0.95, 0.0)
        record_run(db, card, "baseline", {("task", "strict"): tb, ("fmt", "schema_valid"): fb}, comparison=label)
        record_run(db, card, "candidate", {("task", "strict"): tc, ("fmt", "schema_valid"): fc}, comparison=label)
        r = gate_inprocess("decide", "-s", str(card), "--db", str(db), "--comparison", label, "-o", str(tmp / label),
                           "-q", split=True)
        assert r.returncode == (0 if label == "good" else 100), r.stdout + r.stderr
        decisions[label] = json.loads((tmp / label / "decision.json").read_text())["decision_id"]
    return {"tmp": tmp, "db": db, "card": card, "checks": checks, "decisions": decisions}


def _gate(rec: dict[str, Any], *args: str) -> Any:
    return gate_inprocess(*args, "--db", str(rec["db"]), split=True)


def test_release_record_pins_everything(record: dict[str, Any]) -> None:
    tok = record["tmp"] / "tokenizer"
    tok.mkdir()
    (tok / "tokenizer.json").write_text('{"model": {"type": "BPE"}}')
    (tok / "chat_template.jinja").write_text("{{ messages }}")
    r = _gate(record, "release", "create", "--decision", record["decisions"]["good"], "--id", "rel-a",
              "--data-check", record["checks"]["triage-clean"], "--scorecard", str(record["card"]),
              "--training-run", "train-42", "--by", "alice", "--base-revision", "rev-1", "--tokenizer", str(tok))
    assert r.returncode == 0, r.stdout + r.stderr
    rel = json.loads(_gate(record, "release", "show", "rel-a").stdout)
    assert rel["verdict"] == "PROMOTE" and rel["created_by"] == "alice" and rel["training_run"] == "train-42"
    assert rel["base_model"] == "models/baseline" and rel["base_revision"] == "rev-1"
    assert rel["engine"] == "embedded" and rel["engine_version"] == "1.0" and rel["engine_flags"] == ["--dtype=bf16"]
    assert rel["adapter_sha256"] == "h-candidate" and rel["chat_template_sha256"] == "t" * 64  # as served
    assert len(rel["tokenizer_sha256"]) == 64
    (tok / "tokenizer.json").write_text('{"model": {"type": "Unigram"}}')
    r = _gate(record, "release", "create", "--decision", record["decisions"]["good"], "--id", "rel-tok2",
              "--tokenizer", str(tok))
    assert r.returncode == 0, r.stderr
    assert json.loads(_gate(record, "release", "show", "rel-tok2").stdout)["tokenizer_sha256"] not in (
        None, rel["tokenizer_sha256"])
    assert rel["system_prompt_sha256"] is None and rel["tool_schema_sha256"] is None  # the toy card has neither
    assert rel["scorecard"] == "toy" and rel["suite_hashes"]["s"]
    assert rel["scores"]["s"]["task"]["strict"]["delta"] == pytest.approx(0.15)
    assert rel["data_checks"][0]["verdict"] == "pass" and rel["dataset_fingerprints"] == [
        rel["data_checks"][0]["fingerprint"]]
    assert rel["current"] is False
    # unknown data check: one line, nothing recorded
    r = _gate(record, "release", "create", "--decision", record["decisions"]["good"], "--id", "rel-x",
              "--data-check", "no-such-run")
    assert r.returncode == 1 and "no-such-run" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert _sql(record["db"], "SELECT count(*) FROM releases WHERE release_id = 'rel-x'")[0][0] == 0


def test_release_stores_resolved_paths_and_hashes_not_relative_ones(record: dict[str, Any],
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 18 item 20: `--base-model ../models/tiny-llama` typed in a work directory is stored as the absolute
    path it named, with the content hash of those weights; a hub id stays a hub id."""
    from gate.engines.engine import hash_path

    model = record["tmp"] / "models" / "tiny-llama"
    model.mkdir(parents=True)
    (model / "config.json").write_text('{"model_type": "llama"}')
    work = record["tmp"] / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    r = gate_inprocess("release", "create", "--decision", record["decisions"]["good"], "--id", "rel-paths",
                       "--base-model", "../models/tiny-llama", "--db", str(record["db"]), split=True)
    assert r.returncode == 0, r.stdout + r.stderr
    rel = json.loads(_gate(record, "release", "show", "rel-paths").stdout)
    assert rel["base_model"] == str(model.resolve())
    assert rel["base_revision"] == hash_path(model) and len(rel["base_revision"]) == 64
    r = gate_inprocess("release", "create", "--decision", record["decisions"]["good"], "--id", "rel-hub",
                       "--base-model", "HuggingFaceTB/SmolLM2-135M-Instruct", "--db", str(record["db"]), split=True)
    assert r.returncode == 0, r.stdout + r.stderr
    rel = json.loads(_gate(record, "release", "show", "rel-hub").stdout)
    assert rel["base_model"] == "HuggingFaceTB/SmolLM2-135M-Instruct" and rel["base_revision"] == "h-baseline"
    # the score run's own relative model path (as `gate score models/baseline` stored it), from where it was typed
    here = record["tmp"] / "scored-here"
    (here / "models" / "baseline").mkdir(parents=True)
    monkeypatch.chdir(here)
    r = gate_inprocess("release", "create", "--decision", record["decisions"]["good"], "--id", "rel-scored",
                       "--db", str(record["db"]), split=True)
    assert r.returncode == 0, r.stdout + r.stderr
    rel = json.loads(_gate(record, "release", "show", "rel-scored").stdout)
    assert rel["base_model"] == str((here / "models" / "baseline").resolve()) and rel["base_revision"] == "h-baseline"


def test_release_create_on_a_record_without_score_runs_is_a_one_line_error(record: dict[str, Any],
                                                                            tmp_path: Path) -> None:
    """A record holding the decision but not its score runs (a copied or pruned file) once gave DuckDB's catalog
    error as an internal error; now one line naming the missing run, exit 1, and no release written."""
    import shutil

    import duckdb

    db = tmp_path / "no-scores.duckdb"
    shutil.copy(record["db"], db)
    with duckdb.connect(str(db)) as con:
        con.execute("DROP TABLE score_runs")
    r = gate_inprocess("release", "create", "--decision", record["decisions"]["good"], "--id", "rel-x", "--db",
                       str(db), split=True)
    assert r.returncode == 1, r.stdout + r.stderr
    err = r.stderr.strip()
    assert len(err.splitlines()) == 1 and "internal error" not in err and "Traceback" not in err, err
    assert "score run" in err and "not in the record" in err, err
    assert _sql(db, "SELECT count(*) FROM releases WHERE release_id = 'rel-x'")[0][0] == 0


def test_promote_refuses_blocked_or_dirty_releases_without_touching_the_record(record: dict[str, Any]) -> None:
    clean, faulty = record["checks"]["triage-clean"], record["checks"]["triage-faulty"]
    for rid, dec, check in (("rel-blocked", "flat", clean), ("rel-dirty", "good", faulty)):
        r = _gate(record, "release", "create", "--decision", record["decisions"][dec], "--id", rid, "--data-check",
                  check)
        assert r.returncode == 0, r.stderr
    before = _sha(record["db"])
    r = _gate(record, "promote", "rel-blocked")
    assert r.returncode == 100 and "REFUSED" in r.stdout and "BLOCK" in r.stdout
    r = _gate(record, "promote", "rel-dirty")
    assert r.returncode == 100 and f"data check {faulty}" in r.stdout and "'fail'" in r.stdout
    assert _sha(record["db"]) == before  # no change at all
    assert _sql(record["db"], "SELECT count(*) FROM release_pointer")[0][0] == 0


def test_promote_and_rollback_move_current_and_record_who_when_why(record: dict[str, Any]) -> None:
    clean = record["checks"]["triage-clean"]
    for rid in ("rel-1", "rel-2"):
        assert _gate(record, "release", "create", "--decision", record["decisions"]["good"], "--id", rid,
                     "--data-check", clean).returncode == 0
    r = _gate(record, "rollback", "--reason", "nothing yet")
    assert r.returncode == 1 and "nothing is current" in r.stderr
    assert _gate(record, "promote", "rel-1", "--by", "alice").returncode == 0
    r = _gate(record, "rollback", "--reason", "no previous")
    assert r.returncode == 1 and "first promoted release" in r.stderr
    assert _gate(record, "promote", "rel-2", "--by", "bob").returncode == 0
    r = _gate(record, "promote", "rel-2")
    assert r.returncode == 0 and "already current" in r.stdout
    assert "*" in _gate(record, "release", "list").stdout
    r = _gate(record, "rollback")
    assert r.returncode == 1 and "--reason" in r.stderr
    r = _gate(record, "rollback", "--reason", "p95 latency doubled", "--by", "carol")
    assert r.returncode == 0 and "rel-2 -> rel-1" in r.stdout
    hist = _sql(record["db"], "SELECT action, release_id, previous_release_id, moved_by, reason, moved_at IS NOT NULL "
                              "FROM release_pointer ORDER BY seq")
    assert hist == [("promote", "rel-1", None, "alice", None, True), ("promote", "rel-2", "rel-1", "bob", None, True),
                    ("rollback", "rel-1", "rel-2", "carol", "p95 latency doubled", True)]
    from gate.store.releases import current_release

    assert current_release(str(record["db"])) == "rel-1"
    r = _gate(record, "rollback", "rel-2", "--reason", "x")
    assert r.returncode == 1 and "never promoted before" in r.stderr


def test_watch_says_rollback_when_a_trigger_fires(record: dict[str, Any]) -> None:
    tmp, card = record["tmp"], str(record["card"])
    ok = write_jsonl(tmp / "ok.jsonl", [{"metric": "error", "value": 0} for _ in range(50)]
                     + [{"metric": "latency_ms", "value": 300 + i, "ts": "2026-11-29T10:00:00Z"} for i in range(100)])
    r = _gate(record, "watch", str(ok), "-s", card)
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout + r.stderr
    bad = write_jsonl(tmp / "bad.jsonl", [{"metric": "error", "value": int(i % 10 == 0)} for i in range(50)]
                      + [{"metric": "latency_ms", "value": 300.0} for _ in range(10)])
    r = _gate(record, "watch", str(bad), "-s", card)
    assert r.returncode == 100 and "ROLLBACK" in r.stdout and "error-rate" in r.stdout
    events = _sql(record["db"], 'SELECT "trigger", fired, verdict, n FROM watch_events ORDER BY watched_at, "trigger"')
    assert events[-2:] == [("error-rate", True, "ROLLBACK", 50), ("p95-latency", False, "ROLLBACK", 10)]
    few = write_jsonl(tmp / "few.jsonl", [{"metric": "error", "value": 1}])
    r = _gate(record, "watch", str(few), "-s", card, "--no-db")
    assert r.returncode == 0 and "insufficient data" in r.stdout
    for rows, where in (([{"metric": "error", "value": "high"}], "value"), ([{"value": 1}], "metric")):
        f = write_jsonl(tmp / "malformed.jsonl", [{"metric": "error", "value": 0}, *rows])
        r = _gate(record, "watch", str(f), "-s", card)
        assert r.returncode == 1 and f"malformed.jsonl:2: {where}:" in r.stderr and "Traceback" not in r.stderr
    (tmp / "broken.jsonl").write_text('{"metric": "error", "value": 0}\n{"metric": \n')
    r = _gate(record, "watch", str(tmp / "broken.jsonl"), "-s", card)
    assert r.returncode == 1 and "broken.jsonl:2: malformed JSON" in r.stderr
    r = _gate(record, "watch", str(ok), "-s", str(ROOT / "scorecards" / "tool-use.yaml"))
    assert r.returncode == 1 and "rollback_triggers" in r.stderr
    broken_card = tmp / "no-threshold.yaml"
    broken_card.write_text(Path(card).read_text().replace("  above: 800\n", ""))
    r = _gate(record, "watch", str(ok), "-s", str(broken_card))
    assert r.returncode == 1 and "no-threshold.yaml:" in r.stderr and "rollback_triggers" in r.stderr


def test_watch_rollback_moves_current_back_with_the_trigger_as_reason(record: dict[str, Any]) -> None:
    clean = record["checks"]["triage-clean"]
    for rid in ("rel-w1", "rel-w2"):
        assert _gate(record, "release", "create", "--decision", record["decisions"]["good"], "--id", rid,
                     "--data-check", clean).returncode == 0
        assert _gate(record, "promote", rid).returncode == 0
    bad = write_jsonl(record["tmp"] / "spike.jsonl", [{"metric": "latency_ms", "value": 2000.0} for _ in range(20)])
    r = _gate(record, "watch", str(bad), "-s", str(record["card"]), "--rollback")
    assert r.returncode == 100 and "rel-w2 -> rel-w1" in r.stdout, r.stdout + r.stderr
    last = _sql(record["db"], "SELECT action, release_id, reason FROM release_pointer ORDER BY seq DESC LIMIT 1")[0]
    assert last[:2] == ("rollback", "rel-w1") and "p95-latency" in last[2] and "spike.jsonl" in last[2]


def test_watch_rollback_acts_only_on_the_release_the_metrics_are_about(record: dict[str, Any]) -> None:
    """Issue 16 item 19: rel-r1, rel-r2, rel-r3 promoted; metrics about rel-r1 must never roll back rel-r3."""
    clean = record["checks"]["triage-clean"]
    for rid in ("rel-r1", "rel-r2", "rel-r3"):
        assert _gate(record, "release", "create", "--decision", record["decisions"]["good"], "--id", rid,
                     "--data-check", clean).returncode == 0
        assert _gate(record, "promote", rid).returncode == 0
    pointer = "SELECT count(*) FROM release_pointer"
    moves = _sql(record["db"], pointer)[0][0]
    spike = [{"metric": "latency_ms", "value": 2000.0, "release": "rel-r1"} for _ in range(20)]
    bad = write_jsonl(record["tmp"] / "r1-spike.jsonl", spike)
    r = _gate(record, "watch", str(bad), "-s", str(record["card"]), "--release", "rel-r1", "--rollback")
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stdout + r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "'rel-r1'" in r.stderr and "current is 'rel-r3'" in r.stderr
    assert "ROLLED BACK" not in r.stdout and _sql(record["db"], pointer)[0][0] == moves
    # no --release: the watch is about current (rel-r3); rows naming rel-r1 are left out, nothing fires
    r = _gate(record, "watch", str(bad), "-s", str(record["card"]), "--rollback")
    assert r.returncode == 0 and "20 rows about other releases left out" in r.stdout, r.stdout + r.stderr
    assert "not measured" in r.stdout and _sql(record["db"], pointer)[0][0] == moves
    # metrics about the current release do roll it back
    mine = write_jsonl(record["tmp"] / "r3-spike.jsonl", [{**row, "release": "rel-r3"} for row in spike])
    r = _gate(record, "watch", str(mine), "-s", str(record["card"]), "--release", "rel-r3", "--rollback")
    assert r.returncode == 100 and "ROLLED BACK: current rel-r3 -> rel-r2" in r.stdout, r.stdout + r.stderr
    events = _sql(record["db"], "SELECT DISTINCT release_id FROM watch_events WHERE metrics_file LIKE '%r3-spike%'")
    assert events == [("rel-r3",)]
