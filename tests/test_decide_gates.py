"""Gates and decisions on hand-made score tables written through the real score store (DuckDB)."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from tests.conftest import gate_inprocess

N = 200


def make_scorecard(tmp: Path, *, n: int = N, gates: list[dict[str, Any]],
                   extra: dict[int, dict[str, Any]] | None = None, scorers: list[dict[str, Any]] | None = None,
                   kind: str | None = None, triggers: list[dict[str, Any]] | None = None) -> Path:
    """A scorecard with one suite of n items (categories a/b alternate); `extra` adds suite-row fields by index."""
    suite = tmp / "suite.jsonl"
    with open(suite, "w", encoding="utf-8") as fh:
        for i in range(n):
            row = {"id": f"it-{i:04d}", "category": "ab"[i % 2], "messages": [{"role": "user", "content": f"q{i}"}],
                   "expected": "x", **(extra or {}).get(i, {})}
            fh.write(json.dumps(row) + "\n")
    card = {"name": "toy", "version": "1", "suites": [{"name": "s", "path": "suite.jsonl"}],
            "decoding": {"temperature": 0.0, "max_tokens": 8},
            "scorers": scorers or [{"name": "task", "type": "exact_match"}, {"name": "fmt", "type": "format"}],
            "gates": gates}
    if kind:
        card["kind"] = kind
    if triggers:
        card["rollback_triggers"] = triggers
    path = tmp / "card.yaml"
    path.write_text(yaml.safe_dump(card, sort_keys=False), encoding="utf-8")
    return path


def record_run(db: Path, card_path: Path, role: str, values: dict[tuple[str, str], list[float | None]], *,
               comparison: str, n: int = N, skip: frozenset[int] | set[int] = frozenset(),
               hash_of: dict[int, str] | None = None) -> str:
    """Writes one complete score run with the given per-item values (None = key absent for that item)."""
    from gate.score.scorecard import load_scorecard
    from gate.store.scores import begin_score_run, finish_score_run

    card = load_scorecard(card_path)
    run_id = uuid.uuid4().hex
    now = datetime.now(UTC)
    begin_score_run({"run_id": run_id, "comparison_id": comparison, "role": role, "scorecard": card.name,
                     "scorecard_version": card.version, "scorecard_sha256": card.sha256,
                     "suite_hashes": card.suite_hashes, "model": f"models/{role}", "adapter": None,
                     "identity_fp": role, "engine": "embedded",
                     "engine_identity": {"engine": "embedded", "engine_version": "1.0", "model_hash": f"h-{role}",
                                         "adapter_hash": None, "flags": ["--dtype=bf16"],
                                         "chat_template_hash": "t" * 64},
                     "decoding": card.decoding, "epoch": 0, "started_at": now, "status": "incomplete",
                     "gate_version": "test", "options": {}}, str(db))
    samples, scores = [], []
    for i in range(n):
        if i in skip:
            continue
        iid = f"it-{i:04d}"
        samples.append({"run_id": run_id, "suite": "s", "item_id": iid, "category": "ab"[i % 2],
                        "prompt_hash": (hash_of or {}).get(i, f"p{i}"), "output": "", "tool_calls": "[]",
                        "error": None, "finish_reason": "stop", "latency_s": 0.1, "prompt_tokens": 1,
                        "completion_tokens": 1, "cached": False, "epoch": 0})
        for (scorer, key), vals in values.items():
            if vals[i] is not None:
                scores.append({"run_id": run_id, "suite": "s", "item_id": iid, "scorer": scorer, "key": key,
                               "value": float(vals[i]), "explanation": "", "epoch": 0})
    finish_score_run(run_id, status="complete", finished_at=now, items=len(samples), errors=0, cached=0,
                     samples=samples, scores=scores, path=str(db))
    return run_id


def pair(rng: np.random.Generator, base_rate: float, lift: float, n: int = N) -> tuple[list[float], list[float]]:
    """Correlated 0/1 outcomes: the candidate keeps the baseline's answers except on a few flipped items."""
    base = (rng.random(n) < base_rate).astype(float)
    cand = base.copy()
    fails = np.where(base == 0)[0]
    wins = rng.choice(fails, size=int(round(lift * n)), replace=False) if lift > 0 else []
    cand[wins] = 1.0
    if lift < 0:
        passes = np.where(base == 1)[0]
        cand[rng.choice(passes, size=int(round(-lift * n)), replace=False)] = 0.0
    return base.tolist(), cand.tolist()


