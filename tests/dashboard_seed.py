"""Realistic records for the dashboard tests and the load benchmark, written through the real store writers.

Releases improve over time with noise; every release has a decision with a superiority gate (paired difference
and its interval), a non-inferiority gate and an absolute gate, per-category comparisons, and declares the dataset
check behind its training data. The check run holds findings whose snippets are made by the real redactor from
texts with planted personal data (`PLANTED`), so a test can prove no page ever shows the raw values.
"""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CATEGORIES = ["billing", "mobile_app", "api", "shipping"]
PLANTED = {"email": "olivia.brandt@example.net", "phone": "+44 20 7946 0958", "iban": "DE89370400440532013000",
           "card": "4111 1111 1111 1111"}
T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


class _Hit:
    def __init__(self, start: int, end: int, label: str) -> None:
        self.start, self.end, self.label = start, end, label


def _ci(p: float, n: int, z: float = 1.96) -> float:
    return z * math.sqrt(max(p * (1 - p), 1e-4) * 2 / n)


def release_rows(scorecard: str, i: int, *, rng: random.Random, n: int = 400,
                 check_run: str | None = None) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]],
                                                        dict[str, Any]]:
    """One decision (row, gates, comparisons) and its release, for release number `i` of `scorecard`."""
    did = f"dec-{scorecard}-{i:05d}"
    rid = f"{scorecard}-r{i:04d}"
    base = 0.60
    cand = min(0.97, base + 0.002 * i + rng.gauss(0, 0.02))
    delta = cand - base
    half = _ci(cand, n)
    sup_pass = delta - half > 0
    parsed = min(1.0, 0.95 + 0.0005 * i + rng.gauss(0, 0.01))
    refusal_delta = rng.gauss(0.0, 0.02)
    ni_pass = refusal_delta - 0.03 > -0.05
    abs_pass = parsed >= 0.98
    verdict = "PROMOTE" if (sup_pass and ni_pass and abs_pass) else "BLOCK"
    at = T0 + timedelta(hours=6 * i, minutes=len(scorecard))
    gates = [
        {"gate": "task-success-improves", "rule": "superiority", "scorer": "task_success", "metric": "correct",
         "suite": f"{scorecard}-heldout", "category": "all", "test": "mcnemar", "direction": "higher_is_better",
         "alpha": 0.05, "margin": None, "threshold": None, "baseline": base, "candidate": cand, "observed": delta,
         "ci_low": delta - half, "ci_high": delta + half, "p_value": 0.001 if sup_pass else 0.2,
         "p_holm": 0.003 if sup_pass else 0.4, "n": n, "verdict": "pass" if sup_pass else "fail",
         "severity": "block", "detail": ""},
        {"gate": "refusal-no-regression", "rule": "non_inferiority", "scorer": "refusal", "metric": "correct",
         "suite": f"{scorecard}-heldout", "category": "all", "test": "bootstrap", "direction": "higher_is_better",
         "alpha": 0.05, "margin": 0.05, "threshold": None, "baseline": 0.9, "candidate": 0.9 + refusal_delta,
         "observed": refusal_delta, "ci_low": refusal_delta - 0.03, "ci_high": refusal_delta + 0.03,
         "p_value": 0.01, "p_holm": 0.02, "n": n, "verdict": "pass" if ni_pass else "fail", "severity": "block",
         "detail": ""},
        {"gate": "format-floor", "rule": "absolute", "scorer": "format", "metric": "strict_parse",
         "suite": f"{scorecard}-heldout", "category": "all", "test": None, "direction": "higher_is_better",
         "alpha": None, "margin": None, "threshold": 0.98, "baseline": 0.93, "candidate": parsed, "observed": parsed,
         "ci_low": parsed - 0.01, "ci_high": min(1.0, parsed + 0.01), "p_value": None, "p_holm": None, "n": n,
         "verdict": "pass" if abs_pass else "fail", "severity": "block", "detail": ""},
    ]
    comparisons = []
    for key, b0, c0 in (("correct", base, cand), ("strict_parse", 0.93, parsed)):
        scorer = "task_success" if key == "correct" else "format"
        for cat in ["all", *CATEGORIES]:
            shift = 0.0 if cat == "all" else rng.gauss(0, 0.03)
            nn = n if cat == "all" else n // len(CATEGORIES)
            c = min(1.0, c0 + shift)
            h = _ci(c, nn)
            comparisons.append({"suite": f"{scorecard}-heldout", "scorer": scorer, "key": key, "category": cat,
                                "n_pairs": nn, "baseline": b0, "candidate": c, "delta": c - b0, "ci_low": c - b0 - h,
                                "ci_high": c - b0 + h, "p_value": 0.01, "test": "mcnemar", "se": h / 1.96,
                                "n_clusters": None, "b": 10, "c": 30})
    decision = {"decision_id": did, "created_at": at, "mode": "compare", "verdict": verdict,
                "exit_code": 0 if verdict == "PROMOTE" else 100, "scorecard": scorecard, "scorecard_version": "1.0",
                "scorecard_sha256": "ab" * 32, "baseline_run": f"run-b-{did}", "candidate_run": f"run-c-{did}",
                "n_pairs": n, "alignment": {"missing_in_candidate": 0, "new_in_candidate": 0, "hash_mismatch": 0},
                "noise_floor": {}, "warnings": [],
                "summary": f"{verdict}: {sum(g['verdict'] == 'pass' for g in gates)} of {len(gates)} gates pass",
                "seed": 20240611, "resamples": 10000}
    release = {"release_id": rid, "created_at": at, "created_by": "ci", "decision_id": did, "verdict": verdict,
               "base_model": "tiny-llama", "base_revision": "rev-1", "adapter": f"adapters/{rid}",
               "adapter_sha256": f"{i:064x}", "tokenizer_sha256": "cd" * 32, "chat_template_sha256": "ef" * 32,
               "engine": "embedded", "engine_version": "transformers 5.24.0", "engine_flags": {"dtype": "bfloat16"},
               "system_prompt_sha256": "01" * 32, "tool_schema_sha256": None, "scorecard": scorecard,
               "scorecard_version": "1.0", "scorecard_sha256": "ab" * 32, "suite_hashes": {f"{scorecard}-heldout":
                                                                                            "12" * 32},
               "scores": {}, "dataset_fingerprints": ["fp-triage-1"],
               "data_checks": [{"run_id": check_run, "verdict": "fail"}] if check_run else [],
               "training_run": f"train-{i}", "notes": None}
    return decision, gates, comparisons, release


