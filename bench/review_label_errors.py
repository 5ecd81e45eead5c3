"""Benchmark: `gate review`'s model queue against cleanlab's confident learning on injected label errors (issue 34).

Task: a finite label set a 135M model can answer, on public text nobody here wrote: which language a user message
is in, English or Chinese. English messages are Code Alpaca instructions (`sahil280114/codealpaca`,
`data/code_alpaca_2k.json`), Chinese ones BELLE's seed tasks (`LianjiaTech/BELLE`, `data/1.5M/zh_seed_tasks.json`),
read from the local mirrors (`fetch github:<owner>/<name>`). Each row: system prompt (answer with one word), the
message, and the gold label as the assistant turn. A seeded share of rows (`--flip-rate`) gets the other label.

Model: SmolLM2-135M-Instruct (the real pretrained model of `fixtures/build_real_model.py`), in-process (`--engine
embedded`), greedy, float32.

- gate review: `gate.review.queue.model_cases` (the code `gate review --model` runs): on this classification data
  the model's answer is the label it finds likeliest; rows whose gold it contradicts, ranked by log P(that label) -
  log P(gold).
- cleanlab 2.x: `cleanlab.rank.get_label_quality_scores` on the same model's probabilities of the two labels (the
  softmax of their log-likelihoods as continuations of the same prompt), lowest quality first; and
  `cleanlab.filter.find_label_issues` for the rows it flags at all.

Scored on precision at k (k = the number of flipped rows: of the first k rows listed, how many were flipped) and on
recall and precision of everything each one lists. CPU seconds are process time of this process (model included).

    .venv/bin/pip install cleanlab==2.9.0   # bench only, not a dependency of gate
    .venv/bin/python bench/review_label_errors.py [--rows 200] [--flip-rate 0.1] [--seed 7]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
MIRROR = Path("/work/.mirror")
SYSTEM = "Which language is the user's message written in? Answer with exactly one word: English or Chinese."
LABELS = ("English", "Chinese")
CONTRACT = "name: lang\nversion: '1'\nmessages: {roles: [system, user, assistant]}\noutput: {format: text}\n"


def _git(repo: str, path: str) -> str:
    git_dir = MIRROR / repo.replace("/", "+") / "repo"
    return subprocess.run(["git", "--git-dir", str(git_dir), "show", f"HEAD:{path}"], check=True,
                          capture_output=True, text=True).stdout


def texts(n: int, seed: int) -> list[tuple[str, str]]:
    """(text, true label): n/2 English and n/2 Chinese messages, short ones (<= 300 characters), shuffled."""
    en = [r["instruction"] for r in json.loads(_git("sahil280114/codealpaca", "data/code_alpaca_2k.json"))
          if 20 <= len(r["instruction"]) <= 300]
    zh = [json.loads(x)["instruction"] for x in _git("LianjiaTech/BELLE", "data/1.5M/zh_seed_tasks.json").splitlines()
          if x.strip()]
    zh = [t for t in zh if 8 <= len(t) <= 300]
    rng = random.Random(seed)
    out = [(t, "English") for t in rng.sample(en, n // 2)] + [(t, "Chinese") for t in rng.sample(zh, n - n // 2)]
    rng.shuffle(out)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=200)
    ap.add_argument("--flip-rate", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "review.md"))
    args = ap.parse_args()
    import cleanlab
    from cleanlab.filter import find_label_issues
    from cleanlab.rank import get_label_quality_scores

    from gate.contract import load_contract
    from gate.engines.embedded import EmbeddedEngine
    from gate.engines.types import Request
    from gate.review.queue import model_cases

    sys.path.insert(0, str(ROOT / "fixtures"))
    from build_real_model import build

    model = build()
    data = texts(args.rows, args.seed)
    rng = random.Random(args.seed + 1)
    flipped = set(rng.sample(range(len(data)), round(args.flip_rate * len(data))))
    rows, given = [], []
    for i, (text, true) in enumerate(data):
        label = LABELS[1 - LABELS.index(true)] if i in flipped else true
        given.append(LABELS.index(label))
        rows.append({"id": f"r{i:04d}", "messages": [{"role": "system", "content": SYSTEM},
                                                     {"role": "user", "content": text},
                                                     {"role": "assistant", "content": label}]})
    k = len(flipped)
    with tempfile.TemporaryDirectory() as tmp:
        ds = Path(tmp) / "ds"
        ds.mkdir()
        (ds / "train.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
        (Path(tmp) / "c.yaml").write_text(CONTRACT)
        contract = load_contract(Path(tmp) / "c.yaml")
        engine = EmbeddedEngine(model)
        engine.start()
        try:
            t0 = time.process_time()
            cases, asked, agreeing, errors = model_cases(str(ds), contract, engine, max_tokens=8)
            t_gate = time.process_time() - t0
            t0 = time.process_time()
            pairs = [(Request(messages=tuple(r["messages"][:2]), temperature=0.0, max_tokens=8, seed=0), lab)
                     for r in rows for lab in LABELS]
            lls = engine.loglikelihood(pairs)
            probs = []
            for i in range(len(rows)):
                a, b = lls[2 * i], lls[2 * i + 1]
                m = max(a, b)
                ea, eb = math.exp(a - m), math.exp(b - m)
                probs.append([ea / (ea + eb), eb / (ea + eb)])
            import numpy as np

            pred = np.array(probs)
            labels = np.array(given)
            quality = get_label_quality_scores(labels, pred)
            ranked = [int(i) for i in np.argsort(quality, kind="stable")]
            issues = [int(i) for i in np.flatnonzero(find_label_issues(labels, pred))]
            t_cl = time.process_time() - t0
        finally:
            engine.stop()
    gate_rank = [int(c.row_id[1:]) for c in cases]
    true_acc = sum(1 for i, (_, true) in enumerate(data) if int(np.argmax(pred[i])) == LABELS.index(true)) / len(data)

    def p_at(lst: list[int]) -> str:
        top = lst[:k]
        return f"{sum(i in flipped for i in top)}/{k}" + ("" if len(top) == k else f" (only {len(top)} listed)")

    def pr(lst: list[int]) -> str:
        hit = sum(i in flipped for i in lst)
        return f"{hit}/{k} recall, {hit}/{len(lst)} precision" if lst else f"0/{k} recall, nothing listed"

    margins = [c.margin for c in cases if c.margin is not None]
    lines = [
        "# gate review vs cleanlab on injected label errors",
        "",
        f"Command: `.venv/bin/python bench/review_label_errors.py --rows {args.rows} --flip-rate {args.flip_rate} "
        f"--seed {args.seed}` (cleanlab {cleanlab.__version__}; SmolLM2-135M-Instruct float32, embedded, greedy).",
        "",
        f"Data: {len(data)} public messages ({args.rows // 2} Code Alpaca instructions in English, "
        f"{args.rows - args.rows // 2} BELLE seed tasks in Chinese), task: say the language; {k} labels flipped "
        f"({args.flip_rate:.0%}, seed {args.seed}). The model's own accuracy on the true labels (argmax of the two "
        f"label probabilities): {true_acc:.1%}.",
        "",
        "| method | precision at k | everything it lists | CPU s |",
        "|---|---|---|---|",
        f"| gate review (likeliest label vs gold, ranked by log-likelihood margin) | {p_at(gate_rank)} | "
        f"{pr(gate_rank)} "
        f"| {t_gate:.1f} |",
        f"| cleanlab label quality (self-confidence), lowest first | {p_at(ranked)} | — | {t_cl:.1f} |",
        f"| cleanlab find_label_issues | — | {pr(issues)} | (same run) |",
        "",
        f"gate review asked {asked} rows: {agreeing} answers agree with their gold, {len(cases)} disagree "
        f"({len(margins)} with a margin), {len(errors)} engine errors. The flipped rows among the listed ones, by "
        f"rank: {[i + 1 for i, r in enumerate(gate_rank) if r in flipped][:40]}.",
        "",
        "Two labels, each given many times: `gate review` takes the classification path (the model's answer is "
        "the label it finds likeliest; generation would not do: SmolLM2-135M answers the message instead of naming "
        "its language). It lists every row whose likeliest label is not its gold, most confident first; cleanlab's "
        "`find_label_issues` lists fewer (per-class thresholds of the confident joint). Both read the same model's "
        "probabilities, so both are bounded by its accuracy on the task; on free-text and tool-call data, where "
        "there is no label set to give cleanlab, `gate review` compares the model's generated answer instead.",
        "",
    ]
    Path(args.out).write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
