"""Convert a small mix of public instruction sets into chat rows for `gate check` (issue 29, the hand-labelled
precision sample in bench/results/real_data_sample.md).

Reads the sets from git mirrors (nothing is vendored or committed): GSM8K (openai/grade-school-math, MIT) train
rows as training data and its test rows as the evaluation split, Code Alpaca (sahil280114/codealpaca,
`code_alpaca_2k.json` and `new_codealpaca.json`). Every `--every`-th row of each set is taken, so the sample is
spread over the whole file and the same on every run.

    python bench/real_data_sample.py --gsm8k MIRROR --codealpaca MIRROR -o /tmp/realdata
    gate contract init /tmp/realdata -o /tmp/realdata.yaml && gate check /tmp/realdata -c /tmp/realdata.yaml
"""

from __future__ import annotations

import argparse
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path


def _git_show(mirror: Path, path: str) -> str:
    """The file at HEAD of a bare mirror (the fetch tool's layout: no work tree)."""
    return subprocess.run(["git", "--git-dir", str(mirror), "show", f"HEAD:{path}"], check=True,
                          capture_output=True, text=True).stdout


def _gsm8k(mirror: Path, split: str) -> Iterator[tuple[str, str]]:
    for line in _git_show(mirror, f"grade_school_math/data/{split}.jsonl").splitlines():
        row = json.loads(line)
        yield row["question"], row["answer"]


def _alpaca(mirror: Path, name: str) -> Iterator[tuple[str, str]]:
    for row in json.loads(_git_show(mirror, f"data/{name}")):
        prompt = row["instruction"] + (f"\n\n{row['input']}" if row.get("input") else "")
        yield prompt, row["output"]


def _rows(pairs: Iterator[tuple[str, str]], source: str, every: int, limit: int) -> list[dict]:
    out = []
    for i, (prompt, answer) in enumerate(pairs):
        if i % every == 0 and len(out) < limit:
            out.append({"id": f"{source}-{i:06d}", "source": source,
                        "messages": [{"role": "user", "content": prompt},
                                     {"role": "assistant", "content": answer}]})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gsm8k", type=Path, required=True, help="git dir of openai/grade-school-math")
    ap.add_argument("--codealpaca", type=Path, required=True, help="git dir of sahil280114/codealpaca")
    ap.add_argument("-o", "--out", type=Path, required=True)
    ap.add_argument("--per-set", type=int, default=800, help="training rows per source set")
    ap.add_argument("--test", type=int, default=200, help="GSM8K test rows (the evaluation split)")
    args = ap.parse_args()
    train = (_rows(_gsm8k(args.gsm8k, "train"), "gsm8k", 9, args.per_set)
             + _rows(_alpaca(args.codealpaca, "code_alpaca_2k.json"), "code_alpaca", 2, args.per_set)
             + _rows(_alpaca(args.codealpaca, "new_codealpaca.json"), "new_codealpaca", 5, args.per_set))
    test = _rows(_gsm8k(args.gsm8k, "test"), "gsm8k_test", 6, args.test)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, rows in (("train", train), ("test", test)):
        with (args.out / f"{name}.jsonl").open("w", encoding="utf-8") as fh:
            fh.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    print(f"{len(train)} training rows, {len(test)} test rows in {args.out}")


if __name__ == "__main__":
    main()
