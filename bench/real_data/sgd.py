"""A held-out pii precision set: Schema-Guided Dialogue (Rastogi et al., 2020) as chat rows.

Why this corpus: dialogue and tool-use data is made of listings (the address and number of the restaurant, salon,
hotel or home for rent a service returned) and user requests (a ride's destination, an address to share with a
friend); none of the real-data mix's sources has them, and gate's pii rules were not written against it. Licence:
CC BY-SA 4.0 (the repository's LICENSE.txt); read from a git mirror at a pinned commit, nothing vendored.

    python bench/real_data/sgd.py --mirrors /work/.mirror -o /tmp/sgd --rows 1200
    gate check /tmp/sgd/data -c /tmp/sgd/contract.yaml --checks pii --db /tmp/sgd/gate.duckdb

`--split train` draws the same number of dialogues from the train split instead: a second held-out set, for rules
written while reading the dev/test one (`/tmp/sgd-train`, ids `sgd-train-...`); `--seed 8 --exclude
/tmp/sgd-train/data/train.jsonl` a third, none of whose dialogues is in the second.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import holdout

REPO = "google-research-datasets/dstc8-schema-guided-dialogue"
COMMIT = "e852981ae34990f4358979625854259302feaa78"
#: The dialogue files read: those the fetch tool's snapshot holds (it leaves out a repository's largest blobs).
#: A git blob is named by its content's hash, so the commit pins the bytes.
FILES = ([f"dev/dialogues_{i:03d}.json" for i in (*range(1, 15), 16, 19, 20)]
         + [f"test/dialogues_{i:03d}.json" for i in (*range(1, 12), 13, 14, 15, 17, 18, 20, 21, 24, 25, 30, 32, 33,
                                                      34)])
#: The train split's files the snapshot holds (97 of its 127).
TRAIN_FILES = [f"train/dialogues_{i:03d}.json" for i in (
    *range(1, 37), *range(38, 52), 57, 59, 61, 62, 63, 64, 65, 67, 69, *range(86, 93), *range(95, 104),
    *range(105, 117), *range(119, 128))]
CONTRACT = holdout.CONTRACT.format(
    name="sgd-pii-holdout", extra="",
    description="Schema-Guided Dialogue (dev and test splits) as chat rows, a held-out pii precision set.")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mirrors", type=Path, required=True, help="the fetch tool's mirror root (<owner>+<name>/repo)")
    ap.add_argument("-o", "--out", type=Path, required=True)
    ap.add_argument("--rows", type=int, default=1200, help="dialogues sampled (seed 7) from dev and test")
    ap.add_argument("--split", choices=("devtest", "train"), default="devtest",
                    help="dev and test (the first held-out set), or train (the second)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--exclude", type=Path, help="a train.jsonl this script wrote: its dialogues are not drawn")
    args = ap.parse_args()
    read = holdout.pinned_reader(args.mirrors, REPO, COMMIT)
    rows = []
    for path in FILES if args.split == "devtest" else TRAIN_FILES:
        data = json.loads(read(path))
        for d in data:
            rows.append({"id": f"sgd-{path.split('/')[0]}-{d['dialogue_id']}", "messages": [
                {"role": "user" if t["speaker"] == "USER" else "assistant", "content": t["utterance"]}
                for t in d["turns"]]})
    if args.exclude:
        taken = {json.loads(line)["id"] for line in args.exclude.read_text(encoding="utf-8").splitlines()}
        rows = [r for r in rows if r["id"] not in taken]
    random.seed(args.seed)
    sample = random.sample(rows, min(args.rows, len(rows)))
    holdout.write_chat_set(args.out, sample, CONTRACT)
    print(f"{len(sample)} of {len(rows)} dialogues -> {args.out}/data/train.jsonl")


if __name__ == "__main__":
    main()