def seed_check_run(db: str, run_id: str = "chk-faulty-0001") -> str:
    """A `gate check` run with findings, recorded by `gate.store.db.record_check_run`."""
    from gate.contract import load_contract
    from gate.data.base import CheckResult, Finding
    from gate.data.runner import CheckRun
    from gate.io.dataset import SplitStats
    from gate.pii.redact import snippet
    from gate.store.db import record_check_run

    texts = [
        ("EMAIL_ADDRESS", f"Please write back to {PLANTED['email']} rather than the address on file.", "email"),
        ("PHONE_NUMBER", f"The quickest way to reach me is {PLANTED['phone']} any time before six.", "phone"),
        ("IBAN_CODE", f"For the refund please use our bank account {PLANTED['iban']}.", "iban"),
        ("CREDIT_CARD", f"The card that was charged is {PLANTED['card']}, expiry 09/28.", "card"),
    ]
    findings = []
    for row, (label, text, key) in enumerate(texts, start=3):
        s = text.index(PLANTED[key])
        findings.append(Finding(check="pii", split="train", row=row, field="messages[1].content",
                                rule=f"pii.{label}", severity="error", message=f"possible {label} (score 1.00)",
                                snippet=snippet(text, [_Hit(s, s + len(PLANTED[key]), label)]),
                                row_id=f"tri-{row:06d}"))
    findings.append(Finding(check="contract", split="val", row=9, field="language", rule="language.allowed",
                            severity="warning", message="language not in the contract's languages ['en']",
                            snippet="fr", row_id="tri-000009"))
    results = [
        CheckResult(name="pii", version="1", status="fail", counts={"scanned": 40, "findings": 4},
                    findings=findings[:4], seconds=1.2, summary="4 possible PII span(s) in 4 row(s)"),
        CheckResult(name="contract", version="1", status="warn", counts={"scanned": 40, "findings": 1},
                    findings=findings[4:], seconds=0.3, summary="1 warning"),
    ]
    run = CheckRun(run_id=run_id, dataset="fixtures/datasets/triage-faulty",
                   contract=load_contract(ROOT / "contracts" / "triage.yaml"),
                   splits=[SplitStats(split="train", file="train.jsonl", format="jsonl", rows=30, bytes=9000,
                                      sha256="aa" * 32),
                           SplitStats(split="val", file="val.jsonl", format="jsonl", rows=10, bytes=3000,
                                      sha256="bb" * 32)],
                   results=results, started_at=T0 - timedelta(days=1), seconds=2.5, fingerprint="fp-triage-1")
    record_check_run(run, 100, db)
    return run_id


def _pointer_column(kind: str) -> str:
    """The pointer table's name for when / who, read from the writer's own DDL."""
    import re

    from gate.store.releases import DDL

    ddl = next(d for d in DDL if "release_pointer" in d)
    cols = re.findall(r'[(,]\s*"?(\w+)"?\s+[A-Z]', ddl)
    wanted = ("at", "moved_at", "created_at") if kind == "at" else ("by", "moved_by", "actor", "who")
    return next(c for c in wanted if c in cols)


