"""Read-only queries behind the evidence people look at: the data-check status of each release, a check run's
length statistics and duplicate clusters, and the per-item answers of a decision's baseline and candidate.

Why here and not in the dashboard: SQL lives in gate/store, and the dashboard, the static release report and the
static check-run page are faces that only present what these functions return. Every function takes an open
(read-only) DuckDB connection, or None when there is no record yet, and returns plain dicts. Quoted text (model
answers, explanations, snippets) is returned as stored; the faces redact it on the way out.
"""

from __future__ import annotations

import json
from typing import Any

STATUS_ORDER = ("fail", "not in record", "pass")  # the worst of a release's data checks names its status


def _tables(con: Any | None) -> set[str]:
    if con is None:
        return set()
    return {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}


def _json(v: Any) -> Any:
    if isinstance(v, str):
        try:
            return json.loads(v)
        except ValueError:
            return v
    return v


def release_data_check_status(con: Any | None, releases: list[dict[str, Any]]) -> dict[str, str]:
    """release_id -> 'pass' | 'fail' | 'not in record' | 'none', from the verdicts the record holds *now* for the
    `gate check` runs each release declares (what `gate promote` reads), not from the copy frozen in the release.

    Why the worst one: a release whose training data failed one check must not read as a plain PROMOTE. 'none'
    means the release declares no data check at all, which is itself worth seeing on the home page.
    """
    have = _tables(con)
    if "releases" not in have or not releases:
        return {}
    ids = [r["release_id"] for r in releases]
    marks = ", ".join("?" * len(ids))
    declared: dict[str, list[str]] = {}
    for rid, checks in con.execute(f"SELECT release_id, data_checks FROM releases WHERE release_id IN ({marks})",
                                   ids).fetchall():
        runs = _json(checks) or []
        declared[rid] = [str(c.get("run_id") if isinstance(c, dict) else c) for c in runs if c]
    every = sorted({c for cs in declared.values() for c in cs})
    verdicts: dict[str, str] = {}
    if every and "runs" in have:
        marks = ", ".join("?" * len(every))
        verdicts = dict(con.execute(f"SELECT run_id, verdict FROM runs WHERE run_id IN ({marks})", every).fetchall())
    out: dict[str, str] = {}
    for rid in ids:
        runs = declared.get(rid, [])
        if not runs:
            out[rid] = "none"
            continue
        seen = {verdicts.get(c) or "not in record" for c in runs}
        seen = {s if s in STATUS_ORDER else "fail" for s in seen}  # an error verdict is not a pass
        out[rid] = next(s for s in STATUS_ORDER if s in seen)
    return out


def check_run_details(con: Any | None, run_id: str) -> dict[str, Any]:
    """check name -> the details JSON its check stored (length percentiles and token histogram, dedup counts)."""
    if "check_results" not in _tables(con):
        return {}
    return {name: _json(d) or {} for name, d in con.execute(
        "SELECT name, details FROM check_results WHERE run_id = ? ORDER BY rowid", [run_id]).fetchall()}


def duplicate_clusters(con: Any | None, run_id: str, *, limit: int = 200, members: int = 20) -> list[dict[str, Any]]:
    """The duplicate clusters of one check run, largest first: each with its check, size, kept row and up to
    `members` member rows (split, line, id, similarity, stored snippet)."""
    if "findings" not in _tables(con):
        return []
    cur = con.execute(
        """WITH c AS (
               SELECT "check", cluster_id, max(cluster_size) AS size, count(*) AS flagged
               FROM findings WHERE run_id = ? AND cluster_id IS NOT NULL GROUP BY "check", cluster_id
               ORDER BY size DESC, "check", cluster_id LIMIT ?)
           SELECT c."check", c.cluster_id, c.size, c.flagged, f.split, f."row", f.row_id, f.partner_id, f.score,
                  f.snippet,
                  row_number() OVER (PARTITION BY c."check", c.cluster_id ORDER BY f.split, f."row") AS k
           FROM c JOIN findings f ON f.run_id = ? AND f."check" = c."check" AND f.cluster_id = c.cluster_id
           QUALIFY k <= ?
           ORDER BY c.size DESC, c."check", c.cluster_id, f.split, f."row" """, [run_id, limit, run_id, members])
    out: list[dict[str, Any]] = []
    index: dict[tuple[str, str], dict[str, Any]] = {}
    for check, cid, size, flagged, split, row, row_id, partner, score, snippet, _k in cur.fetchall():
        key = (check, cid)
        if key not in index:
            index[key] = {"check": check, "cluster_id": cid, "size": size, "flagged": flagged, "members": []}
            out.append(index[key])
        index[key]["members"].append({"split": split, "row": row, "row_id": row_id, "partner_id": partner,
                                      "score": score, "snippet": snippet})
    return out