GATES = [
    {"name": "task-improves", "scorer": "task", "metric": "strict", "rule": "superiority", "alpha": 0.05},
    {"name": "format-no-regression", "scorer": "fmt", "metric": "schema_valid", "rule": "non_inferiority",
     "margin": 0.05},
    {"name": "format-floor", "scorer": "fmt", "metric": "schema_valid", "rule": "absolute", "threshold": 0.8},
]




def _decide(tmp: Path, card: Path, db: Path, *extra: str) -> tuple[int, dict[str, Any], str]:
    out = tmp / "out"
    code, text = gate_inprocess("decide", "--scorecard", str(card), "--db", str(db), "--out", str(out), *extra)
    data = json.loads((out / "decision.json").read_text()) if (out / "decision.json").exists() else {}
    return code, data, text


def _gate(data: dict[str, Any], name: str) -> dict[str, Any]:
    return next(g for g in data["gates"] if g["gate"] == name)


def test_clear_improvement_is_promoted_with_evidence_in_files_and_duckdb(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    card, db = make_scorecard(tmp_path, gates=GATES), tmp_path / "g.duckdb"
    tb, tc = pair(rng, 0.5, 0.15)
    fb, fc = pair(rng, 0.95, 0.0)
    record_run(db, card, "baseline", {("task", "strict"): tb, ("fmt", "schema_valid"): fb}, comparison="c1")
    record_run(db, card, "candidate", {("task", "strict"): tc, ("fmt", "schema_valid"): fc}, comparison="c1")
    code, data, out = _decide(tmp_path, card, db)
    assert code == 0, out
    assert data["verdict"] == "PROMOTE" and data["n_pairs"] == N
    sup = _gate(data, "task-improves")
    b, c = 0, 30  # 15 % of 200 failures fixed, none broken
    from gate.decide.stats import mcnemar_exact

    assert sup["test"] == "mcnemar" and sup["p_value"] == pytest.approx(mcnemar_exact(b, c, "greater"))
    assert sup["observed"] == pytest.approx(0.15) and sup["ci_low"] > 0
    ni = _gate(data, "format-no-regression")
    assert ni["verdict"] == "pass" and ni["observed"] == 0.0
    assert _gate(data, "format-floor")["verdict"] == "pass"
    # Holm across the two tested gates
    from gate.decide.stats import holm

    assert [sup["p_holm"], ni["p_holm"]] == pytest.approx(holm([sup["p_value"], ni["p_value"]]))
    md = (tmp_path / "out" / "decision.md").read_text()
    assert "PROMOTE" in md and "task-improves" in md
    assert "PROMOTE" in out and "task-improves" in out
    import duckdb

    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT verdict, exit_code, n_pairs FROM decisions").fetchall() == [("PROMOTE", 0, N)]
        assert con.execute("SELECT count(*) FROM gate_results").fetchall()[0][0] == 3
        # comparisons per suite x scorer x key x category ('all', a, b)
        cats = con.execute("SELECT DISTINCT category FROM comparisons ORDER BY 1").fetchall()
        assert [c[0] for c in cats] == ["a", "all", "b"]


def test_regression_beyond_margin_blocks_with_exit_100(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    card, db = make_scorecard(tmp_path, gates=GATES), tmp_path / "g.duckdb"
    tb, tc = pair(rng, 0.5, 0.15)
    fb, fc = pair(rng, 0.97, -0.12)
    record_run(db, card, "baseline", {("task", "strict"): tb, ("fmt", "schema_valid"): fb}, comparison="c1")
    record_run(db, card, "candidate", {("task", "strict"): tc, ("fmt", "schema_valid"): fc}, comparison="c1")
    code, data, out = _decide(tmp_path, card, db)
    assert code == 100, out
    assert data["verdict"] == "BLOCK"
    ni = _gate(data, "format-no-regression")
    assert ni["verdict"] == "fail" and ni["observed"] == pytest.approx(-0.12) and ni["ci_low"] < -0.05
    assert "format-no-regression" in data["summary"]


def test_no_improvement_blocks_on_superiority(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    card, db = make_scorecard(tmp_path, gates=GATES[:1]), tmp_path / "g.duckdb"
    tb = (rng.random(N) < 0.6).astype(float).tolist()
    tc = [1.0 - v if k % 10 == 0 else v for k, v in enumerate(tb)]  # flips both ways, no net gain
    record_run(db, card, "baseline", {("task", "strict"): tb}, comparison="c1")
    record_run(db, card, "candidate", {("task", "strict"): tc}, comparison="c1")
    code, data, _ = _decide(tmp_path, card, db)
    assert code == 100 and _gate(data, "task-improves")["p_value"] > 0.05


def test_critical_items_block_one_by_one(tmp_path: Path) -> None:
    gates = [*GATES[:1], {"name": "must-pass", "scorer": "fmt", "metric": "schema_valid",
                          "rule": "no_critical_failures"}]
    card = make_scorecard(tmp_path, gates=gates, extra={3: {"critical": True}, 8: {"critical": True}})
    db = tmp_path / "g.duckdb"
    rng = np.random.default_rng(4)
    tb, tc = pair(rng, 0.5, 0.2)
    fb = [1.0] * N
    fc = [0.0 if i == 8 else (0.0 if i == 50 else 1.0) for i in range(N)]  # 50 is not critical
    record_run(db, card, "baseline", {("task", "strict"): tb, ("fmt", "schema_valid"): fb}, comparison="c1")
    record_run(db, card, "candidate", {("task", "strict"): tc, ("fmt", "schema_valid"): fc}, comparison="c1")
    code, data, _ = _decide(tmp_path, card, db)
    assert code == 100
    crit = _gate(data, "must-pass")
    assert crit["verdict"] == "fail" and crit["n"] == 2 and "it-0008" in crit["detail"] and "it-0050" not in \
        crit["detail"]
    assert _gate(data, "task-improves")["verdict"] == "pass"  # significance alone would have promoted


def test_missing_new_and_changed_items_are_reported_not_dropped_silently(tmp_path: Path) -> None:
    card, db = make_scorecard(tmp_path, gates=GATES[:1]), tmp_path / "g.duckdb"
    rng = np.random.default_rng(5)
    tb, tc = pair(rng, 0.5, 0.2)
    record_run(db, card, "baseline", {("task", "strict"): tb}, comparison="c1", skip={7})
    record_run(db, card, "candidate", {("task", "strict"): tc}, comparison="c1", skip={1, 2},
               hash_of={4: "changed"})
    code, data, out = _decide(tmp_path, card, db)
    assert data["n_pairs"] == N - 4
    al = data["alignment"]
    assert al["missing_in_candidate"]["count"] == 2 and al["new_in_candidate"]["count"] == 1
    assert al["prompt_hash_mismatch"]["examples"] == ["s/it-0004"]
    assert any("missing in candidate" in w for w in data["warnings"]) and "it-0004" in out


def test_clustered_items_use_a_cluster_robust_test(tmp_path: Path) -> None:
    extra = {i: {"cluster": f"tpl{i // 20}"} for i in range(N)}
    card, db = make_scorecard(tmp_path, gates=GATES[:1], extra=extra), tmp_path / "g.duckdb"
    rng = np.random.default_rng(6)
    tb, tc = pair(rng, 0.5, 0.1)
    record_run(db, card, "baseline", {("task", "strict"): tb}, comparison="c1")
    record_run(db, card, "candidate", {("task", "strict"): tc}, comparison="c1")
    _, data, _ = _decide(tmp_path, card, db)
    sup = _gate(data, "task-improves")
    assert sup["test"] == "cluster_z" and "10 clusters" in sup["detail"]
    assert {c["n_clusters"] for c in data["comparisons"] if c["category"] == "all"} == {10}


def test_operations_gates_measure_p95_or_say_not_measured(tmp_path: Path) -> None:
    scorers = [{"name": "ops", "type": "operations"}]
    gates = [{"name": "p95-latency", "scorer": "ops", "metric": "latency_s", "rule": "absolute", "aggregate": "p95",
              "threshold": 0.5, "direction": "lower_is_better"},
             {"name": "peak-memory", "scorer": "ops", "metric": "peak_rss_mb", "rule": "absolute", "aggregate": "max",
              "threshold": 4096, "direction": "lower_is_better"}]
    card = make_scorecard(tmp_path, gates=gates, scorers=scorers, kind="operations")
    db = tmp_path / "g.duckdb"
    lat = [0.1 + 0.001 * i for i in range(N)]  # p95 = 0.29
    slow = [v * 2 for v in lat]  # p95 = 0.58
    record_run(db, card, "baseline", {("ops", "latency_s"): lat}, comparison="c1")
    record_run(db, card, "candidate", {("ops", "latency_s"): slow}, comparison="c1")
    code, data, _ = _decide(tmp_path, card, db)
    p95 = _gate(data, "p95-latency")
    assert p95["observed"] == pytest.approx(float(np.percentile(slow, 95))) and p95["verdict"] == "fail"
    mem = _gate(data, "peak-memory")
    assert mem["verdict"] == "fail" and "not measured, so not passed" in mem["detail"]  # on_unmeasured: block
    assert code == 100
    # peak memory is a run-level measurement: `gate score` records it in score_metrics, and the gate reads it there
    from gate.store.metrics import record_metrics

    base = record_run(db, card, "baseline", {("ops", "latency_s"): lat}, comparison="c2")
    cand = record_run(db, card, "candidate", {("ops", "latency_s"): lat}, comparison="c2")
    for run, mb in ((base, 3000.0), (cand, 5000.0)):
        record_metrics(run, [{"suite": "s", "category": "all", "scorer": "ops", "key": "peak_rss_mb", "n": 1,
                              "mean": mb, "stderr": None, "p50": mb, "p95": mb, "p99": mb, "epochs": 1}], str(db))
    code, data, _ = _decide(tmp_path, card, db, "--comparison", "c2")
    mem = _gate(data, "peak-memory")
    assert mem["verdict"] == "fail" and mem["observed"] == 5000.0 and "run-level" in mem["detail"]
    assert _gate(data, "p95-latency")["verdict"] == "pass" and code == 100


def test_aa_mode_measures_the_noise_floor_and_warns_on_tight_margins(tmp_path: Path) -> None:
    gates = [GATES[0], {**GATES[1], "margin": 0.01}]
    card, db = make_scorecard(tmp_path, gates=gates), tmp_path / "g.duckdb"
    rng = np.random.default_rng(7)
    p = rng.beta(0.3, 0.2, N)
    runs = {}
    for role in ("baseline", "candidate"):  # the same model twice: fresh draws around the same probabilities
        runs[role] = {("task", "strict"): (rng.random(N) < p).astype(float).tolist(),
                      ("fmt", "schema_valid"): (rng.random(N) < 0.9).astype(float).tolist()}
        record_run(db, card, role, runs[role], comparison="aa1")
    code, data, _ = _decide(tmp_path, card, db, "--aa")
    assert code == 0 and data["verdict"] == "NOISE_FLOOR"
    floor = data["noise_floor"]["format-no-regression"]
    assert floor > 0.01
    assert any("below the measured A/A noise floor" in w for w in data["warnings"])
    # a later real decision of the same scorecard warns with the stored floor
    record_run(db, card, "baseline", runs["baseline"], comparison="c2")
    record_run(db, card, "candidate", runs["baseline"], comparison="c2")
    _, data2, _ = _decide(tmp_path, card, db, "--comparison", "c2")
    assert any("noise floor" in w for w in data2["warnings"])


def test_baseline_only_says_when_training_is_not_needed(tmp_path: Path) -> None:
    card, db = make_scorecard(tmp_path, gates=GATES), tmp_path / "g.duckdb"
    run = record_run(db, card, "candidate", {("task", "strict"): [1.0] * N,
                                            ("fmt", "schema_valid"): [1.0] * (N - 10) + [0.0] * 10},
                     comparison="b1")
    code, data, out = _decide(tmp_path, card, db, "--baseline-only", run)
    assert code == 0 and data["verdict"] == "TARGET_MET"
    assert "training is not needed for this target" in " ".join(out.split())
    assert _gate(data, "task-improves")["verdict"] == "skip"
    run2 = record_run(db, card, "candidate", {("task", "strict"): [1.0] * N,
                                             ("fmt", "schema_valid"): [1.0] * (N // 2) + [0.0] * (N // 2)},
                      comparison="b2")
    code, data, _ = _decide(tmp_path, card, db, "--baseline-only", run2)
    assert code == 0 and data["verdict"] == "TARGET_NOT_MET" and "format-floor" in data["summary"]


@pytest.mark.usefixtures("run_gate_env")
def test_bad_inputs_are_one_line_exit_1(tmp_path: Path) -> None:
    card, db = make_scorecard(tmp_path, gates=GATES), tmp_path / "g.duckdb"
    args = ("decide", "--scorecard", str(card), "--db", str(db), "--out", str(tmp_path / "out"))
    r = gate_inprocess(*args, split=True)
    assert r.returncode == 1 and "no gate database" in r.stderr and "Traceback" not in r.stderr
    record_run(db, card, "baseline", {("task", "strict"): [1.0] * N}, comparison="c1")
    r = gate_inprocess(*args, "--candidate-run", "nope", "--baseline-run", "nope2", split=True)
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1 and "nope" in r.stderr and not r.stdout
    assert not (tmp_path / "out").exists()
    bad = tmp_path / "bad.yaml"
    bad.write_text(card.read_text().replace("rule: superiority", "rule: superiority\n  margn: 1"))
    r = gate_inprocess("decide", "--scorecard", str(bad), "--db", str(db), split=True)
    assert r.returncode == 1 and "bad.yaml:" in r.stderr and "margn" in r.stderr and "Traceback" not in r.stderr


def test_a_paired_gate_without_scores_blocks_instead_of_passing_silently(tmp_path: Path) -> None:
    card, db = make_scorecard(tmp_path, gates=GATES[:2]), tmp_path / "g.duckdb"
    tb, tc = pair(np.random.default_rng(8), 0.5, 0.2)
    record_run(db, card, "baseline", {("task", "strict"): tb}, comparison="c1")
    record_run(db, card, "candidate", {("task", "strict"): tc}, comparison="c1")
    code, data, _ = _decide(tmp_path, card, db)
    ni = _gate(data, "format-no-regression")
    assert code == 100 and ni["verdict"] == "fail" and "not evaluated" in ni["detail"]
    assert _gate(data, "task-improves")["verdict"] == "pass"


def test_lower_is_better_metrics_are_tested_in_the_right_direction(tmp_path: Path) -> None:
    scorers = [{"name": "ref", "type": "refusal"}]
    gates = [{"name": "less-over-refusal", "scorer": "ref", "metric": "over_refusal", "rule": "superiority",
              "direction": "lower_is_better"},
             {"name": "no-under-refusal-rise", "scorer": "ref", "metric": "under_refusal", "rule": "non_inferiority",
              "margin": 0.02, "direction": "lower_is_better"}]
    card, db = make_scorecard(tmp_path, gates=gates, scorers=scorers), tmp_path / "g.duckdb"
    rng = np.random.default_rng(9)
    over_c, over_b = pair(rng, 0.2, 0.15)  # the candidate refuses 15 points less often: better
    under_c, under_b = pair(rng, 0.1, 0.0)
    record_run(db, card, "baseline", {("ref", "over_refusal"): over_b, ("ref", "under_refusal"): under_b},
               comparison="c1")
    record_run(db, card, "candidate", {("ref", "over_refusal"): over_c, ("ref", "under_refusal"): under_c},
               comparison="c1")
    code, data, _ = _decide(tmp_path, card, db)
    sup = _gate(data, "less-over-refusal")
    assert code == 0 and sup["verdict"] == "pass" and sup["observed"] == pytest.approx(-0.15)
    assert sup["ci_high"] < 0 and "0 lost, 30 won" in sup["detail"]
    # the same numbers the other way round: more refusals, and under-refusal rising by 10 points
    worse = pair(rng, 0.1, 0.10)
    record_run(db, card, "baseline", {("ref", "over_refusal"): over_c, ("ref", "under_refusal"): worse[0]},
               comparison="c2")
    record_run(db, card, "candidate", {("ref", "over_refusal"): over_b, ("ref", "under_refusal"): worse[1]},
               comparison="c2")
    code, data, _ = _decide(tmp_path, card, db, "--comparison", "c2")
    assert code == 100
    assert _gate(data, "less-over-refusal")["verdict"] == "fail"
    ni = _gate(data, "no-under-refusal-rise")
    assert ni["verdict"] == "fail" and ni["observed"] == pytest.approx(0.10) and ni["ci_high"] > 0.02


@pytest.mark.parametrize(("change", "message"), [
    ({"gates": [GATES[0], GATES[0]]}, "gate 'task-improves' is declared twice"),
    ({"gates": [{**GATES[2], "aggregate": "p42"}]}, "'p42' is not one of"),
    ({"gates": [{**GATES[0], "cluster": "customer"}]}, "'customer' is not one of"),
    ({"rollback_triggers": [{"name": "t", "metric": "error"}]},
     "matches none of the allowed shapes: a mapping with key above; a mapping with key below"),
    ({"rollback_triggers": [{"name": "t", "metric": "error", "above": 1, "aggregat": "p95"}]}, "unknown key"),
])
def test_scorecard_gate_and_trigger_shapes_are_validated(tmp_path: Path, change: dict[str, Any],
                                                         message: str) -> None:
    from gate.score.scorecard import ScorecardError, load_scorecard

    card = make_scorecard(tmp_path, gates=GATES, n=4)
    data = yaml.safe_load(card.read_text())
    data.update(change)
    card.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(ScorecardError) as err:
        load_scorecard(card)
    assert message in str(err.value) and str(err.value).startswith(f"{card}:")