def seed_small(db: str, *, scorecards: tuple[str, ...] = ("triage", "tool-use"), releases: int = 6,
               seed: int = 7) -> dict[str, Any]:
    """A few releases per scorecard through record_decision / record_release / record_pointer, one per call."""
    from gate.store.releases import record_decision, record_pointer, record_release

    rng = random.Random(seed)
    check = seed_check_run(db)
    ids: list[str] = []
    for card in scorecards:
        for i in range(releases):
            decision, gates, comps, rel = release_rows(card, i * 8, rng=rng, check_run=check)
            record_decision(decision, gates, comps, db)
            record_release(rel, db)
            ids.append(rel["release_id"])
    promoted = ids[releases - 1]
    record_pointer({_pointer_column("at"): T0 + timedelta(days=30), "action": "promote", "release_id": promoted,
                    "previous_release_id": None, _pointer_column("by"): "release-manager", "reason": None}, db)
    return {"releases": ids, "check_run": check, "current": promoted}


def seed_bulk(db: str, *, scorecards: int = 10, releases: int = 1000, seed: int = 11) -> int:
    """`releases` releases for each of `scorecards` scorecards in one transaction (Arrow bulk inserts into the
    real tables): the load benchmark's record. Returns the number of releases."""
    import json

    from gate.store.db import _insert_arrow, connect
    from gate.store.releases import COMPARISON_COLUMNS, GATE_COLUMNS, ensure_tables

    rng = random.Random(seed)
    check = seed_check_run(db)
    dec_rows, gate_rows, comp_rows, rel_rows = [], [], [], []
    for k in range(scorecards):
        card = f"scorecard-{k:02d}"
        for i in range(releases):
            d, gates, comps, rel = release_rows(card, i % 200, rng=rng, check_run=check)
            rel["created_at"] = T0 + timedelta(hours=2 * i, minutes=k)
            d["created_at"] = rel["created_at"]
            rel["release_id"] = f"{card}-r{i:04d}"
            dec_rows.append({c: (json.dumps(v) if isinstance(v, (dict, list)) else v) for c, v in d.items()})
            gate_rows += [{**g, "decision_id": d["decision_id"] + f"-{i}"} for g in gates]
            comp_rows += [{**c, "decision_id": d["decision_id"] + f"-{i}"} for c in comps]
            dec_rows[-1]["decision_id"] = d["decision_id"] + f"-{i}"
            rel["decision_id"] = d["decision_id"] + f"-{i}"
            rel_rows.append({c: (json.dumps(v) if isinstance(v, (dict, list)) else v) for c, v in rel.items()})
    with connect(db) as con:
        ensure_tables(con)
        con.execute("BEGIN TRANSACTION").fetchall()
        _insert_arrow(con, "decisions", dec_rows, list(dec_rows[0]))
        _insert_arrow(con, "gate_results", gate_rows, GATE_COLUMNS)
        _insert_arrow(con, "comparisons", comp_rows, COMPARISON_COLUMNS)
        _insert_arrow(con, "releases", rel_rows, list(rel_rows[0]))
        con.execute("COMMIT").fetchall()
    return len(rel_rows)


def seed_many_findings(db: str, run_id: str = "chk-many-0001", *, big: int = 1500, small: int = 3) -> str:
    """A check run whose findings sorted by check name start with `big` of `contamination` (two rules, two splits)
    and end with `small` of `contract`: the shape that once hid the contract's findings behind a fixed cut."""
    from gate.contract import load_contract
    from gate.data.base import CheckResult, Finding
    from gate.data.runner import CheckRun
    from gate.io.dataset import SplitStats
    from gate.store.db import record_check_run

    many = [Finding(check="contamination", split="train" if i % 3 else "val", row=i + 1, field="messages",
                    rule="contamination.exact" if i % 2 else "contamination.ngram", severity="error",
                    message="row repeats an evaluation item", snippet="W*** t** r***", row_id=f"row-{i:06d}")
            for i in range(big)]
    few = [Finding(check="contract", split="train", row=20_000 + i, field="language", rule="language.allowed",
                   severity="warning", message="language not in the contract's languages ['en']", snippet="fr",
                   row_id=f"af-{18530 + i:06d}") for i in range(small)]
    results = [
        CheckResult(name="contamination", version="1", status="fail", counts={"scanned": 25_000, "findings": big},
                    findings=many, seconds=2.0, summary=f"{big} rows repeat evaluation items"),
        CheckResult(name="contract", version="1", status="warn", counts={"scanned": 25_000, "findings": small},
                    findings=few, seconds=0.4, summary=f"{small} warnings"),
    ]
    run = CheckRun(run_id=run_id, dataset="fixtures/datasets/many", contract=load_contract(ROOT / "contracts" /
                                                                                            "triage.yaml"),
                   splits=[SplitStats(split="train", file="train.jsonl", format="jsonl", rows=25_000, bytes=9000,
                                      sha256="cc" * 32)],
                   results=results, started_at=T0 - timedelta(hours=2), seconds=3.0, fingerprint="fp-many-1")
    record_check_run(run, 100, db)
    return run_id
