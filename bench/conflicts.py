"""Benchmark: `conflicting_answers` on a public instruction dataset with injected label flips (issue 34 part 1).

Data: Code Alpaca (`sahil280114/codealpaca`, `data/new_codealpaca.json`, 4,535 rows), read from the local mirror
(`fetch github:sahil280114/codealpaca`; Stanford Alpaca's `alpaca_data.json` is not in the mirror: large files are
left out). Each row becomes a chat row: user = instruction (+ input), assistant = output. No system prompt and
free-text answers, so the check compares answers by word 2-gram Jaccard (`answer_threshold`).

Method: run the check on the data as published (its own near-duplicate prompts already disagree: those pairs are
the baseline); then flip the labels of a seeded share of rows (`--flip-rate`: the answer is replaced by the answer of
another random row) and run again. Scored on the flipped rows that have a near-duplicate prompt (a member of a
prompt cluster at `prompt_threshold`): recall = those that sit in a reported pair; precision = reported pairs that
hold a flipped row / reported pairs, both over all pairs and over the pairs new after the flips.

    .venv/bin/python bench/conflicts.py [--source codealpaca] [--flip-rates 0.05,0.2] [--seed 7]
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: name -> (mirror git dir, file in it, answer key); the mirror holds what `fetch github:<owner>/<name>` brought
SOURCES = {
    "codealpaca": (Path("/work/.mirror/sahil280114+codealpaca/repo"), "data/new_codealpaca.json", "output"),
    "codealpaca-2k": (Path("/work/.mirror/sahil280114+codealpaca/repo"), "data/code_alpaca_2k.json", "output"),
}
CONTRACT = {"name": "alpaca", "version": "1", "messages": {"roles": ["user", "assistant"]}}


def load_source(name: str, rows: int) -> list[dict[str, Any]]:
    mirror, file, answer = SOURCES[name]
    raw = subprocess.run(["git", "--git-dir", str(mirror), "show", f"HEAD:{file}"], check=True,
                         capture_output=True).stdout
    data = json.loads(raw)[:rows]
    return [{"id": f"row-{i}", "messages": [
        {"role": "user", "content": d["instruction"] + ("\n" + d["input"] if d.get("input") else "")},
        {"role": "assistant", "content": d[answer]}]} for i, d in enumerate(data)]


def run_check(rows: list[dict[str, Any]],
              contract: Any) -> tuple[set[tuple[int, int]], set[int], dict[str, int], float]:
    """(reported pairs as row indices, rows in prompt clusters, counts, CPU seconds) of the check over `rows`."""
    from gate.data.base import Batch, cpu_seconds
    from gate.data.checks.conflicting_answers import ConflictingAnswersCheck

    t0 = cpu_seconds()
    check = ConflictingAnswersCheck(contract)
    for s in range(0, len(rows), 5000):
        check.reduce(check.map(Batch("train", "train.jsonl", [(i + 1, r) for i, r in
                                                              enumerate(rows[s:s + 5000], start=s)])))
    clustered: set[int] = set()
    groups = check._groups

    def spy() -> list[tuple[int, ...]]:
        found = groups()
        for g in found:
            clustered.update(check._keys[p][1] - 1 for p in g)
        return found

    check._groups = spy  # type: ignore[method-assign]
    check.finish()
    pairs = {(f.partner_row - 1, f.row - 1) for f in check.findings if f.row is not None and f.partner_row}
    return pairs, clustered, dict(check.counts), cpu_seconds() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", choices=sorted(SOURCES), default="codealpaca")
    ap.add_argument("--rows", type=int, default=10**9)
    ap.add_argument("--flip-rates", default="0.05,0.2")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    import tempfile

    import yaml

    from gate.contract import load_contract

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "alpaca.yaml"
        path.write_text(yaml.safe_dump(CONTRACT))
        contract = load_contract(path)
    rows = load_source(args.source, args.rows)
    base_pairs, _, base_counts, base_cpu = run_check(rows, contract)
    results = [measure(rows, contract, base_pairs, float(rate), args.seed) for rate in args.flip_rates.split(",")]
    labels = hand_labels(args.source, base_pairs)
    res = {"dataset": f"sahil280114/codealpaca {SOURCES[args.source][1]}", "source": args.source, "rows": len(rows),
           "seed": args.seed, "prompt_threshold": 0.8, "answer_threshold": 0.5,
           "pairs_reported_before_flips": len(base_pairs), "base_counts": base_counts,
           "cpu_seconds_clean": round(base_cpu, 2), "runs": results, "hand_labels": labels,
           "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    out = ROOT / "bench" / "results"
    (out / "conflicts.json").write_text(json.dumps(res, indent=2) + "\n")
    (out / "conflicts.md").write_text(render_md(res))
    print(json.dumps(res, indent=2))


def measure(rows: list[dict[str, Any]], contract: Any, base_pairs: set[tuple[int, int]], rate: float,
            seed: int) -> dict[str, Any]:
    """One flip rate: flips, the check on the flipped data, recall and precision (see the module docstring)."""
    rng = random.Random(seed)
    flipped = set(rng.sample(range(len(rows)), int(len(rows) * rate)))
    noisy = list(rows)
    for i in sorted(flipped):
        j = rng.randrange(len(rows) - 1)
        j += j >= i
        noisy[i] = {**rows[i], "messages": [rows[i]["messages"][0],
                                            {"role": "assistant", "content": rows[j]["messages"][1]["content"]}]}
    pairs, clustered, counts, cpu = run_check(noisy, contract)
    eligible = flipped & clustered
    found = eligible & {i for p in pairs for i in p}
    with_flip = [p for p in pairs if p[0] in flipped or p[1] in flipped]
    new = pairs - base_pairs
    new_with_flip = [p for p in new if p[0] in flipped or p[1] in flipped]
    return {"flip_rate": rate, "flipped_rows": len(flipped), "rows_in_prompt_clusters": len(clustered),
            "flipped_with_near_duplicate_prompt": len(eligible), "flipped_found": len(found),
            "recall": round(len(found) / len(eligible), 4) if eligible else None,
            "pairs_reported_after_flips": len(pairs), "pairs_with_a_flipped_row": len(with_flip),
            "precision_all_pairs": round(len(with_flip) / len(pairs), 4) if pairs else None,
            "new_pairs": len(new), "precision_new_pairs": round(len(new_with_flip) / len(new), 4) if new else None,
            "templated_pairs_left_out": counts.get("templated_pairs", 0), "cpu_seconds": round(cpu, 2)}


LABELS = ROOT / "bench" / "conflicts_labels.jsonl"


def hand_labels(source: str, pairs: set[tuple[int, int]]) -> dict[str, Any]:
    """The published pairs as labelled by hand (bench/conflicts_labels.jsonl: each pair read in full, both programs
    run in the head on the prompt's input): which are labelled, which are not (a pair the labels do not know is
    reported as unlabelled, never guessed)."""
    labelled = {}
    for line in LABELS.read_text().splitlines() if LABELS.is_file() else []:
        d = json.loads(line)
        if d["source"] == source:
            labelled[tuple(d["rows"])] = d
    got = [labelled[p] for p in sorted(pairs) if p in labelled]
    counts: dict[str, int] = {}
    for d in got:
        counts[d["label"]] = counts.get(d["label"], 0) + 1
    return {"labelled": len(got), "unlabelled": len(pairs) - len(got), "counts": counts,
            "examples": [d for d in got if d["label"] != "equivalent"]}


def render_md(r: dict[str, Any]) -> str:
    lines = [
        "# `conflicting_answers` on Code Alpaca with injected label flips", "",
        f"`.venv/bin/python bench/conflicts.py --source {r['source']} --seed {r['seed']}` ({r['when']})", "",
        f"Data: {r['dataset']} ({r['rows']:,} rows), user = instruction + input, assistant = output; no system "
        "prompt. A flip replaces a row's answer by the answer of another random row (seeded). Defaults: "
        f"`prompt_threshold` {r['prompt_threshold']} (user turns and whole prompt, word 5-gram Jaccard), "
        f"`answer_threshold` {r['answer_threshold']} (word 2-gram Jaccard of the answers).", "",
        f"On the data as published the check reports {r['pairs_reported_before_flips']} pair(s): prompts that are "
        f"the same or near the same ({r['base_counts'].get('rows_in_prompt_clusters', 0)} rows in "
        f"{r['base_counts'].get('prompt_clusters', 0)} prompt clusters) whose code answers share under half their "
        "word 2-grams. Those are the dataset's own disagreements (two programs for one instruction), not flips.", "",
        "| flip rate | flipped rows | of them with a near-duplicate prompt | found (recall) | pairs reported | "
        "pairs holding a flipped row (precision) | new pairs (precision over them) |",
        "| --- | --- | --- | --- | --- | --- | --- |"]
    for x in r["runs"]:
        lines.append(f"| {x['flip_rate']:.0%} | {x['flipped_rows']:,} | {x['flipped_with_near_duplicate_prompt']} | "
                     f"{x['flipped_found']} ({x['recall']}) | {x['pairs_reported_after_flips']} | "
                     f"{x['pairs_with_a_flipped_row']} ({x['precision_all_pairs']}) | {x['new_pairs']} "
                     f"({x['precision_new_pairs']}) |")
    lines += ["", "Reading: recall is over the flipped rows the check can see; a flip on a row whose prompt has no "
              "near duplicate is invisible to it by construction (most rows here: the data set has few repeated "
              "instructions, so the counts are small). Precision over all pairs is diluted by the published "
              "disagreements above; the last column counts only the pairs that appeared with the flips. "
              f"CPU: {r['cpu_seconds_clean']} s for the published data.", ""]
    h = r.get("hand_labels") or {}
    if h.get("labelled"):
        c = h["counts"]
        lines += ["## The published pairs, labelled by hand", "",
                  f"{h['labelled']} of the {r['pairs_reported_before_flips']} pairs read in full "
                  f"({h['unlabelled']} unlabelled; labels in bench/conflicts_labels.jsonl). Every pair is one "
                  "request (\"Implement\" / \"Write\" / \"Design\" a function that ...) answered by two programs, so "
                  "by the check's definition (one input taught two outputs) every one is label noise a reviewer "
                  "should settle. Read by behaviour (what each program does on the prompt's input):", "",
                  "| label | pairs |", "| --- | --- |"]
        lines += [f"| {k} | {v} |" for k, v in sorted(c.items(), key=lambda kv: -kv[1])]
        lines += ["", *(f"- rows {d['rows'][0]} / {d['rows'][1]}: {d['label']}: {d['why']}" for d in h["examples"]),
                  "", "Reading: on code, the check finds two programs for one request, not two behaviours: "
                  f"{c.get('behaviour differs', 0)} of {h['labelled']} pairs compute another result on the given "
                  f"input, {c.get('latent defect', 0)} more hold a defect in one program that the given input does "
                  "not show, the rest are the same algorithm written twice. Whether two programs behave alike is "
                  "not decided by gate (that needs running them); a team that keeps several programs per request "
                  "on purpose sets `answer_threshold` lower or leaves the check out for that contract.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
