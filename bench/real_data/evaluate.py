"""Score a `gate check` run on the real-data benchmark (issue 29): recall of the planted faults, a stratified
sample of findings to label by hand, precision per check on the labels, and the cost from the report.

Why a separate step: the labels are a person's judgement of each finding (bench/real_data/labels.jsonl, committed);
this script only joins them with the run, so the numbers can be recomputed from the record.

    python bench/real_data/evaluate.py sample --out-dir .cache/real_data --db .cache/real_data/gate.duckdb > sample.md
    python bench/real_data/evaluate.py score --out-dir .cache/real_data --db .cache/real_data/gate.duckdb \
        --report /tmp/rd_report/report.json --time-log /tmp/rd_check.err
"""

from __future__ import annotations

import argparse
import json
import random
import re
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
# which check must flag a planted fault of each kind
KIND_CHECK = {"pii": ("pii",), "secret": ("secret",), "contamination": ("contamination",),
              "contract": ("contract",), "exact_duplicate": ("exact_duplicate",),
              "near_duplicate": ("near_duplicate", "exact_duplicate")}


def findings(db: Path) -> list[dict]:
    """Every finding of the latest run in the DuckDB record (report.json caps the examples per check)."""
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    run_id = con.execute("SELECT run_id FROM runs ORDER BY started_at DESC LIMIT 1").fetchone()[0]
    cur = con.execute('SELECT "check", split, "row", field, rule, severity, message, snippet, row_id, partner_id, '
                      "cluster_id FROM findings WHERE run_id = ?", [run_id])
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]


def key(f: dict) -> str:
    """A stable name of one finding, for the labels file."""
    return f"{f['check']}|{f['rule']}|{f['row_id']}|{f['field']}|{f['snippet']}"


def partner(f: dict) -> str | None:
    """The other row of a pairwise finding: near_duplicate records it, exact_duplicate names it in its message."""
    m = re.search(r"\(id ([^)]+)\)", f["message"] or "")
    return f.get("partner_id") or (m.group(1) if m else None)


def recall(found: list[dict], planted: list[dict]) -> dict[str, dict]:
    by_row: dict[str, list[dict]] = defaultdict(list)
    for f in found:
        f["partner_id"] = partner(f)
        by_row[f["row_id"]].append(f)
        if f["partner_id"]:
            by_row[f["partner_id"]].append(f)
    out: dict[str, dict] = {}
    for p in planted:
        checks = KIND_CHECK[p["kind"]]
        hits = [f for f in by_row.get(p["id"], []) if f["check"] in checks]
        if p["kind"].endswith("duplicate"):  # the pair: the copy and its source, either way round
            pair = {p["id"], p["detail"]}
            hits = [f for f in hits if {f["row_id"], f.get("partner_id")} <= pair or f.get("cluster_id")]
        r = out.setdefault(p["kind"], {"planted": 0, "found": 0, "missed": []})
        r["planted"] += 1
        if hits:
            r["found"] += 1
        else:
            r["missed"].append(p)
    for r in out.values():
        r["recall"] = round(r["found"] / r["planted"], 3)
    return out


