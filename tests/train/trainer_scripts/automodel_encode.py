"""Runs inside .venv-nemo: encodes rows (nemo-automodel export format) with AutoModel 0.7's own ChatDataset and
prints, per row, the token ids and which of them are trained (labels realigned to the ids they predict).
Usage: python automodel_encode.py TOKENIZER_DIR ROWS.jsonl [CHAT_TEMPLATE]  -> one JSON line per row
(CHAT_TEMPLATE: the file a nemo-automodel export writes, as the recipe's dataset.chat_template)"""

import json
import sys

from nemo_automodel.components.datasets.llm.chat_dataset import ChatDataset
from transformers import AutoTokenizer

tok = AutoTokenizer.from_pretrained(sys.argv[1])
ds = ChatDataset(sys.argv[2], tok, split="train", chat_template=sys.argv[3] if len(sys.argv) > 3 else None)
for i in range(len(ds)):
    row = ds.dataset[i]
    try:
        enc = ds[i]
    except Exception as exc:  # a row AutoModel refuses is a finding, reported per row
        print(json.dumps({"id": row.get("id"), "error": f"{type(exc).__name__}: {str(exc).splitlines()[0]}"[:300]}))
        continue
    ids, labels = list(enc["input_ids"]), list(enc["labels"])
    print(json.dumps({"id": row.get("id"), "ids": ids, "labels": labels, "keys": sorted(enc)}))
