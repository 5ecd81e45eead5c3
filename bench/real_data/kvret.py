"""A second held-out pii precision set: the Stanford in-car dialogues (KVRET; Eric et al., 2017) as chat rows.

Why this corpus: gate's dialogue rules were written while reading Schema-Guided Dialogue; KVRET was written by other
crowd workers for another product (a car's assistant: navigation, calendar, weather). Its navigation dialogues hold
both kinds an address takes in dialogue: a place the assistant found ("Valero is 4 miles away at 200 Alester Ave")
and the driver's own places ("home", "my friend's house"), and its calendar dialogues hold people's names beside
times and rooms. Read from the copy in HLTCHKUST/Mem2Seq (MIT) at a pinned commit, dev and test splits (the train
file is not in the fetch tool's snapshot); nothing vendored.

    python bench/real_data/kvret.py --mirrors /work/.mirror -o /tmp/kvret
    gate check /tmp/kvret/data -c /tmp/kvret/contract.yaml --checks pii --db /tmp/kvret/gate.duckdb
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import holdout

REPO = "HLTCHKUST/Mem2Seq"
COMMIT = "4224ccf9e14956115cfdc98814d340d9bd7b953e"
FILES = ("data/KVR/kvret_dev_public.json", "data/KVR/kvret_test_public.json")
CONTRACT = holdout.CONTRACT.format(
    name="kvret-pii-holdout", extra="  task: {type: string, required: true}\n",
    description="KVRET in-car dialogues (dev and test) as chat rows, a held-out pii precision set.")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mirrors", type=Path, required=True, help="the fetch tool's mirror root (<owner>+<name>/repo)")
    ap.add_argument("-o", "--out", type=Path, required=True)
    args = ap.parse_args()
    read = holdout.pinned_reader(args.mirrors, REPO, COMMIT)
    rows = []
    for path in FILES:
        split = path.rsplit("_", 2)[-2]
        for n, d in enumerate(json.loads(read(path))):
            turns = [t for t in d["dialogue"] if t["data"].get("utterance", "").strip()]
            if not turns:
                continue
            rows.append({"id": f"kvret-{split}-{n:03d}", "task": d["scenario"]["task"]["intent"], "messages": [
                {"role": "user" if t["turn"] == "driver" else "assistant", "content": t["data"]["utterance"]}
                for t in turns]})
    holdout.write_chat_set(args.out, rows, CONTRACT)
    print(f"{len(rows)} dialogues -> {args.out}/data/train.jsonl")


if __name__ == "__main__":
    main()