def sample(found: list[dict], per_check: int, seed: int) -> list[dict]:
    """Up to `per_check` findings of each check, spread over its rules (round robin), in a fixed random order."""
    by_check: dict[str, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for f in found:
        by_check[f["check"]][f["rule"] or ""].append(f)
    for rules in by_check.values():
        for pool in rules.values():
            pool.sort(key=key)  # the record's order is not stable across runs
    out = []
    for check in sorted(by_check):
        rng = random.Random(f"{seed}:{check}")  # per check: one check's findings do not move another's sample
        pools = [rng.sample(v, len(v)) for _, v in sorted(by_check[check].items())]
        taken: list[dict] = []
        while len(taken) < per_check and any(pools):
            for pool in pools:
                if pool and len(taken) < per_check:
                    taken.append(pool.pop())
        out += taken
    return out


def _rows(path: Path) -> dict[str, dict]:
    return {r["id"]: r for r in map(json.loads, path.read_text(encoding="utf-8").splitlines()) if "id" in r}


def cmd_sample(args: argparse.Namespace) -> None:
    rows = _rows(args.out_dir / "data" / "train.jsonl")
    for f in sample(findings(args.db), args.per_check, args.seed):
        row = rows.get(f["row_id"], {})
        text = json.dumps(row.get("messages", []), ensure_ascii=False)
        print(json.dumps({"key": key(f), "message": f["message"], "partner": f["partner_id"],
                          "row": text[: args.context]}, ensure_ascii=False))


def cmd_score(args: argparse.Namespace) -> None:
    found = findings(args.db)
    planted = [json.loads(x) for x in (args.out_dir / "planted.jsonl").read_text().splitlines()]
    labels = [json.loads(x) for x in (HERE / "labels.jsonl").read_text().splitlines()] if (
        HERE / "labels.jsonl").exists() else []
    keys = {key(f) for f in found}
    prec: dict[str, dict] = defaultdict(lambda: {"labelled": 0, "true": 0, "false": 0, "not_in_run": 0})
    for lab in labels:
        p = prec[lab["key"].split("|", 1)[0]]
        if lab["key"] not in keys:
            p["not_in_run"] += 1
            continue
        p["labelled"] += 1
        p["true" if lab["label"] else "false"] += 1
    for p in prec.values():
        p["precision"] = round(p["true"] / p["labelled"], 3) if p["labelled"] else None
    counts: dict[str, int] = defaultdict(int)
    by_rule: dict[tuple[str, str], int] = defaultdict(int)
    for f in found:
        counts[f["check"]] += 1
        by_rule[(f["check"], f["rule"])] += 1
    # the sample is stratified by rule (every rule seen), so the check's precision is also estimated with each
    # rule weighted by its share of the check's findings
    per_rule: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for lab in labels:
        if lab["key"] in keys:
            check, rule = lab["key"].split("|")[:2]
            per_rule[(check, rule)][0] += 1
            per_rule[(check, rule)][1] += bool(lab["label"])
    for check, p in prec.items():
        rules = [(n, per_rule[(c, r)]) for (c, r), n in by_rule.items() if c == check and per_rule[(c, r)][0]]
        total = sum(n for n, _ in rules)
        p["precision_weighted_by_rule"] = round(sum(n * t / k for n, (k, t) in rules) / total, 3) if total else None
        p["by_rule"] = {r: {"findings": n, "labelled": per_rule[(c, r)][0], "true": per_rule[(c, r)][1]}
                        for (c, r), n in sorted(by_rule.items()) if c == check}
    out = {"findings": dict(counts), "recall": recall(found, planted), "precision": dict(prec)}
    if args.report:
        rep = json.loads(args.report.read_text())
        rows = sum(s["rows"] for s in rep["dataset"]["splits"])
        out["rows"], out["wall_seconds"] = rows, rep["seconds"]
        out["checks"] = {c["name"]: {"seconds": c["seconds"], "status": c["status"], "counts": c["counts"]}
                         for c in rep["checks"]}
        out["timings"] = rep.get("timings")
    if args.time_log:
        log = args.time_log.read_text()
        num = lambda pat: float(re.search(pat, log).group(1))  # noqa: E731
        cpu = num(r"User time \(seconds\): ([\d.]+)") + num(r"System time \(seconds\): ([\d.]+)")
        out["cpu_seconds"], out["peak_rss_mb"] = round(cpu, 1), round(num(r"Maximum resident .*: (\d+)") / 1024)
        if args.report:
            out["rows_per_cpu_second"] = round(out["rows"] / cpu, 1)
    print(json.dumps(out, indent=1, default=str))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("sample", "score"):
        p = sub.add_parser(name)
        p.add_argument("--out-dir", type=Path, default=Path(".cache/real_data"))
        p.add_argument("--db", type=Path, required=True)
        if name == "sample":
            p.add_argument("--per-check", type=int, default=40)
            p.add_argument("--seed", type=int, default=29)
            p.add_argument("--context", type=int, default=1500)
        else:
            p.add_argument("--report", type=Path)
            p.add_argument("--time-log", type=Path, help="stderr of /usr/bin/time -v around the check")
    args = ap.parse_args()
    (cmd_sample if args.cmd == "sample" else cmd_score)(args)


if __name__ == "__main__":
    main()