def item_answers(con: Any | None, decision_id: str, *, limit: int = 5000) -> list[dict[str, Any]]:
    """Per item of a compare decision: suite, id, category, prompt hash, the masked prompt (`prompt_masked`, None for
    runs recorded before it was stored), the baseline's and the candidate's answer (epoch 0) and, per scorer.key,
    both values and explanations with `changed` set where they differ.

    Why epoch 0 only: the page shows what a reviewer reads side by side; repeated epochs are in the score tables.
    Why the column is probed: the dashboard opens the record read-only, so an older file is never migrated by it.
    """
    have = _tables(con)
    if not {"decisions", "samples"} <= have:
        return []
    runs = con.execute("SELECT baseline_run, candidate_run FROM decisions WHERE decision_id = ?",
                       [decision_id]).fetchall()
    if not runs or not runs[0][0] or not runs[0][1]:
        return []
    base_run, cand_run = runs[0]
    masked = bool(con.execute("SELECT 1 FROM information_schema.columns WHERE table_name = 'samples' "
                              "AND column_name = 'prompt_masked'").fetchall())
    prompt_col = "prompt_masked" if masked else "NULL"
    items: dict[tuple[str, str], dict[str, Any]] = {}
    for run, side in ((base_run, "baseline"), (cand_run, "candidate")):
        for suite, item, cat, ph, pm, output, error in con.execute(
                f"SELECT suite, item_id, category, prompt_hash, {prompt_col}, output, error FROM samples "
                "WHERE run_id = ? AND coalesce(epoch, 0) = 0 ORDER BY suite, item_id LIMIT ?",
                [run, limit]).fetchall():
            it = items.setdefault((suite, item), {"suite": suite, "item_id": item, "category": cat,
                                                  "prompt_hash": ph, "prompt_masked": None, "baseline": None,
                                                  "candidate": None, "baseline_error": None,
                                                  "candidate_error": None, "scores": {}})
            it["prompt_masked"] = it["prompt_masked"] or pm  # both runs were asked the same (equal hashes)
            it[side], it[f"{side}_error"] = output, error
    if "scores" in have:
        for run, side in ((base_run, "baseline"), (cand_run, "candidate")):
            for suite, item, scorer, key, value, expl in con.execute(
                    'SELECT suite, item_id, scorer, "key", value, explanation FROM scores '
                    "WHERE run_id = ? AND coalesce(epoch, 0) = 0 ORDER BY scorer, \"key\"", [run]).fetchall():
                it = items.get((suite, item))
                if it is None:
                    continue
                s = it["scores"].setdefault(f"{scorer}.{key}", {"baseline": None, "candidate": None,
                                                                "baseline_explanation": None,
                                                                "candidate_explanation": None})
                s[side], s[f"{side}_explanation"] = value, expl
    out = []
    for it in items.values():
        changed = False
        for s in it["scores"].values():
            s["changed"] = s["baseline"] != s["candidate"]
            changed = changed or s["changed"]
        it["changed"] = changed
        out.append(it)
    return out
